package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Shutdown drains in-flight streams before closing. */
class GracefulShutdownTest {

  @Test
  void aStreamInFlightFinishesDuringShutdown() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse("""
        context_servers: {num_instances: 1}
        generation_servers: {num_instances: 1}
        affinity:
          model: m
          workers:
            context: {instances: 1, ranks: 1, time_scale: 0.05}
            generation: {instances: 1, ranks: 1, time_scale: 0.05}
        """, "drain.yaml").config();
    AffinityServer server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0)
        .withAccessLog(AccessLog.none()));
    HttpClient http = HttpClient.newHttpClient();
    CompletableFuture<HttpResponse<String>> stream = http.sendAsync(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"drain me\", \"max_tokens\": 40, \"stream\": true}"))
        .build(), HttpResponse.BodyHandlers.ofString());
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (server.frontend().inFlight() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    server.shutdown(Duration.ofSeconds(30));
    HttpResponse<String> r = stream.get();
    assertEquals(200, r.statusCode());
    assertTrue(r.body().trim().endsWith("data: [DONE]"), "the stream completed: " + r.body());
  }
}
