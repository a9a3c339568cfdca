package dev.affinity.routing;

import dev.affinity.config.SubagentScope;
import dev.affinity.kv.PrefixIndex;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalDouble;
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
 * @param softPlacementMargin {@code affinity.soft_placement_margin}: the deployment's soft first placement of
 *     sub-agents for the conversation-aware routers (a margin, or negative for off); empty: each router's default
 */
public record RouterContext(Fleet fleet, SubagentScope scope, LongSupplier nanoClock, PrefixIndex prefixIndex,
    Duration selectionTtl, int nodeId, OptionalDouble softPlacementMargin) {

  public static final Duration DEFAULT_TTL = Duration.ofSeconds(180);

  public RouterContext {
    Objects.requireNonNull(fleet, "fleet");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(nanoClock, "nanoClock");
    Objects.requireNonNull(prefixIndex, "prefixIndex");
    Objects.requireNonNull(selectionTtl, "selectionTtl");
    Objects.requireNonNull(softPlacementMargin, "softPlacementMargin");
  }

  /** Each router's own soft placement default. */
  public RouterContext(Fleet fleet, SubagentScope scope, LongSupplier nanoClock, PrefixIndex prefixIndex,
      Duration selectionTtl, int nodeId) {
    this(fleet, scope, nanoClock, prefixIndex, selectionTtl, nodeId, OptionalDouble.empty());
  }

  /**
   * The soft placement margin a conversation-aware router uses: its own {@code soft_placement_margin} argument, else
   * the deployment's, else {@code routerDefault}; negative means off.
   */
  public double softPlacementMargin(RouterArgs args, double routerDefault) {
    return args.has(SOFT_PLACEMENT_ARG) ? args.getMarginOrOff(SOFT_PLACEMENT_ARG)
        : softPlacementMargin.orElse(routerDefault);
  }

  /** The router argument that overrides {@code affinity.soft_placement_margin}. */
  public static final String SOFT_PLACEMENT_ARG = "soft_placement_margin";

  /** Wall-clock defaults for one fleet (tests and simple embeddings). */
  public static RouterContext of(Fleet fleet) {
    return new RouterContext(fleet, SubagentScope.CONTEXT, System::nanoTime, new PrefixIndex(1 << 20), DEFAULT_TTL, 0);
  }
}
