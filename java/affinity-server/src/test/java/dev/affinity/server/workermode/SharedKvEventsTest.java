package dev.affinity.server.workermode;

import static dev.affinity.server.workermode.SharedKvCluster.BOUND;
import static dev.affinity.server.workermode.SharedKvCluster.matched;
import static dev.affinity.server.workermode.SharedKvCluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.shared.NatsProcess;
import dev.affinity.server.shared.SharedKvEvents;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Shared KV events ({@code affinity.shared_state}) with a real nats-server and real {@code affinity worker}
 * processes: three frontends with static urls and a {@code kv_cache_aware} context router; exactly one of them drains
 * each worker, and every one's router learns the blocks of a request sent through any one. When the owner dies (its
 * NATS connection closed without releasing the drain) another frontend takes the drain over and events keep flowing.
 * Batches not signed with {@code internal_request_auth_key} are dropped. Waits are for states, with generous bounds.
 */
class SharedKvEventsTest {
  private final SharedKvCluster cluster = new SharedKvCluster();
  private final List<WorkerProcess> processes = cluster.processes;
  private final List<AffinityServer> frontends = cluster.frontends;

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void everyFrontendKeepsTheWholeIndexAndOneDrainsEachWorker() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(3);
    cluster.awaitOneDrainerEach();

    String ctx = cluster.sendAndAwaitEverywhere(frontends.get(0), frontends, prompt(1));
    cluster.sendAndAwaitEverywhere(frontends.get(2), frontends, prompt(2));

    // The same prompt sent to another frontend goes where its blocks are and reuses them.
    HttpResponse<String> again = cluster.complete(frontends.get(1), prompt(1));
    assertEquals(200, again.statusCode(), again.body());
    assertEquals(ctx, WorkerProcessEndToEndTest.route(again, "ctx"), again.headers().toString());
    assertTrue(Integer.parseInt(WorkerProcessEndToEndTest.route(again, "reused")) >= 48, again.headers().toString());

    for (WorkerProcess w : processes) {
      assertEquals(1, cluster.drainers(w.id()).size(), "exactly one frontend drains " + w.id());
    }
    for (AffinityServer f : frontends) {
      assertTrue(f.sharedKvEvents().applied() > 0, "every frontend applies batches from the stream");
      assertTrue(f.service().contextRouter().stats().kvEvents().applied() > 0);
    }
    assertEquals(0, frontends.get(0).sharedKvEvents().rejected());

    // A batch on the stream without the HMAC of internal_request_auth_key is dropped and counted.
    int[] forged = prompt(9);
    try (Connection rogue = Nats.connect(cluster.nats.url())) {
      String body = "[{\"event_id\": 1, \"data\": {\"type\": \"stored\", \"parent_hash\": null, \"blocks\": "
          + "[{\"type\": \"stored_block\", \"block_hash\": 12345, \"tokens\": []}]}}]";
      rogue.jetStream().publish(NatsMessage.builder()
          .subject(frontends.get(0).sharedKvEvents().subjectPrefix() + "forged")
          .headers(new Headers().put(SharedKvEvents.WORKER_HEADER, ctx))
          .data(body.getBytes(StandardCharsets.UTF_8)).build());
      rogue.jetStream().publish(NatsMessage.builder()
          .subject(frontends.get(0).sharedKvEvents().subjectPrefix() + "anonymous")
          .data(body.getBytes(StandardCharsets.UTF_8)).build());
    }
    for (AffinityServer f : frontends) {
      WorkerProcess.await(() -> f.sharedKvEvents().rejected() == 2, "the forged batches are dropped", BOUND);
    }
    assertEquals(0, matched(frontends.get(0), ctx, forged));

    // The same traffic on each frontend's /metrics.
    double owned = 0;
    double published = 0;
    for (AffinityServer f : frontends) {
      assertEquals(1.0, cluster.metric(f, "affinity_shared_kv_connected"));
      assertEquals(1.0, cluster.metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"bad_hmac\"}"));
      assertEquals(1.0, cluster.metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"no_worker_header\"}"));
      assertEquals(0.0, cluster.metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"unparsable\"}"));
      assertEquals(0.0, cluster.metric(f, "affinity_shared_kv_publish_failures_total"));
      assertTrue(cluster.metric(f, "affinity_shared_kv_batches_applied_total") > 0);
      owned += cluster.metric(f, "affinity_shared_kv_drains_owned");
      published += cluster.metric(f, "affinity_shared_kv_batches_published_total");
    }
    assertEquals(processes.size(), owned, "each worker is drained by exactly one frontend");
    assertTrue(published > 0);
  }

  @Test
  void anotherFrontendTakesOverTheDrainOfOneThatDied() throws Exception {
    cluster.nats = NatsProcess.start();
    cluster.startWorkers();
    cluster.startFrontends(3);
    cluster.awaitOneDrainerEach();
    String ctx = cluster.sendAndAwaitEverywhere(frontends.get(0), frontends, prompt(3));

    AffinityServer owner = cluster.drainers(ctx).get(0);
    owner.sharedKvEvents().abandon(); // dies: no release, the lease must run out
    List<AffinityServer> rest = frontends.stream().filter(f -> f != owner).toList();
    WorkerProcess.await(() -> rest.stream().filter(f -> f.sharedKvEvents().drains(ctx)).count() == 1,
        "another frontend drains " + ctx, BOUND);

    // Events keep flowing: a new prompt's blocks reach every surviving frontend.
    int[] next = prompt(4);
    HttpResponse<String> r = cluster.complete(rest.get(0), next);
    assertEquals(200, r.statusCode(), r.body());
    String served = WorkerProcessEndToEndTest.route(r, "ctx");
    for (AffinityServer f : rest) {
      WorkerProcess.await(() -> matched(f, served, next) >= 3, "a surviving frontend learns the new blocks", BOUND);
    }

    // A frontend closed cleanly releases its drains at once; the last one takes them all.
    AffinityServer second = rest.stream().filter(f -> f.sharedKvEvents().drains(ctx)).findFirst().orElseThrow();
    second.close();
    frontends.remove(second);
    AffinityServer last = rest.stream().filter(f -> f != second).findFirst().orElseThrow();
    for (WorkerProcess w : processes) {
      WorkerProcess.await(() -> last.sharedKvEvents().drains(w.id()), "the last frontend drains " + w.id(), BOUND);
    }
  }

  @Test
  void aFrontendWithoutTheNatsTokenDoesNotStart() throws Exception {
    cluster.nats = NatsProcess.start("s3cret-nats-token");
    cluster.startWorkers();
    IOException e = assertThrows(IOException.class, () -> cluster.frontend("{nats: \"" + cluster.nats.url() + "\"}"));
    assertTrue(e.getMessage().contains("affinity.shared_state.nats: cannot connect"), e.getMessage());
    AffinityServer f = cluster.frontend("{nats: \"" + cluster.nats.url() + "\", token: s3cret-nats-token}");
    WorkerProcess.await(() -> processes.stream().allMatch(w -> f.sharedKvEvents().drains(w.id())),
        "the only frontend drains every worker", BOUND);
    cluster.sendAndAwaitEverywhere(f, List.of(f), prompt(5));
    assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
  }
}
