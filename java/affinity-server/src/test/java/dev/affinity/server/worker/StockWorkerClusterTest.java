package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * Stock {@code trtllm-serve} workers joining a frontend's HTTP cluster storage, scripted over HTTP exactly as
 * upstream's {@code HttpClusterStorageClient} and {@code DisaggClusterWorker} speak (the worker itself is a
 * {@link FakeTrtllmServe}): register ({@code POST /set}, no overwrite, TTL), heartbeat ({@code GET /expire}),
 * the frontend's preparation ({@code /steady_clock_offset}, {@code /server_info}), readiness at
 * {@code minimal_instances}, expiry after a kill, and re-registration after a frontend restart (a refresh of a
 * missing key answers 400).
 */
class StockWorkerClusterTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String PREFIX = "/trtllm-disagg/test_cluster/workers";
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  static String config() {
    // upstream's harness writes this shape (conditional_disagg_config: null, router {}); the frontend serves
    // the storage on its own port, whatever the URI's port says. A stock worker cannot sign storage requests, so a
    // stock fleet over the HTTP storage runs without internal_request_auth_key, which the frontend refuses unless
    // the config accepts that explicitly (ClusterStorageAuthTest)
    return """
        hostname: 127.0.0.1
        port: 8000
        disagg_cluster:
          cluster_uri: http://127.0.0.1:8000
          cluster_name: test_cluster
          heartbeat_interval_sec: 1
          inactive_timeout_sec: 2
          minimal_instances: {context_servers: 1, generation_servers: 1}
        context_servers: {router: {}}
        generation_servers: {router: {type: round_robin}}
        conditional_disagg_config: null
        perf_metrics_max_requests: 0
        affinity: {allow_unauthenticated_cluster_storage: true}
        """;
  }

  static AffinityServer frontend(int port) throws Exception {
    DisaggConfig cfg = ConfigLoader.parse(config(), "cluster.yaml").config();
    return AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(port).withAccessLog(AccessLog.none()));
  }

  record Answer(int status, JsonNode body) {}

  Answer call(HttpRequest.Builder b) throws Exception {
    HttpResponse<String> r = http.send(b.timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    return new Answer(r.statusCode(), r.body().isEmpty() ? null : JSON.readTree(r.body()));
  }

  static URI uri(int port, String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + port + pathAndQuery);
  }

  static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** Upstream's {@code set}: the whole {@code StorageItem}, as {@code model_dump()} writes it. */
  Answer set(int port, String key, String value, boolean overwrite) throws Exception {
    String item = JSON.createObjectNode().put("key", key).put("value", value).put("expire_time", -1).put("ttl", 2)
        .put("overwrite_if_exists", overwrite).toString();
    return call(HttpRequest.newBuilder(uri(port, "/set")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(item)));
  }

  Answer expire(int port, String key) throws Exception {
    return call(HttpRequest.newBuilder(uri(port, "/expire?key=" + q(key) + "&ttl=2")).GET());
  }

  Answer clusterInfo(int port) throws Exception {
    return call(HttpRequest.newBuilder(uri(port, "/cluster_info")).GET());
  }

  static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(50);
    }
  }

  boolean ready(int port) {
    try {
      return clusterInfo(port).body().path("is_ready").asBoolean();
    } catch (Exception e) {
      return false;
    }
  }

  static String value(String id, int port, int role) {
    // Python's json.dumps(asdict(WorkerInfo)): ", " and ": " separators
    return "{\"worker_id\": \"" + id + "\", \"host\": \"127.0.0.1\", \"port\": " + port + ", \"role\": " + role + "}";
  }

  /** The stock workers' heartbeat: {@code GET /expire} every 500 ms for each live key (a killed worker stops). */
  final class Heartbeats implements AutoCloseable {
    final java.util.Set<String> alive = java.util.concurrent.ConcurrentHashMap.newKeySet();
    volatile int port;
    final java.util.concurrent.ScheduledExecutorService timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();

    Heartbeats() {
      timer.scheduleWithFixedDelay(() -> {
        for (String key : alive) {
          try {
            expire(port, key);
          } catch (Exception e) {
            // the frontend is restarting
          }
        }
      }, 0, 500, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
      timer.shutdownNow();
    }
  }

  @Test
  void stockWorkersRegisterHeartbeatExpireAndReRegisterAfterAFrontendRestart() throws Exception {
    try (FakeTrtllmServe ctx = FakeTrtllmServe.start(); FakeTrtllmServe gen = FakeTrtllmServe.start();
        Heartbeats beats = new Heartbeats()) {
      String ctxId = "CONTEXT-127.0.0.1:" + ctx.port() + "-1712345678901-4242-037";
      String genId = "GENERATION-127.0.0.1:" + gen.port() + "-1712345678902-4243-512";
      String ctxKey = PREFIX + "/" + ctxId;
      String genKey = PREFIX + "/" + genId;
      int port;
      try (AffinityServer server = frontend(0)) {
        port = server.port();
        beats.port = port;
        Answer health = call(HttpRequest.newBuilder(uri(port, "/health")).GET());
        assertEquals(503, health.status(), "not ready before minimal_instances");
        assertEquals(503, call(HttpRequest.newBuilder(uri(port, "/v1/models")).GET()).status(), "no context worker yet");

        Answer registered = set(port, ctxKey, value(ctxId, ctx.port(), 0), false);
        assertEquals(200, registered.status());
        beats.alive.add(ctxKey);
        assertEquals(JSON.readTree("{\"result\": true}"), registered.body());
        Answer again = set(port, ctxKey, value(ctxId, ctx.port(), 0), false);
        assertEquals(400, again.status(), "the key exists and overwrite_if_exists is false");
        assertEquals(JSON.readTree("{\"result\": false}"), again.body());
        assertFalse(ready(port), "one context worker, no generation worker");
        assertEquals(200, set(port, genKey, value(genId, gen.port(), 1), false).status());
        beats.alive.add(genKey);
        await("the cluster to be ready", () -> ready(port));

        // the frontend prepared both as upstream's router does: the clock exchange, then /server_info
        for (FakeTrtllmServe w : new FakeTrtllmServe[] {ctx, gen}) {
          assertEquals(1, w.received("/steady_clock_offset").stream().filter(r -> r.method().equals("GET")).count());
          FakeTrtllmServe.Received offset = w.received("/steady_clock_offset").stream()
              .filter(r -> r.method().equals("POST")).findFirst().orElseThrow();
          assertTrue(offset.json().path("offset").isNumber(), offset.json().toString());
          assertFalse(w.received("/server_info").isEmpty());
        }
        JsonNode info = clusterInfo(port).body();
        assertEquals(ctxId, info.at("/current_workers/context_servers/0/worker_id").asText());
        assertEquals(ctx.port(), info.at("/current_workers/context_servers/0/port").asInt());
        assertEquals(1, info.at("/current_workers/generation_servers/0/role").asInt());
        assertEquals(1, info.at("/minimal_instances/context_servers").asInt());
        assertEquals("127.0.0.1:" + ctx.port(), info.at("/server_lists/context/0").asText());
        assertEquals(200, call(HttpRequest.newBuilder(uri(port, "/health")).GET()).status());

        // without affinity.model: the model is the context worker's, and requests are not checked against it
        assertEquals(FakeTrtllmServe.MODEL, call(HttpRequest.newBuilder(uri(port, "/v1/models")).GET()).body()
            .at("/data/0/id").asText());
        Answer completion = call(HttpRequest.newBuilder(uri(port, "/v1/completions"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"any-name\", \"prompt\": \"hi\", \"max_tokens\": 3}")));
        assertEquals(200, completion.status(), String.valueOf(completion.body()));

        // storage reads
        Answer prefix = call(HttpRequest.newBuilder(uri(port, "/get_prefix?key_prefix=" + q(PREFIX) + "&keys_only=0")).GET());
        assertEquals(200, prefix.status());
        assertEquals(value(ctxId, ctx.port(), 0), prefix.body().path("result").path(ctxKey).asText());
        Answer keysOnly = call(HttpRequest.newBuilder(uri(port, "/get_prefix?key_prefix=" + q(PREFIX) + "&keys_only=1")).GET());
        assertEquals("", keysOnly.body().path("result").path(genKey).asText());
        Answer none = call(HttpRequest.newBuilder(uri(port, "/get_prefix?key_prefix=/nothing")).GET());
        assertEquals(200, none.status(), "an empty map is a result");
        assertEquals(JSON.readTree("{\"result\": {}}"), none.body());
        Answer get = call(HttpRequest.newBuilder(uri(port, "/get?key=" + q(genKey))).GET());
        assertEquals(value(genId, gen.port(), 1), get.body().path("result").asText());
        Answer missing = call(HttpRequest.newBuilder(uri(port, "/get?key=nope")).GET());
        assertEquals(400, missing.status());
        assertEquals(JSON.readTree("{\"result\": null}"), missing.body());
        Answer noKey = call(HttpRequest.newBuilder(uri(port, "/expire?ttl=2")).GET());
        assertEquals(400, noKey.status());
        assertEquals("key", noKey.body().at("/error/param").asText(), "bad input names the field");

        // heartbeats keep the generation worker; the context worker is killed (no heartbeat, no delete)
        assertEquals(200, expire(port, genKey).status());
        beats.alive.remove(ctxKey);
        await("the context key to expire", () -> !ready(port));
        info = clusterInfo(port).body();
        assertEquals(0, info.at("/current_workers/context_servers").size());
        assertEquals(1, info.at("/current_workers/generation_servers").size());
        Answer refresh = expire(port, ctxKey);
        assertEquals(400, refresh.status(), "a refresh of a missing key answers 400, so the worker re-registers");
        assertEquals(JSON.readTree("{\"result\": false}"), refresh.body());
        assertEquals(503, call(HttpRequest.newBuilder(uri(port, "/health")).GET()).status());

        // a stock worker deregisters with DELETE /delete
        beats.alive.remove(genKey);
        Answer deleted = call(HttpRequest.newBuilder(uri(port, "/delete?key=" + q(genKey))).DELETE());
        assertEquals(JSON.readTree("{\"result\": true}"), deleted.body());
        assertEquals(400, call(HttpRequest.newBuilder(uri(port, "/delete?key=" + q(genKey))).DELETE()).status());
        await("the generation worker to leave", () -> {
          try {
            return clusterInfo(port).body().at("/server_lists/generation").isEmpty();
          } catch (Exception e) {
            return false;
          }
        });
      }

      // a new frontend on the same port has lost the storage: the workers' next heartbeat fails and they
      // register again, overwriting
      try (AffinityServer restarted = frontend(port)) {
        for (String[] w : new String[][] {{ctxKey, value(ctxId, ctx.port(), 0)}, {genKey, value(genId, gen.port(), 1)}}) {
          assertEquals(400, expire(port, w[0]).status());
          assertEquals(200, set(port, w[0], w[1], true).status());
        }
        await("the restarted frontend to be ready", () -> ready(port));
        Answer completion = call(HttpRequest.newBuilder(uri(port, "/v1/chat/completions"))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2}")));
        assertEquals(200, completion.status(), String.valueOf(completion.body()));
        assertEquals(2, restarted.workers().size());
      }
    }
  }
}
