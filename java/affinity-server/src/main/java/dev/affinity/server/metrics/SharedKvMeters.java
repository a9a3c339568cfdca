package dev.affinity.server.metrics;

import dev.affinity.server.shared.SharedKvEvents;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The shared KV events ({@code affinity.shared_state}) on {@code /metrics}: batches this frontend published as a
 * drain owner, failed to publish, applied from the stream and dropped from it (by reason), as counters; the workers
 * it drains now and whether its NATS connection is up, as gauges; per worker, the events applied, the lag from a batch's
 * publisher to this frontend's index (a timer with a histogram), and whether this frontend drains it.
 */
public final class SharedKvMeters {
  private SharedKvMeters() {
  }

  public static void register(MeterRegistry registry, SharedKvEvents shared) {
    FunctionCounter.builder("affinity_shared_kv_batches_published", shared, SharedKvEvents::published)
        .description("KV event batches this frontend drained as a worker's owner and published to the stream")
        .register(registry);
    FunctionCounter.builder("affinity_shared_kv_publish_failures", shared, SharedKvEvents::publishFailures)
        .description("Drained KV event batches that could not be published (NATS unavailable or refusing)")
        .register(registry);
    FunctionCounter.builder("affinity_shared_kv_batches_applied", shared, SharedKvEvents::applied)
        .description("KV event batches from the stream applied to a router").register(registry);
    for (SharedKvEvents.Rejection reason : SharedKvEvents.Rejection.values()) {
      FunctionCounter.builder("affinity_shared_kv_batches_rejected", shared, s -> s.rejected(reason))
          .description("KV event batches from the stream dropped: no worker header, a failed HMAC, an unparsable body")
          .tag("reason", reason.label()).register(registry);
    }
    Gauge.builder("affinity_shared_kv_drains_owned", shared, SharedKvEvents::drainsOwned)
        .description("Workers whose KV events this frontend drains now").register(registry);
    Gauge.builder("affinity_shared_kv_index_rebuild_seconds", shared,
            s -> s.replayMillis() < 0 ? Double.NaN : s.replayMillis() / 1000.0)
        .description("How long reading the retained stream took at start (the index rebuilt); NaN until done")
        .register(registry);
    Gauge.builder("affinity_shared_kv_connected", shared, s -> s.connected() ? 1 : 0)
        .description("1 while the NATS connection is up, 0 while it reconnects").register(registry);
    shared.observe(new PerWorker(registry, shared));
  }

  /** The per-worker meters, made at a worker's first batch (Micrometer keeps them; a worker is a few meters). */
  private static final class PerWorker implements SharedKvEvents.Observer {
    private final MeterRegistry registry;
    private final SharedKvEvents shared;
    private final Map<String, Meters> byWorker = new ConcurrentHashMap<>();

    private record Meters(Counter events, Timer lag) {
    }

    PerWorker(MeterRegistry registry, SharedKvEvents shared) {
      this.registry = registry;
      this.shared = shared;
    }

    @Override
    public void applied(String workerId, int events, long lagMicros) {
      Meters m = byWorker.computeIfAbsent(workerId, this::meters);
      m.events.increment(events);
      if (lagMicros >= 0) {
        m.lag.record(lagMicros, TimeUnit.MICROSECONDS);
      }
    }

    private Meters meters(String workerId) {
      Gauge.builder("affinity_shared_kv_drain_owner", shared, s -> s.drains(workerId) ? 1 : 0).tag("worker", workerId)
          .description("1 while this frontend drains the worker's /kv_cache_events (0: another does, or it publishes "
              + "its own)").register(registry);
      return new Meters(
          Counter.builder("affinity_shared_kv_events_applied").tag("worker", workerId)
              .description("KV events of the worker applied from the stream").register(registry),
          Timer.builder("affinity_shared_kv_lag").tag("worker", workerId).publishPercentileHistogram()
              .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofSeconds(10))
              .description("From a batch's publisher (a drain owner or the worker) to this frontend's index")
              .register(registry));
    }
  }
}
