package dev.affinity.bench.sim;

import dev.affinity.routing.Fleet;
import dev.affinity.executor.ClockMode;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.executor.KvEvent;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;

/**
 * A virtual-clock executor as the fleet simulator drives it: every request and cancellation enters
 * at the simulation's current time (the executor is first advanced to it), the next iteration end
 * is cached until something changes it, and every response taken from it is shown to an observer
 * (the run's metrics) before the worker sees it.
 *
 * <p>Executors of one process are not independent: a generation request frees the KV its context
 * request holds on another executor. So before any request or cancellation enters any executor of
 * the fleet, every executor is brought to the current virtual time (so that work such a change frees
 * starts now, not at an idle executor's stale clock), and every cached iteration end is invalidated
 * ({@link Timeline}).
 */
public final class VirtualExecutor implements Executor {
  private final String name;
  private final Fleet fleet;
  private final Executor delegate;
  private final VirtualScheduler clock;
  private final BiConsumer<VirtualExecutor, ExecutorResponse> observer;
  private final Timeline timeline;
  private long nextEnd;
  private boolean nextEndStale = true;
  private long nextEndEpoch = -1;
  /** The delegate's clock as far as this class has moved it (it only moves when we move it). */
  private long delegateNow;
  /** Something happened (requests, cancellations, time) that may have made responses ready. */
  private boolean touched;

  /** The executors of one fleet and a count of the changes made to any of them. */
  static final class Timeline {
    private final List<VirtualExecutor> members = new java.util.ArrayList<>();
    private long epoch;

    /** Brings every member to {@code nowUs} and invalidates every cached iteration end. */
    void beforeChange(long nowUs) {
      for (VirtualExecutor e : members) {
        e.syncTo(nowUs);
      }
      epoch++;
    }
  }

  VirtualExecutor(String name, Fleet fleet, Executor delegate, VirtualScheduler clock, Timeline timeline,
      BiConsumer<VirtualExecutor, ExecutorResponse> observer) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    if (delegate.clockMode() != ClockMode.VIRTUAL) {
      throw new IllegalArgumentException("executor " + name + " must run on a virtual clock");
    }
    this.timeline = timeline;
    this.delegateNow = delegate.nowMicros();
    this.name = name;
    this.fleet = fleet;
    this.clock = clock;
    this.observer = observer;
    timeline.members.add(this);
  }

  public String name() {
    return name;
  }

  public Fleet fleet() {
    return fleet;
  }

  /** Before a request or cancellation: the whole fleet to the simulation's now. */
  private void catchUp() {
    timeline.beforeChange(clock.nowMicros());
  }

  /** Runs the iterations that end by {@code nowUs} and sets the clock there (no-op when already there). */
  private void syncTo(long nowUs) {
    if (nowUs > delegateNow) {
      delegate.advanceTo(nowUs);
      delegateNow = nowUs;
      nextEndStale = true;
      touched = true;
    }
  }

  /** Whether responses may be ready; clears the flag. */
  boolean takeTouched() {
    boolean t = touched;
    touched = false;
    return t;
  }

  @Override
  public long enqueue(ExecutorRequest request) {
    catchUp();
    return delegate.enqueue(request);
  }

  @Override
  public long[] enqueueAll(List<ExecutorRequest> requests) {
    catchUp();
    return delegate.enqueueAll(requests);
  }

  @Override
  public void cancel(long requestId) {
    catchUp();
    delegate.cancel(requestId);
  }

  @Override
  public List<ExecutorResponse> awaitResponses(int max, Duration timeout) {
    List<ExecutorResponse> out = delegate.awaitResponses(max, Duration.ZERO);
    for (ExecutorResponse r : out) {
      observer.accept(this, r);
    }
    return out;
  }

  @Override
  public List<KvEvent> drainKvEvents(int max) {
    return delegate.drainKvEvents(max);
  }

  @Override
  public IterationStats iterationStats() {
    return delegate.iterationStats();
  }

  @Override
  public KvCacheStats kvCacheStats(int rank) {
    return delegate.kvCacheStats(rank);
  }

  @Override
  public int numRanks() {
    return delegate.numRanks();
  }

  @Override
  public int tokensPerBlock() {
    return delegate.tokensPerBlock();
  }

  @Override
  public String backend() {
    return delegate.backend();
  }

  @Override
  public String describe() {
    return delegate.describe();
  }

  @Override
  public ClockMode clockMode() {
    return ClockMode.VIRTUAL;
  }

  @Override
  public long nowMicros() {
    return delegate.nowMicros();
  }

  @Override
  public void advanceTo(long timeMicros) {
    if (timeMicros > delegateNow) {
      delegate.advanceTo(timeMicros);
      delegateNow = timeMicros;
    }
    nextEndStale = true;
    touched = true;
  }

  @Override
  public long nextIterationEndMicros() {
    if (nextEndStale || nextEndEpoch != timeline.epoch) {
      nextEnd = delegate.nextIterationEndMicros();
      nextEndStale = false;
      nextEndEpoch = timeline.epoch;
    }
    return nextEnd;
  }

  @Override
  public void shutdown() {
    timeline.epoch++;
    delegate.shutdown();
    nextEndStale = true;
    touched = true;
  }

  @Override
  public boolean isClosed() {
    return delegate.isClosed();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
