package dev.affinity.bench.sim;

import dev.affinity.timer.Scheduler;
import java.time.Duration;
import java.util.PriorityQueue;

/**
 * Virtual time for the fleet simulator: a clock in microseconds that only moves when the event loop
 * moves it, and a {@link Scheduler} whose tasks run in (time, submission) order on the loop's
 * thread. Cancelled tasks are dropped lazily, but let go of what they would have run at once (a request's
 * timeout holds the request until it is due, hours later). Not thread-safe: the whole simulation is one
 * thread.
 */
public final class VirtualScheduler implements Scheduler {
  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private long nowUs;
  private long seq;
  private int live;

  private static final class Task implements Comparable<Task> {
    final long timeUs;
    final long seq;
    Runnable body;
    boolean cancelled;

    Task(long timeUs, long seq, Runnable body) {
      this.timeUs = timeUs;
      this.seq = seq;
      this.body = body;
    }

    @Override
    public int compareTo(Task o) {
      int c = Long.compare(timeUs, o.timeUs);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  /** Now, microseconds of virtual time since the simulation started. */
  public long nowMicros() {
    return nowUs;
  }

  /** Now, in nanoseconds (the routers' clock). */
  public long nowNanos() {
    return nowUs * 1000L;
  }

  /** Now, in milliseconds (request ids). */
  public long nowMillis() {
    return nowUs / 1000L;
  }

  /** Moves the clock forward to {@code timeUs}; never backwards. */
  public void advanceTo(long timeUs) {
    if (timeUs < nowUs) {
      throw new IllegalArgumentException("virtual time cannot go back from " + nowUs + " to " + timeUs + " µs");
    }
    nowUs = timeUs;
  }

  @Override
  public Runnable schedule(Runnable task, Duration delay) {
    long delayUs = Math.max(0, (delay.toNanos() + 999) / 1000);
    return at(nowUs + delayUs, task);
  }

  /** Schedules {@code task} at absolute virtual time {@code timeUs} (not before now). */
  public Runnable at(long timeUs, Runnable task) {
    Task t = new Task(Math.max(timeUs, nowUs), seq++, task);
    queue.add(t);
    live++;
    return () -> {
      if (!t.cancelled) {
        t.cancelled = true;
        t.body = null;
        live--;
      }
    };
  }

  /** When the next live task is due, or -1 when none is. */
  public long nextTaskMicros() {
    dropCancelled();
    return queue.isEmpty() ? -1 : queue.peek().timeUs;
  }

  /** Tasks scheduled and not cancelled or run yet. */
  public int pending() {
    return live;
  }

  /** Moves the clock to the next task's time and runs it; false when there is none. */
  public boolean runNext() {
    dropCancelled();
    Task t = queue.poll();
    if (t == null) {
      return false;
    }
    t.cancelled = true;
    live--;
    nowUs = Math.max(nowUs, t.timeUs);
    Runnable body = t.body;
    t.body = null;
    body.run();
    return true;
  }

  private void dropCancelled() {
    while (!queue.isEmpty() && queue.peek().cancelled) {
      queue.poll();
    }
  }
}
