package dev.affinity.server.metrics;

import dev.affinity.server.shared.SharedKvEvents;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * The shared KV events ({@code affinity.shared_state}) on {@code /metrics}: batches this frontend published as a
 * drain owner, failed to publish, applied from the stream and dropped from it (by reason), as counters; the workers
 * it drains now and whether its NATS connection is up, as gauges.
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
  }
}
