package dev.affinity.server.worker;

import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.protocol.ProtocolCodec;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one poller of a worker's {@code POST /kv_cache_events}. The endpoint drains the worker's event
 * buffer, so polls never overlap (a poll asked for while one is in flight joins it) and nothing is
 * polled while no sink is registered (the events would be lost). Bad answers are logged (a warning on
 * the first of a run of failures) and never stop the schedule. The request runs on the worker's
 * connections; the answer is parsed and handed to the sink on the poller's own thread (the worker's
 * scheduler), one batch at a time, so that a large batch never holds up an event loop.
 */
final class KvEventPoller {
  private static final Logger LOG = LoggerFactory.getLogger(KvEventPoller.class);

  private final String workerId;
  private final Supplier<CompletableFuture<ControlExchange.Answer>> post;
  private final ProtocolCodec codec;
  private final ScheduledExecutorService scheduler;
  private final AtomicReference<CompletableFuture<Integer>> inFlight = new AtomicReference<>();
  private volatile Consumer<List<KvEvent>> sink;
  private volatile CompletableFuture<?> exchange;
  private ScheduledFuture<?> schedule; // guarded by this
  private boolean closed; // guarded by this
  private int failures; // touched by one poll at a time

  /** {@code post} sends one {@code POST /kv_cache_events} (with its timeout) and completes with the answer. */
  KvEventPoller(String workerId, Supplier<CompletableFuture<ControlExchange.Answer>> post, ProtocolCodec codec,
      ScheduledExecutorService scheduler) {
    this.workerId = workerId;
    this.post = post;
    this.codec = codec;
    this.scheduler = scheduler;
  }

  void sink(Consumer<List<KvEvent>> s) {
    sink = s;
  }

  /** (Re)starts the schedule: one poll every {@code interval} (fixed delay); still one poller. */
  synchronized void start(Duration interval) {
    Objects.requireNonNull(interval, "interval");
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("the polling interval must be positive, got " + interval);
    }
    if (closed) {
      throw new IllegalStateException("worker " + workerId + " is closed");
    }
    if (schedule != null) {
      schedule.cancel(false);
    }
    long nanos = interval.toNanos();
    schedule = scheduler.scheduleWithFixedDelay(this::tick, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  synchronized void stop() {
    if (schedule != null) {
      schedule.cancel(false);
      schedule = null;
    }
  }

  synchronized boolean isPolling() {
    return schedule != null;
  }

  synchronized void close() {
    closed = true;
    stop();
    CompletableFuture<?> e = exchange;
    if (e != null) {
      e.cancel(true);
    }
  }

  private void tick() {
    try {
      poll();
    } catch (RuntimeException e) { // never let the schedule die
      LOG.warn("worker {}: KV event poll could not start", workerId, e);
    }
  }

  /** Polls now, or joins the poll in flight; completes with the number of events handed to the sink. */
  CompletableFuture<Integer> poll() {
    Consumer<List<KvEvent>> target = sink;
    synchronized (this) {
      if (closed || target == null) {
        return CompletableFuture.completedFuture(0);
      }
    }
    CompletableFuture<Integer> mine = new CompletableFuture<>();
    CompletableFuture<Integer> running = inFlight.compareAndExchange(null, mine);
    if (running != null) {
      return running;
    }
    CompletableFuture<ControlExchange.Answer> f;
    try {
      f = post.get();
    } catch (RuntimeException e) {
      inFlight.set(null);
      mine.complete(0);
      throw e;
    }
    exchange = f;
    f.whenCompleteAsync((response, error) -> {
      int delivered = 0;
      try {
        delivered = handle(target, response, error);
      } finally {
        inFlight.set(null);
        mine.complete(delivered);
      }
    }, this::runHere);
    return mine;
  }

  /** On the scheduler's thread; inline once it is shut down (the worker is closing). */
  private void runHere(Runnable task) {
    try {
      scheduler.execute(task);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      task.run();
    }
  }

  private int handle(Consumer<List<KvEvent>> target, ControlExchange.Answer response, Throwable error) {
    List<KvEvent> events;
    try {
      if (error != null) {
        throw new IllegalStateException(Failures.of(error).message());
      }
      if (response.status() != 200) {
        throw new IllegalStateException("HTTP " + response.status() + ": "
            + Failures.errorMessage(response.status(), response.body(), codec));
      }
      events = TrtllmKvEventCodec.parse(response.body());  // read token by token: no tree of a long prefill's tokens
    } catch (RuntimeException e) {
      if (failures++ == 0) {
        LOG.warn("worker {}: bad /kv_cache_events answer (logged once per run of failures): {}", workerId,
            e.getMessage());
      } else {
        LOG.debug("worker {}: bad /kv_cache_events answer: {}", workerId, e.getMessage());
      }
      return 0;
    }
    if (failures > 0) {
      LOG.info("worker {}: /kv_cache_events answers again after {} failed polls", workerId, failures);
      failures = 0;
    }
    if (events.isEmpty()) {
      return 0;
    }
    try {
      target.accept(events);
    } catch (RuntimeException e) {
      LOG.warn("worker {}: the KV event sink failed on {} events", workerId, events.size(), e);
    }
    return events.size();
  }
}
