package dev.affinity.server.fleet;

import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.server.metrics.SharedKvMeters;
import dev.affinity.server.shared.SharedKvEvents;
import dev.affinity.server.shared.SharedLoads;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.util.Map;

/**
 * What a frontend shares with the others of its cluster through NATS ({@code affinity.shared_state}): the workers' KV
 * events ({@link SharedKvEvents}, on {@code /metrics}) and the routers' load view ({@link SharedLoads}, on the same
 * connection). Closed loads first (the others forget this frontend's load within {@link SharedLoads#EXPIRY}), then the
 * events (this frontend's drains are released: another frontend takes them over at once).
 */
record SharedState(SharedKvEvents kv, SharedLoads loads) implements AutoCloseable {

  /** Started when the configuration asks for it and a fleet has remote workers; else null (nothing to share). */
  static SharedState startIfConfigured(DisaggConfig config, MeterRegistry registry, Router ctx, Router gen)
      throws IOException {
    if (config.affinity().sharedState().isEmpty()
        || config.context().isEmbedded() && config.generation().isEmbedded()) {
      return null;
    }
    SharedKvEvents kv = SharedKvEvents.start(config.affinity().sharedState().get(),
        config.disaggCluster().map(DisaggConfig.DisaggClusterConfig::clusterName).orElse(""),
        config.internalRequestAuthKey());
    SharedKvMeters.register(registry, kv);
    return new SharedState(kv, kv.shareLoads(Map.of(Fleet.CONTEXT, ctx, Fleet.GENERATION, gen)));
  }

  @Override
  public void close() {
    loads.close();
    kv.close();
  }
}
