package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.CandidateLoad;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.shared.NatsProcess;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One load view (issue 44 item 2) through the assembled frontend: two {@code affinity serve} frontends with
 * {@code affinity.shared_state} in front of the same {@code affinity worker} processes; what one has in flight counts
 * in the other's routers (context and generation) within a few report periods, and a frontend that closes stops
 * counting in the other's. Waits are for states, with generous bounds.
 */
class SharedLoadViewTest {
  static final String KEY = "shared-load-key";
  static final String EXECUTOR = "{\"num_ranks\": 2, \"tokens_per_block\": 16}";

  final List<WorkerProcess> processes = new ArrayList<>();
  final List<AffinityServer> frontends = new ArrayList<>();
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  NatsProcess nats;

  @AfterEach
  void stop() throws Exception {
    try {
      for (AffinityServer f : frontends) {
        f.close();
      }
    } finally {
      WorkerProcess.closeAll(null, processes);
      if (nats != null) {
        nats.close();
      }
    }
  }

  AffinityServer frontend() throws Exception {
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        context_servers: {num_instances: 1, urls: ["%s"], router: {type: load_balancing}}
        generation_servers: {num_instances: 1, urls: ["%s"], router: {type: load_balancing}}
        affinity: {model: m, warm_up_requests: 0, shared_state: {nats: "%s"}}
        """.formatted(KEY, processes.get(0).id(), processes.get(1).id(), nats.url());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "shared-load.yaml").config();
    AffinityServer f = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0)
        .withAccessLog(AccessLog.none()));
    frontends.add(f);
    return f;
  }

  static int inFlight(Router r) {
    return r.loads().stream().mapToInt(CandidateLoad::requests).sum();
  }

  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    WorkerProcess.await(condition, what, Duration.ofSeconds(30));
  }

  @Test
  void whatOneFrontendHasInFlightCountsInTheOthersRouters() throws Exception {
    nats = NatsProcess.start();
    for (String name : List.of("ctx-1", "gen-1")) {
      WorkerProcess p = WorkerProcess.start(name, "--executor-json", EXECUTOR, "--model", "m", "--auth-key", KEY);
      processes.add(p);
      p.awaitReady(http, Duration.ofSeconds(60));
    }
    AffinityServer one = frontend();
    AffinityServer two = frontend();
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
    frontends.remove(one);
    await(() -> inFlight(two.router(Fleet.CONTEXT)) == 0, "a closed frontend to stop counting");
  }
}
