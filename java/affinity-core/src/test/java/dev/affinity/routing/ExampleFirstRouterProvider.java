package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.List;

/**
 * A plug-in router for the tests, registered in META-INF/services: it takes the first live worker
 * after skipping {@code skip} of them. Shows how a custom policy reads flat arguments.
 */
public final class ExampleFirstRouterProvider implements RouterProvider {
  @Override
  public String type() {
    return "example_first";
  }

  @Override
  public Router create(RouterContext context, RouterArgs args) {
    int skip = args.getInt("skip", 0, 0, 1000);
    args.done(RouterArgs.ADOPTED);
    return new AbstractRouter(context) {
      @Override
      public String type() {
        return "example_first";
      }

      @Override
      protected Choice choose(RoutingRequest request, List<Worker> candidates, Object prepared) {
        Worker w = candidates.get(Math.min(skip, candidates.size() - 1));
        return new Choice(new Candidate(w, -1), 0, 0, DecisionReason.LOAD);
      }
    };
  }
}
