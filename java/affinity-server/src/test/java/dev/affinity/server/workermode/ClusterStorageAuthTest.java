package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.DisaggConfig;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.cluster.HttpClusterStorageClient;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.cluster.StorageAuth;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.worker.LegAuth;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The frontend's HTTP cluster storage with {@code internal_request_auth_key}: the two attacks an open storage
 * allows (a local process registers a fake worker, which would then receive prompts; or deletes a real worker's
 * key) are refused with 401 unless the request is signed with the key, reads too; a signed request is accepted
 * once (a replay is refused); Affinity workers with the key (in this JVM and an {@code affinity worker} process)
 * join and serve; with API keys and no auth key the
 * configuration is refused. Without the key the storage is open: the frontend refuses to start unless
 * {@code affinity.allow_unauthenticated_cluster_storage: true} says so, and then warns.
 */
class ClusterStorageAuthTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String KEY = "storage-secret";
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  AffinityServer server;
  WorkerServer ctx;
  WorkerProcess gen;

  @AfterEach
  void close() {
    for (AutoCloseable c : new AutoCloseable[] {ctx, gen, server}) {
      if (c != null) {
        try {
          c.close();
        } catch (Exception ignored) {
          // closing what the test opened
        }
      }
    }
  }

  static String config(String extra) {
    return """
        hostname: 127.0.0.1
        port: 8000
        %s
        disagg_cluster:
          cluster_uri: http://127.0.0.1:8000
          cluster_name: guarded
          minimal_instances: {context_servers: 1, generation_servers: 1}
        context_servers: {router: {type: conversation}}
        generation_servers: {router: {type: round_robin}}
        affinity: {model: m, debug_headers: true, api_keys: [client-key]}
        """.formatted(extra);
  }

  int port() {
    return server.port();
  }

  HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return http.send(b.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpRequest.Builder request(String method, String path, Map<String, String> query, byte[] body) {
    StringBuilder uri = new StringBuilder("http://127.0.0.1:" + port() + path);
    char sep = '?';
    for (var e : query.entrySet()) {
      uri.append(sep).append(e.getKey()).append('=').append(java.net.URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
      sep = '&';
    }
    return HttpRequest.newBuilder(URI.create(uri.toString())).method(method,
        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
  }

  static byte[] fakeWorker(String key) {
    return JSON.createObjectNode().put("key", key).put("value", JSON.createObjectNode().put("role", "CONTEXT")
        .put("host", "127.0.0.1").put("port", 9).put("worker_id", "evil").toString()).put("ttl", 60)
        .put("overwrite_if_exists", true).toString().getBytes(StandardCharsets.UTF_8);
  }

  JsonNode clusterInfo() throws Exception {
    return JSON.readTree(send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port() + "/cluster_info"))
        .header("Authorization", "Bearer client-key").GET()).body());
  }

  @Test
  void unsignedStorageRequestsAreRefusedAndSignedOnesAcceptedOnce() throws Exception {
    DisaggConfig cfg = ConfigLoader.parse(config("internal_request_auth_key: " + KEY), "guarded.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
    String uri = "http://127.0.0.1:" + port();
    ctx = WorkerServer.start("{}", WorkerSettings.defaults().withName("ctx-1").withAuthKey(KEY),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "t");
    ctx.joinCluster(new WorkerCluster(uri, "guarded", ServerRole.CONTEXT, 1, 5, Duration.ofMillis(200)));
    // the generation worker in a process of its own (a hand-off between two executors of one process needs one
    // hand-off domain), joining as `affinity worker` does with the key
    gen = WorkerProcess.start("gen-1", "--auth-key", KEY, "--server_role", "generation", "--disagg_cluster_uri", uri,
        "--disagg_cluster_name", "guarded", "--heartbeat_interval_sec", "1", "--inactive_timeout_sec", "5");
    gen.awaitReady(http, Duration.ofSeconds(60));
    ClusterJoinLeaveTest.await("the signed workers to join", () -> {
      try {
        return clusterInfo().path("is_ready").asBoolean();
      } catch (Exception e) {
        return false;
      }
    });
    String realKey = ctx.registration().key();
    String prefix = realKey.substring(0, realKey.lastIndexOf('/') + 1);

    // attack 1: a local process registers a worker of its own
    String evilKey = prefix + "CONTEXT-127.0.0.1:9-evil";
    HttpResponse<String> set = send(request("POST", "/set", Map.of(), fakeWorker(evilKey))
        .header("Content-Type", "application/json"));
    assertEquals(401, set.statusCode(), set.body());
    assertTrue(set.body().contains("internal_request_auth_key"), set.body());
    // attack 2: it deletes a real worker's key
    assertEquals(401, send(request("DELETE", "/delete", Map.of("key", realKey), null)).statusCode());
    // reads and heartbeats are guarded too
    assertEquals(401, send(request("GET", "/get_prefix", Map.of("key_prefix", prefix), null)).statusCode());
    assertEquals(401, send(request("GET", "/get", Map.of("key", realKey), null)).statusCode());
    assertEquals(401, send(request("GET", "/expire", Map.of("key", realKey, "ttl", "1"), null)).statusCode());
    // a client's API key is not a storage credential
    assertEquals(401, send(request("DELETE", "/delete", Map.of("key", realKey), null)
        .header("Authorization", "Bearer client-key")).statusCode());

    // signed with another key, or signed for other query parameters: refused
    StorageAuth.Signer wrong = new StorageAuth.Signer(new InternalAuth("guess"), Clock.systemUTC());
    assertEquals(401, send(request("DELETE", "/delete", Map.of("key", realKey), null)
        .header(LegAuth.HEADER, wrong.sign("DELETE", "/delete", Map.of("key", List.of(realKey)), null))).statusCode());
    StorageAuth.Signer right = new StorageAuth.Signer(new InternalAuth(KEY), Clock.systemUTC());
    String otherKey = right.sign("DELETE", "/delete", Map.of("key", List.of(prefix + "x")), null);
    assertEquals(401, send(request("DELETE", "/delete", Map.of("key", realKey), null).header(LegAuth.HEADER, otherKey))
        .statusCode(), "a signature covers the query: it cannot be moved to another key");

    JsonNode info = clusterInfo();
    assertTrue(info.path("is_ready").asBoolean(), info.toString());
    assertFalse(info.toString().contains(":9"), "no fake worker joined: " + info);

    // a signed read passes once; its replay is refused
    String signed = right.sign("GET", "/get", Map.of("key", List.of(realKey)), null);
    HttpResponse<String> read = send(request("GET", "/get", Map.of("key", realKey), null).header(LegAuth.HEADER, signed));
    assertEquals(200, read.statusCode(), read.body());
    assertEquals(401, send(request("GET", "/get", Map.of("key", realKey), null).header(LegAuth.HEADER, signed))
        .statusCode(), "a replayed signature is refused");

    // the storage client with the key reads what the workers registered; without it, nothing
    try (HttpClusterStorageClient keyed = new HttpClusterStorageClient(uri, new InternalAuth(KEY));
        HttpClusterStorageClient open = new HttpClusterStorageClient(uri, null)) {
      assertEquals(2, keyed.getPrefix(prefix).size());
      assertTrue(open.getPrefix(prefix).isEmpty());
      assertFalse(open.delete(realKey));
    }

    // the cluster still serves
    HttpResponse<String> answer = send(HttpRequest.newBuilder(URI.create(uri + "/v1/completions"))
        .header("Content-Type", "application/json").header("Authorization", "Bearer client-key")
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"m\", \"prompt\": \"hello\", \"max_tokens\": 2}")));
    assertEquals(200, answer.statusCode(), answer.body());
  }

  /** The HTTP storage without internal_request_auth_key and without API keys, {@code extra} in the affinity block. */
  static String openConfig(String extra) {
    return """
        hostname: 127.0.0.1
        port: 8000
        disagg_cluster:
          cluster_uri: http://127.0.0.1:8000
          cluster_name: open
          minimal_instances: {context_servers: 1, generation_servers: 1}
        context_servers: {router: {type: conversation}}
        generation_servers: {router: {type: round_robin}}
        affinity: {model: m%s}
        """.formatted(extra);
  }

  @Test
  void anOpenHttpStorageIsRefusedAtStartUp() {
    // upstream's format: the file loads, but the frontend will not serve an open membership
    DisaggConfig cfg = ConfigLoader.parse(openConfig(""), "open.yaml").config();
    ConfigException e = assertThrows(ConfigException.class, () -> server = AffinityServer.start(cfg,
        FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none())));
    assertEquals(1, e.problems().size(), e.getMessage());
    ConfigProblem p = e.problems().get(0);
    assertEquals("disagg_cluster.cluster_uri", p.keyPath());
    assertEquals(new dev.affinity.config.Location("open.yaml", 4, 16), p.location());
    assertTrue(p.message().contains("any process on this host") && p.message().contains("internal_request_auth_key")
        && p.message().contains("etcd://") && p.message().contains("affinity.allow_unauthenticated_cluster_storage: true"),
        p.message());
  }

  @Test
  void withTheOptInAnOpenHttpStorageStartsWithAWarningNamingTheRisk() throws Exception {
    Logger serverLog = (Logger) LoggerFactory.getLogger(AffinityServer.class);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    serverLog.addAppender(logs);
    try {
      DisaggConfig cfg = ConfigLoader.parse(openConfig(", allow_unauthenticated_cluster_storage: true"), "open.yaml")
          .config();
      server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
      List<String> warnings = logs.list.stream().filter(ev -> ev.getLevel() == Level.WARN)
          .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("cluster storage")).toList();
      assertEquals(1, warnings.size(), warnings.toString());
      assertTrue(warnings.get(0).contains("affinity.allow_unauthenticated_cluster_storage")
          && warnings.get(0).contains("any process on this host can register a worker (which then receives prompts) or "
          + "delete one"), warnings.get(0));
      // and it is what it says: open
      try (HttpClusterStorageClient open = new HttpClusterStorageClient("http://127.0.0.1:" + port(), null)) {
        assertTrue(open.getPrefix("/trtllm-disagg/open/workers/").isEmpty());
      }
      assertEquals(200, send(request("POST", "/set", Map.of(), fakeWorker("/trtllm-disagg/open/not-a-worker"))
          .header("Content-Type", "application/json")).statusCode());
    } finally {
      serverLog.detachAppender(logs);
    }
  }

  @Test
  void apiKeysWithAnOpenHttpStorageAreAConfigError() {
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parse(config(""), "open.yaml"));
    // the opt-in does not lift it: completions guarded by API keys beside an open membership are a contradiction
    assertThrows(ConfigException.class, () -> ConfigLoader.parse(config("").replace("api_keys: [client-key]",
        "api_keys: [client-key], allow_unauthenticated_cluster_storage: true"), "open.yaml"));
    assertTrue(e.getMessage().contains("open.yaml") && e.getMessage().contains("disagg_cluster.cluster_uri")
        && e.getMessage().contains("internal_request_auth_key"), e.getMessage());
  }
}
