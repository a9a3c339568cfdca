package dev.affinity.timer;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** A {@link Scheduler} on one daemon thread of wall-clock time. */
public final class RealScheduler implements Scheduler, AutoCloseable {
  private final ScheduledExecutorService exec;

  public RealScheduler() {
    this("affinity-scheduler");
  }

  /** With its thread named {@code threadName}. */
  public RealScheduler(String threadName) {
    ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      return t;
    });
    // a cancelled timeout (most of them: a request's, once it is answered) leaves the queue at once instead of
    // staying there until its time, which for a busy frontend would be hundreds of thousands of dead entries
    e.setRemoveOnCancelPolicy(true);
    exec = e;
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
