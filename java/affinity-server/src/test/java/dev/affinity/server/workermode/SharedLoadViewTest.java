package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.routing.CandidateLoad;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One load view (issue 44 item 2) through the assembled frontend: two {@code affinity serve} frontends with
 * {@code affinity.shared_state} in front of the same {@code affinity worker} processes ({@link SharedKvCluster});
 * what one has in flight counts in the other's routers (context and generation) within a few report periods, and a
 * frontend that closes stops counting in the other's. Waits are for states, with generous bounds.
 */
class SharedLoadViewTest {
  final SharedKvCluster cluster = new SharedKvCluster();

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static int inFlight(Router r) {
    return r.loads().stream().mapToInt(CandidateLoad::requests).sum();
  }

  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    WorkerProcess.await(condition, what, Duration.ofSeconds(30));
  }

  @Test
  void whatOneFrontendHasInFlightCountsInTheOthersRouters() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(2);
    AffinityServer one = cluster.frontends.get(0);
    AffinityServer two = cluster.frontends.get(1);
    await(() -> !one.router(Fleet.CONTEXT).workers().isEmpty() && !two.router(Fleet.CONTEXT).workers().isEmpty()
        && !one.router(Fleet.GENERATION).workers().isEmpty() && !two.router(Fleet.GENERATION).workers().isEmpty(),
        "both frontends to join the workers");
    List<Selection> held = new ArrayList<>();
    for (Fleet fleet : Fleet.values()) {
      for (int i = 0; i < 3; i++) {
        held.add(one.router(fleet).select(RoutingRequest.builder(i, fleet).tokens(new int[] {1, 2, 3}).build(), Set.of()));
      }
    }
    for (Fleet fleet : Fleet.values()) {
      await(() -> inFlight(two.router(fleet)) == 3, "two's " + fleet + " router to count one's 3 requests");
      assertEquals(3, one.router(fleet).ownLoads().stream().mapToInt(s -> s.requests()).sum());
      assertEquals(0, two.router(fleet).ownLoads().stream().mapToInt(s -> s.requests()).sum(), "none of it is two's own");
    }
    held.forEach(s -> s.release(Outcome.SUCCESS));
    held.clear();
    held.add(one.router(Fleet.CONTEXT).select(RoutingRequest.builder(9, Fleet.CONTEXT).tokens(new int[] {1}).build(),
        Set.of()));
    await(() -> inFlight(two.router(Fleet.CONTEXT)) == 1, "the releases and the new request in two's view");
    one.close();
    cluster.frontends.remove(one);
    await(() -> inFlight(two.router(Fleet.CONTEXT)) == 0, "a closed frontend to stop counting");
  }
}
