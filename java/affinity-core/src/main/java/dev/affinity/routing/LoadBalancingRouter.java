package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code load_balancing}: the least loaded worker, load being active requests or, with
 * {@code use_tokens: true}, active prompt tokens; ties broken round-robin; the least loaded rank on
 * workers with visible ranks.
 */
public final class LoadBalancingRouter extends AbstractRouter {
  private final boolean useTokens;

  public LoadBalancingRouter(RouterContext context, boolean useTokens) {
    super(context);
    this.useTokens = useTokens;
  }

  static LoadBalancingRouter create(RouterContext context, RouterArgs args) {
    boolean useTokens = args.getBoolean("use_tokens", false);
    args.done(RouterArgs.ADOPTED);
    return new LoadBalancingRouter(context, useTokens);
  }

  @Override
  public boolean usesKvEvents() {
    return false;
  }

  @Override
  public String type() {
    return "load_balancing";
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared) {
    long best = Long.MAX_VALUE;
    List<Worker> tied = new ArrayList<>();
    for (Worker w : candidates) {
      Load l = load(w.id());
      long v = useTokens ? l.tokens : l.requests;
      if (v < best) {
        best = v;
        tied.clear();
      }
      if (v == best) {
        tied.add(w);
      }
    }
    return new Choice(leastLoadedRank(pickTied(tied)), 0, 0, DecisionReason.LOAD);
  }
}
