package dev.affinity.server.fleet;

import dev.affinity.timer.Scheduler;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.internal.ThreadExecutorMap;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The orchestration's timers (a request's timeout) on the Netty event loop that schedules them, else on
 * {@code fallback}. A request runs on its connection's loop from its first byte to its answer, so its timeout
 * joins that loop's timer queue: no wake-up of another thread when it is set, none when it is cancelled (the
 * usual case), and it fires on the thread where the request's other callbacks run. A task scheduled from any
 * other thread (a test, an embedded worker's thread) goes to {@code fallback}.
 */
final class LoopScheduler implements Scheduler {
  private final Scheduler fallback;

  LoopScheduler(Scheduler fallback) {
    this.fallback = Objects.requireNonNull(fallback, "fallback");
  }

  @Override
  public Runnable schedule(Runnable task, Duration delay) {
    EventExecutor current = ThreadExecutorMap.currentExecutor();
    if (current instanceof EventLoop loop && !loop.isShuttingDown()) {
      try {
        ScheduledFuture<?> f = loop.schedule(task, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
      } catch (RejectedExecutionException e) {
        // shut down meanwhile: the fallback's thread runs it
      }
    }
    return fallback.schedule(task, delay);
  }
}
