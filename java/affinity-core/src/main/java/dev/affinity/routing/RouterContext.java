package dev.affinity.routing;

import dev.affinity.config.SubagentScope;
import dev.affinity.kv.PrefixIndex;
import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * What every router gets besides its arguments.
 *
 * @param fleet which fleet it routes
 * @param scope the sub-agent scope (generation routers pin affinity keys only with BOTH)
 * @param nanoClock monotonic time (virtual in the fleet simulator)
 * @param prefixIndex the fleet's prefix index (shared with the KV event feed)
 * @param selectionTtl selections never released expire after this
 * @param nodeId the frontend's node id (implicit conversation ids)
 */
public record RouterContext(Fleet fleet, SubagentScope scope, LongSupplier nanoClock, PrefixIndex prefixIndex,
    Duration selectionTtl, int nodeId) {

  public static final Duration DEFAULT_TTL = Duration.ofSeconds(180);

  public RouterContext {
    Objects.requireNonNull(fleet, "fleet");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(nanoClock, "nanoClock");
    Objects.requireNonNull(prefixIndex, "prefixIndex");
    Objects.requireNonNull(selectionTtl, "selectionTtl");
  }

  /** Wall-clock defaults for one fleet (tests and simple embeddings). */
  public static RouterContext of(Fleet fleet) {
    return new RouterContext(fleet, SubagentScope.CONTEXT, System::nanoTime, new PrefixIndex(1 << 20), DEFAULT_TTL, 0);
  }
}
