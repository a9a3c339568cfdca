package dev.affinity.timer;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** A {@link Scheduler} on one daemon thread of wall-clock time. */
public final class RealScheduler implements Scheduler, AutoCloseable {
  private final ScheduledExecutorService exec;

  public RealScheduler() {
    this("affinity-scheduler");
  }

  /** With its thread named {@code threadName}. */
  public RealScheduler(String threadName) {
    exec = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      return t;
    });
  }

  @Override
  public Runnable schedule(Runnable task, Duration delay) {
    ScheduledFuture<?> f = exec.schedule(task, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
    return () -> f.cancel(false);
  }

  @Override
  public void close() {
    exec.shutdownNow();
  }
}
