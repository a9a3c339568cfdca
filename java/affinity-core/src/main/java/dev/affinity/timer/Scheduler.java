package dev.affinity.timer;

import java.time.Duration;

/**
 * Runs a task after a delay: wall-clock in the server ({@link RealScheduler}), virtual time in the
 * fleet simulator, so that the very same orchestration runs in both.
 */
@FunctionalInterface
public interface Scheduler {
  /** Schedules the task; the returned handle cancels it (idempotent). */
  Runnable schedule(Runnable task, Duration delay);
}
