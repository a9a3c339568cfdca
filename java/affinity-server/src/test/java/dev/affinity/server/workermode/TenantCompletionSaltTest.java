package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code affinity.tenant_isolation} on {@code /v1/completions} in front of {@code affinity worker} processes: the
 * frontend salts a completion by its tenant on the worker too (a completion body has no {@code cache_salt}, so the
 * salt travels in Affinity's signed header), so key B sending key A's prompt to the same worker and rank reads 0
 * cached tokens, while key A reuses its own prefix.
 */
class TenantCompletionSaltTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String KEY = "tenant-salt-secret";
  /** One rank: every request lands on the same rank of the same worker. */
  static final String ONE_RANK = "{\"num_ranks\": 1, \"tokens_per_block\": 16, \"kv_blocks_per_rank\": 1024, "
      + HandoffReleaseTest.ZERO_TIMING + "}";

  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  final List<WorkerProcess> processes = new ArrayList<>();
  AffinityServer server;

  @AfterEach
  void stop() throws Exception {
    WorkerProcess.closeAll(server, processes);
  }

  WorkerProcess launch(String name) throws Exception {
    WorkerProcess p = WorkerProcess.start(name, "--executor-json", ONE_RANK, "--auth-key", KEY, "--io-threads", "1");
    processes.add(p);
    p.awaitReady(http, Duration.ofSeconds(60));
    return p;
  }

  /** The prompt's usage as the client reads it: {prompt_tokens, cached_tokens}. */
  int[] complete(String apiKey, String prompt) throws Exception {
    String body = JSON.writeValueAsString(JSON.createObjectNode().put("model", "m").put("max_tokens", 2)
        .put("prompt", prompt));
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
            + "/v1/completions")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + apiKey).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    JsonNode usage = JSON.readTree(r.body()).path("usage");
    return new int[] {usage.path("prompt_tokens").asInt(), usage.path("prompt_tokens_details").path("cached_tokens")
        .asInt(0)};
  }

  @Test
  void anotherTenantsCompletionReadsNoneOfTheFirstTenantsCachedTokens() throws Exception {
    WorkerProcess ctx = launch("ctx-1");
    WorkerProcess gen = launch("gen-1");
    String yaml = """
        hostname: 127.0.0.1
        port: 8000
        internal_request_auth_key: "%s"
        context_servers: {num_instances: 1, urls: ["%s"], router: {type: round_robin}}
        generation_servers: {num_instances: 1, urls: ["%s"], router: {type: round_robin}}
        affinity: {model: m, request_timeout_seconds: 20, api_keys: [key-a, key-b], tenant_isolation: true}
        """.formatted(KEY, ctx.id(), gen.id());
    DisaggConfig cfg = ConfigLoader.parse(yaml, "tenants.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));

    String prompt = "a prompt of its own that only key A has sent before, " + "with many words in it ".repeat(240);
    int[] first = complete("key-a", prompt);
    assertTrue(first[0] > 1000, "a long prompt: " + first[0] + " tokens");
    int[] again = complete("key-a", prompt);
    assertTrue(again[1] > 0, "key A reuses its own prefix: " + again[1] + " cached tokens");

    int[] other = complete("key-b", prompt);
    assertEquals(first[0], other[0], "the same prompt");
    assertEquals(0, other[1], "key B reads none of key A's cache on the same worker and rank");
    int[] otherAgain = complete("key-b", prompt);
    assertTrue(otherAgain[1] > 0, "key B reuses its own: " + otherAgain[1] + " cached tokens");
  }
}
