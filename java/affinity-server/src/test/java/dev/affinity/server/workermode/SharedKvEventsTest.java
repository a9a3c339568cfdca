package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.shared.NatsProcess;
import dev.affinity.server.shared.SharedKvEvents;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
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
  static final String KEY = "shared-kv-test-key";
  static final String EXECUTOR = "{\"num_ranks\": 1, \"tokens_per_block\": 16, \"clock\": {\"time_scale\": 0.02}}";
  static final Duration START = Duration.ofSeconds(60);
  static final Duration BOUND = Duration.ofSeconds(20);

  private final List<WorkerProcess> processes = new ArrayList<>();
  private final List<AffinityServer> frontends = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private NatsProcess nats;

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

  private void startWorkers() throws Exception {
    for (String name : List.of("ctx-a", "ctx-b", "gen-a")) {
      processes.add(WorkerProcess.start(name, "--executor-json", EXECUTOR, "--model", "m", "--auth-key", KEY));
    }
    for (WorkerProcess p : processes) {
      p.awaitReady(http, START);
    }
  }

  private String yaml(String sharedState) {
    return """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        context_servers:
          num_instances: 2
          urls: ["%s", "%s"]
          router: {type: kv_cache_aware}
        generation_servers:
          urls: ["%s"]
          router: {type: round_robin}
        affinity: {model: m, debug_headers: true, request_timeout_seconds: 30, warm_up_requests: 0,
                   shared_state: %s}
        """.formatted(KEY, processes.get(0).id(), processes.get(1).id(), processes.get(2).id(), sharedState);
  }

  private AffinityServer frontend(String sharedState) throws IOException {
    DisaggConfig cfg = ConfigLoader.parse(yaml(sharedState), "shared-kv.yaml").config();
    AffinityServer f = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "shared-kv").withPort(0)
        .withAccessLog(AccessLog.none()));
    frontends.add(f);
    return f;
  }

  private void startFrontends(int n) throws Exception {
    for (int i = 0; i < n; i++) {
      frontend("{nats: \"" + nats.url() + "\", drain_lease_seconds: 2}");
    }
  }

  /** A prompt of token ids, four blocks of 16, distinct per {@code seed}. */
  static int[] prompt(int seed) {
    return IntStream.range(0, 64).map(i -> 1000 + seed * 100 + i).toArray();
  }

  private HttpResponse<String> complete(AffinityServer f, int[] ids) throws Exception {
    String body = "{\"model\": \"m\", \"max_tokens\": 2, \"prompt\": " + java.util.Arrays.toString(ids) + "}";
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + f.port() + "/v1/completions"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The blocks of {@code ids} that {@code f}'s context router knows on {@code worker} (a probe, cancelled). */
  static int matched(AffinityServer f, String worker, int[] ids) {
    Router router = f.service().contextRouter();
    Selection s = router.select(RoutingRequest.builder(1L << 50, Fleet.CONTEXT).tokens(ids).build(), Set.of());
    int blocks = s.worker().id().equals(worker) ? s.matchedBlocks() : 0;
    s.release(Outcome.CANCELLED);
    return blocks;
  }

  /**
   * The value of {@code series} on {@code f}'s {@code /metrics}: a name (every row of it summed) or a name with its
   * labels as Prometheus writes them ({@code name{reason="bad_hmac"}}).
   */
  static double metric(AffinityServer f, String series) throws Exception {
    String text = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + f.port()
        + "/metrics")).timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
    return text.lines().filter(l -> !l.startsWith("#"))
        .filter(l -> {
          String key = l.substring(0, l.lastIndexOf(' '));
          return key.equals(series) || (!series.contains("{") && key.startsWith(series + "{"));
        })
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  /** The frontends that drain {@code worker} now. */
  private List<AffinityServer> drainers(String worker) {
    return frontends.stream().filter(f -> f.sharedKvEvents().drains(worker)).toList();
  }

  private void awaitOneDrainerEach() throws InterruptedException {
    for (WorkerProcess w : processes) {
      WorkerProcess.await(() -> drainers(w.id()).size() == 1, "one frontend drains " + w.id(), BOUND);
    }
  }

  /** Sends {@code ids} through {@code via}; waits until every frontend in {@code all} knows its blocks. */
  private String sendAndAwaitEverywhere(AffinityServer via, List<AffinityServer> all, int[] ids) throws Exception {
    HttpResponse<String> r = complete(via, ids);
    assertEquals(200, r.statusCode(), r.body());
    String ctx = WorkerProcessEndToEndTest.route(r, "ctx");
    for (AffinityServer f : all) {
      WorkerProcess.await(() -> matched(f, ctx, ids) >= 3, "frontend " + all.indexOf(f) + " learns the blocks on "
          + ctx, BOUND);
    }
    return ctx;
  }

  @Test
  void everyFrontendKeepsTheWholeIndexAndOneDrainsEachWorker() throws Exception {
    nats = NatsProcess.start();
    startWorkers();
    startFrontends(3);
    awaitOneDrainerEach();

    String ctx = sendAndAwaitEverywhere(frontends.get(0), frontends, prompt(1));
    sendAndAwaitEverywhere(frontends.get(2), frontends, prompt(2));

    // The same prompt sent to another frontend goes where its blocks are and reuses them.
    HttpResponse<String> again = complete(frontends.get(1), prompt(1));
    assertEquals(200, again.statusCode(), again.body());
    assertEquals(ctx, WorkerProcessEndToEndTest.route(again, "ctx"), again.headers().toString());
    assertTrue(Integer.parseInt(WorkerProcessEndToEndTest.route(again, "reused")) >= 48, again.headers().toString());

    for (WorkerProcess w : processes) {
      assertEquals(1, drainers(w.id()).size(), "exactly one frontend drains " + w.id());
    }
    for (AffinityServer f : frontends) {
      assertTrue(f.sharedKvEvents().applied() > 0, "every frontend applies batches from the stream");
      assertTrue(f.service().contextRouter().stats().kvEvents().applied() > 0);
    }
    assertEquals(0, frontends.get(0).sharedKvEvents().rejected());

    // A batch on the stream without the HMAC of internal_request_auth_key is dropped and counted.
    int[] forged = prompt(9);
    try (Connection rogue = Nats.connect(nats.url())) {
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
      assertEquals(1.0, metric(f, "affinity_shared_kv_connected"));
      assertEquals(1.0, metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"bad_hmac\"}"));
      assertEquals(1.0, metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"no_worker_header\"}"));
      assertEquals(0.0, metric(f, "affinity_shared_kv_batches_rejected_total{reason=\"unparsable\"}"));
      assertEquals(0.0, metric(f, "affinity_shared_kv_publish_failures_total"));
      assertTrue(metric(f, "affinity_shared_kv_batches_applied_total") > 0);
      owned += metric(f, "affinity_shared_kv_drains_owned");
      published += metric(f, "affinity_shared_kv_batches_published_total");
    }
    assertEquals(processes.size(), owned, "each worker is drained by exactly one frontend");
    assertTrue(published > 0);
  }

  @Test
  void anotherFrontendTakesOverTheDrainOfOneThatDied() throws Exception {
    nats = NatsProcess.start();
    startWorkers();
    startFrontends(3);
    awaitOneDrainerEach();
    String ctx = sendAndAwaitEverywhere(frontends.get(0), frontends, prompt(3));

    AffinityServer owner = drainers(ctx).get(0);
    owner.sharedKvEvents().abandon(); // dies: no release, the lease must run out
    List<AffinityServer> rest = frontends.stream().filter(f -> f != owner).toList();
    WorkerProcess.await(() -> rest.stream().filter(f -> f.sharedKvEvents().drains(ctx)).count() == 1,
        "another frontend drains " + ctx, BOUND);

    // Events keep flowing: a new prompt's blocks reach every surviving frontend.
    int[] next = prompt(4);
    HttpResponse<String> r = complete(rest.get(0), next);
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
    nats = NatsProcess.start("s3cret-nats-token");
    startWorkers();
    IOException e = assertThrows(IOException.class, () -> frontend("{nats: \"" + nats.url() + "\"}"));
    assertTrue(e.getMessage().contains("affinity.shared_state.nats: cannot connect"), e.getMessage());
    AffinityServer f = frontend("{nats: \"" + nats.url() + "\", token: s3cret-nats-token}");
    WorkerProcess.await(() -> processes.stream().allMatch(w -> f.sharedKvEvents().drains(w.id())),
        "the only frontend drains every worker", BOUND);
    sendAndAwaitEverywhere(f, List.of(f), prompt(5));
    assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
  }
}
