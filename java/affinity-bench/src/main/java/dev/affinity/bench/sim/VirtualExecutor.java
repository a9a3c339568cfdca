package dev.affinity.bench.sim;

import dev.affinity.conversation.Fleet;
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
 * request holds on another executor. So every request or cancellation, on any executor of the fleet,
 * invalidates every executor's cached iteration end ({@link Epoch}).
 */
public final class VirtualExecutor implements Executor {
  private final String name;
  private final Fleet fleet;
  private final Executor delegate;
  private final VirtualScheduler clock;
  private final BiConsumer<VirtualExecutor, ExecutorResponse> observer;
  private final Epoch epoch;
  private long nextEnd;
  private boolean nextEndStale = true;
  private long nextEndEpoch = -1;
  /** Something happened (requests, cancellations, time) that may have made responses ready. */
  private boolean touched;

  /** Counts the requests and cancellations entering any executor of one fleet. */
  static final class Epoch {
    private long value;

    void bump() {
      value++;
    }
  }

  VirtualExecutor(String name, Fleet fleet, Executor delegate, VirtualScheduler clock, Epoch epoch,
      BiConsumer<VirtualExecutor, ExecutorResponse> observer) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    if (delegate.clockMode() != ClockMode.VIRTUAL) {
      throw new IllegalArgumentException("executor " + name + " must run on a virtual clock");
    }
    this.epoch = epoch;
    this.name = name;
    this.fleet = fleet;
    this.clock = clock;
    this.observer = observer;
  }

  public String name() {
    return name;
  }

  public Fleet fleet() {
    return fleet;
  }

  /** Brings the executor's clock to the simulation's now (running the iterations that end by then). */
  private void catchUp() {
    long now = clock.nowMicros();
    if (now > delegate.nowMicros()) {
      delegate.advanceTo(now);
    }
    nextEndStale = true;
    touched = true;
    epoch.bump();
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
    if (timeMicros > delegate.nowMicros()) {
      delegate.advanceTo(timeMicros);
    }
    nextEndStale = true;
    touched = true;
  }

  @Override
  public long nextIterationEndMicros() {
    if (nextEndStale || nextEndEpoch != epoch.value) {
      nextEnd = delegate.nextIterationEndMicros();
      nextEndStale = false;
      nextEndEpoch = epoch.value;
    }
    return nextEnd;
  }

  @Override
  public void shutdown() {
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
