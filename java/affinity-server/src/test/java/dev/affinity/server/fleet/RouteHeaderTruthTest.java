package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * x-affinity-route reports what the executor did, not what the router planned: a sticky key pins
 * rank 0, rank 0 is full, the executor overflows the hint to rank 1, and the header says rank 1.
 */
class RouteHeaderTruthTest {

  @Test
  void anOverflowingRankHintIsReportedTruthfully() throws Exception {
    // Context: one instance, 2 ranks of capacity 1, 10x slower than modelled (a 20k-token prefill holds
    // its rank for about 10 s, in chunks of 3 s). Generation: fast.
    DisaggConfig cfg = ConfigLoader.parse("""
        context_servers: {num_instances: 1, router: {type: conversation}}
        generation_servers: {num_instances: 1}
        affinity:
          model: m
          debug_headers: true
          workers:
            context:
              instances: 1
              ranks: 2
              time_scale: 10
              executor: {max_num_active_requests: 1, adp_router: {type: default}}
            generation: {instances: 1, ranks: 1, time_scale: 0.01}
        """, "truth.yaml").config();
    try (AffinityServer server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0)
        .withAccessLog(AccessLog.none()))) {
      HttpClient http = HttpClient.newHttpClient();
      String base = "http://127.0.0.1:" + server.port() + "/v1/completions";
      // A: a long prompt of conversation K lands on rank 0 and holds it while it prefills.
      String longPrompt = "word ".repeat(20_000);
      CompletableFuture<HttpResponse<String>> a = http.sendAsync(HttpRequest.newBuilder(URI.create(base))
          .header("Content-Type", "application/json").header("X-Session-ID", "K")
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"" + longPrompt + "\", \"max_tokens\": 2}"))
          .build(), HttpResponse.BodyHandlers.ofString());
      NativeWorker ctx = (NativeWorker) server.workers().stream().filter(w -> w.id().startsWith("ctx")).findFirst().orElseThrow();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      int busy = -1;
      while (busy < 0 && System.nanoTime() < deadline) {
        for (int rank = 0; rank < 2; rank++) {
          if (ctx.executor().kvCacheStats(rank).activeRequests() > 0) {
            busy = rank;
          }
        }
        Thread.sleep(10);
      }
      assertTrue(busy >= 0, "request A is being prefilled");

      // B: the same conversation, so the router pins it to A's rank; that rank is full.
      HttpResponse<String> b = http.send(HttpRequest.newBuilder(URI.create(base))
          .header("Content-Type", "application/json").header("X-Session-ID", "K")
          .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"short\", \"max_tokens\": 2}"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, b.statusCode(), b.body());
      String route = b.headers().firstValue("x-affinity-route").orElseThrow();
      assertTrue(route.contains("ctx_rank=" + (1 - busy)), "the executor served B on the other rank: " + route);
      assertEquals(1, server.service().contextRouter().stats().decisions().get(dev.affinity.routing.DecisionReason.PINNED),
          "while the router had pinned it to rank " + busy);
      a.cancel(true);
    }
  }
}
