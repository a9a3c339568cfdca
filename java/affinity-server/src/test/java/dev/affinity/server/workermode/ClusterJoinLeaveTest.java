package dev.affinity.server.workermode;

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
import dev.affinity.server.cluster.EtcdProcess;
import dev.affinity.server.cluster.ServerRole;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Affinity workers joining and leaving a frontend under load, over the frontend's HTTP storage and over a real
 * etcd: the generation worker is an {@code affinity worker --server_role generation --disagg_cluster_uri ...}
 * process (upstream's spellings), the context workers run in this JVM. A worker that joins takes
 * conversations; a worker that leaves deletes its key first and drains (503 for new legs, which the frontend
 * retries elsewhere; those in flight finish, and the contexts it holds are pulled or time out). No request
 * fails.
 */
class ClusterJoinLeaveTest {
  static final ObjectMapper JSON = new ObjectMapper();
  /**
   * 20x faster than modelled; a context is held 1.5 s of wall time for its generation leg (in another process,
   * which tells this one when it pulled it; the hold is the backstop for legs that never come), so a leaving
   * context worker drains at most that long.
   */
  static final String EXECUTOR = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.05}, "context_hold_timeout_ms": 1500}""";
  static final int CLIENTS = 4;
  static final int REQUESTS_PER_CLIENT = 30;

  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  final List<AutoCloseable> open = new ArrayList<>();

  /**
   * The HTTP storage runs without internal_request_auth_key here (joining and leaving is the subject; the signed
   * storage is ClusterStorageAuthTest's), which the frontend accepts only when the config says so.
   */
  static String config(String uri) {
    String openStorage = uri.startsWith("http://") ? ", allow_unauthenticated_cluster_storage: true" : "";
    return """
        hostname: 127.0.0.1
        port: 8000
        disagg_cluster:
          cluster_uri: %s
          cluster_name: join-leave
          minimal_instances: {context_servers: 2, generation_servers: 1}
        context_servers: {router: {type: conversation}}
        generation_servers: {router: {type: round_robin}}
        affinity: {model: m, debug_headers: true%s}
        """.formatted(uri, openStorage);
  }

  WorkerServer worker(String name, String uri, ServerRole role) throws Exception {
    WorkerServer w = WorkerServer.start(EXECUTOR, WorkerSettings.defaults().withName(name),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "t");
    open.add(w);
    w.joinCluster(new WorkerCluster(uri, "join-leave", role, 1, 3, Duration.ofMillis(200)));
    return w;
  }

  static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  JsonNode clusterInfo(int port) {
    try {
      return JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/cluster_info"))
          .GET().build(), HttpResponse.BodyHandlers.ofString()).body());
    } catch (Exception e) {
      return JSON.createObjectNode();
    }
  }

  static List<String> contextServers(JsonNode info) {
    List<String> out = new ArrayList<>();
    info.at("/server_lists/context").forEach(n -> out.add(n.asText()));
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"http", "etcd"})
  void workersJoinAndLeaveUnderLoadWithoutAFailedRequest(String storage) throws Exception {
    EtcdProcess etcd = storage.equals("etcd") ? EtcdProcess.start() : null;
    try {
      String frontendUri = etcd != null ? etcd.uri() : "http://127.0.0.1:8000";
      DisaggConfig cfg = ConfigLoader.parse(config(frontendUri), "join-leave.yaml").config();
      AffinityServer server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0)
          .withAccessLog(AccessLog.none()));
      open.add(server);
      int port = server.port();
      String uri = etcd != null ? etcd.uri() : "http://127.0.0.1:" + port;
      WorkerServer leaving = worker("ctx-1", uri, ServerRole.CONTEXT);
      worker("ctx-2", uri, ServerRole.CONTEXT);
      WorkerProcess gen = WorkerProcess.start("gen-1", "--executor-json", EXECUTOR, "--server_role", "generation",
          "--disagg_cluster_uri", uri, "--disagg_cluster_name", "join-leave", "--heartbeat_interval_sec", "1",
          "--inactive_timeout_sec", "3");
      open.add(gen);
      gen.awaitReady(http, Duration.ofSeconds(60));
      await("the cluster to be ready", () -> clusterInfo(port).path("is_ready").asBoolean());

      Map<Integer, Integer> statuses = new ConcurrentHashMap<>();
      Map<String, Integer> servedBy = new ConcurrentHashMap<>();
      List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
      CountDownLatch warm = new CountDownLatch(CLIENTS * 5);
      CountDownLatch changed = new CountDownLatch(1);
      ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < CLIENTS; c++) {
        int client = c;
        done.add(clients.submit(() -> {
          for (int i = 0; i < REQUESTS_PER_CLIENT; i++) {
            if (i == 10) {
              changed.await(60, TimeUnit.SECONDS); // the rest of the load runs while the membership changes
            }
            String conversation = "conv-" + client + "-" + (i % 3);
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").header("X-Session-ID", conversation)
                .timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"turn " + i + " of "
                    + conversation + " with a few more words\", \"max_tokens\": 4}")).build(),
                HttpResponse.BodyHandlers.ofString());
            statuses.merge(r.statusCode(), 1, Integer::sum);
            if (r.statusCode() != 200) {
              failures.add(r.statusCode() + " " + r.body());
            }
            String route = r.headers().firstValue("x-affinity-route").orElse("");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("ctx=([^;]+)").matcher(route);
            if (m.find()) {
              servedBy.merge(m.group(1), 1, Integer::sum);
            }
            warm.countDown();
          }
          return null;
        }));
      }
      assertTrue(warm.await(60, TimeUnit.SECONDS), "the load started");
      WorkerServer joining = worker("ctx-3", uri, ServerRole.CONTEXT);
      String joiningId = "127.0.0.1:" + joining.port();
      await("ctx-3 to join", () -> contextServers(clusterInfo(port)).contains(joiningId));
      String leavingId = "127.0.0.1:" + leaving.port();
      Thread leaver = new Thread(() -> leaving.shutdown(Duration.ofSeconds(20)), "ctx-1-leaves");
      leaver.start();
      changed.countDown();
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
      clients.shutdown();
      leaver.join(30_000);

      assertEquals(List.of(), failures.subList(0, Math.min(3, failures.size())), "no request failed; statuses " + statuses);
      assertEquals(Map.of(200, CLIENTS * REQUESTS_PER_CLIENT), statuses);
      assertTrue(servedBy.getOrDefault(joiningId, 0) > 0, "the worker that joined took requests: " + servedBy);
      await("ctx-1 to be gone", () -> !contextServers(clusterInfo(port)).contains(leavingId));
      JsonNode info = clusterInfo(port);
      assertEquals(2, info.at("/current_workers/context_servers").size(), info.toString());
      assertFalse(leaving.registration().registered());
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        open.get(i).close();
      }
      if (etcd != null) {
        etcd.close();
      }
    }
  }
}
