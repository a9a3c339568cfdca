package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A frontend that starts after the others rebuilds its index from the shared stream before {@code /health} says it is
 * ready (issue 44 item 3): the moment it answers 200, its router already knows the blocks of every request the first
 * frontend served before it started (real nats-server, real worker processes). Nothing is timed: the assertion is
 * made once, at the first 200.
 */
class SharedKvReplayTest {
  final SharedKvCluster cluster = new SharedKvCluster();

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  int health(AffinityServer f) {
    try {
      return cluster.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + f.port() + "/health"))
          .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (Exception e) {
      return -1;
    }
  }

  @Test
  void aLateFrontendIsReadyOnlyWithTheWholeRetainedIndex() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(2);
    AffinityServer first = cluster.frontends.get(0);
    // the observer routes nothing, so it knows a request's blocks only once their events are in the stream (the
    // first frontend's router also records the blocks it routed, before any event)
    AffinityServer observer = cluster.frontends.get(1);
    Map<Integer, String> served = new LinkedHashMap<>();
    for (int seed = 1; seed <= 12; seed++) {
      served.put(seed, cluster.sendAndAwaitEverywhere(first, List.of(first, observer), SharedKvCluster.prompt(seed)));
    }
    AffinityServer late = cluster.frontend("{nats: \"" + cluster.nats.url() + "\", drain_lease_seconds: 2}");
    WorkerProcess.await(() -> health(late) == 200, "the late frontend to be ready", SharedKvCluster.BOUND);
    for (Map.Entry<Integer, String> e : served.entrySet()) {
      int[] ids = SharedKvCluster.prompt(e.getKey());
      assertTrue(SharedKvCluster.matched(late, e.getValue(), ids) >= 3,
          "ready, and already knows the blocks of request " + e.getKey() + " on " + e.getValue());
    }
    assertTrue(late.sharedKvEvents().replayed());
    assertTrue(cluster.metric(late, "affinity_shared_kv_index_rebuild_seconds") >= 0);
    assertEquals(200, health(first));
  }
}
