package dev.affinity.server.workermode;

import static dev.affinity.server.workermode.SharedKvCluster.BOUND;
import static dev.affinity.server.workermode.SharedKvCluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code affinity worker --nats}: workers that publish their own KV events to the cluster's stream. No frontend drains
 * them, every frontend's index learns their blocks, each frontend's {@code /metrics} shows the events applied and their
 * lag per worker, and a worker restarted on its address (the same publisher key, its event ids starting over) leaves
 * no stale block in any frontend's index. Real nats-server, worker processes, frontends over HTTP.
 */
class SharedKvPublishingWorkerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final SharedKvCluster cluster = new SharedKvCluster();

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void workersThatPublishTheirOwnEventsReachEveryFrontendUndrained() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers("--nats", cluster.nats.url());
    cluster.startFrontends(2);
    List<AffinityServer> all = List.copyOf(cluster.frontends);

    WorkerProcess ctxA = cluster.processes.get(0);
    JsonNode info = JSON.readTree(cluster.http.send(HttpRequest.newBuilder(URI.create(ctxA.url() + "/server_info"))
        .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).body());
    JsonNode nats = info.path("affinity").path("kv_events_nats");
    assertEquals("affinity.default.kv.", nats.path("subject").asText().substring(0, "affinity.default.kv.".length()),
        info.toString());
    assertTrue(nats.path("publisher").asText().startsWith("ctx-a@127.0.0.1:" + ctxA.port()), info.toString());

    int[] ids = prompt(11);
    String ctx = cluster.sendAndAwaitEverywhere(all.get(0), all, ids);
    for (AffinityServer f : all) {
      assertEquals(0, f.sharedKvEvents().drainsOwned(), "nobody drains a worker that publishes its own events");
      assertTrue(cluster.metric(f, "affinity_shared_kv_events_applied_total{worker=\"" + ctx + "\"}") > 0);
      assertTrue(cluster.metric(f, "affinity_shared_kv_lag_seconds_count{worker=\"" + ctx + "\"}") > 0);
      assertEquals(0.0, cluster.metric(f, "affinity_shared_kv_drain_owner{worker=\"" + ctx + "\"}"));
    }
    // The same prompt through the other frontend lands where its blocks are and reuses them.
    HttpResponse<String> again = cluster.complete(all.get(1), ids);
    assertEquals(200, again.statusCode(), again.body());
    assertEquals(ctx, WorkerProcessEndToEndTest.route(again, "ctx"), again.headers().toString());

    // Restarted on its address: the same publisher key, event ids from the start; every index forgets the old blocks.
    int index = cluster.processes.indexOf(cluster.processes.stream().filter(p -> p.id().equals(ctx)).findFirst()
        .orElseThrow());
    WorkerProcess old = cluster.processes.get(index);
    old.kill();
    WorkerProcess restarted = WorkerProcess.startOnPort(old.name(), old.port(),
        SharedKvCluster.workerArgs("--nats", cluster.nats.url()));
    cluster.processes.set(index, restarted);
    restarted.awaitReady(cluster.http, SharedKvCluster.START);
    for (AffinityServer f : all) {
      WorkerProcess.await(() -> SharedKvCluster.matched(f, ctx, ids) == 0,
          "frontend " + all.indexOf(f) + " to forget the dead process's blocks on " + ctx, BOUND);
    }
    cluster.sendAndAwaitEverywhere(all.get(1), all, ids);
  }
}
