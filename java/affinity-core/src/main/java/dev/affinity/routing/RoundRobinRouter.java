package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.List;

/**
 * {@code round_robin}: a counter over the worker list; an excluded or dead pick advances to the
 * next worker. On workers with visible ranks the least loaded rank is chosen. No arguments.
 */
public final class RoundRobinRouter extends AbstractRouter {
  private long counter;

  public RoundRobinRouter(RouterContext context) {
    super(context);
  }

  @Override
  public boolean usesKvEvents() {
    return false;
  }

  @Override
  public String type() {
    return "round_robin";
  }

  @Override
  protected Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared) {
    List<Worker> all = workers();
    Worker pick = null;
    for (int i = 0; i < all.size() && pick == null; i++) {
      Worker w = all.get((int) Math.floorMod(counter + i, (long) all.size()));
      if (candidates.contains(w)) {
        pick = w;
        counter = counter + i + 1;
      }
    }
    if (pick == null) {
      pick = candidates.get(0);
    }
    return new Choice(leastLoadedRank(pick), 0, 0, DecisionReason.ROUND_ROBIN);
  }
}
