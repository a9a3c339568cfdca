package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.python.PyTorchBackend;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * Every example configuration under docs/examples with in-process pytorch workers runs against the
 * stand-in tensorrt_llm: its llm_args exactly as written (the stand-in refuses keys TensorRT-LLM does
 * not know), only the model replaced. A parent and a sub-agent request go through the frontend.
 */
class ExampleConfigsOnStandInTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path EXAMPLES = Path.of("../../docs/examples");
  @TempDir Path dir;

  @BeforeAll
  static void available() {
    PyTorchBackend.unavailability(null).ifPresent(why -> assumeTrue(false, why));
  }

  @Test
  void everyPytorchExampleRunsOnTheStandIn() throws Exception {
    List<String> ran = new ArrayList<>();
    try (Stream<Path> files = Files.list(EXAMPLES)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
        if (run(file)) {
          ran.add(file.getFileName().toString());
        }
      }
    }
    assertFalse(ran.isEmpty(), "no example under " + EXAMPLES + " has in-process pytorch workers");
    assertTrue(ran.contains("gpu-inprocess.yaml"), ran::toString);
  }

  /** Runs one example if it has pytorch worker pools; false when it has none. */
  @SuppressWarnings("unchecked")
  private boolean run(Path file) throws Exception {
    Map<String, Object> yaml = new Yaml().load(Files.readString(file));
    Map<String, Object> affinity = (Map<String, Object>) yaml.get("affinity");
    Map<String, Object> workers = affinity == null ? null : (Map<String, Object>) affinity.get("workers");
    if (workers == null) {
      return false;
    }
    Map<String, Path> records = new LinkedHashMap<>();
    Map<String, Map<String, Object>> llmArgs = new LinkedHashMap<>();
    for (Map.Entry<String, Object> pool : workers.entrySet()) {
      Map<String, Object> p = (Map<String, Object>) pool.getValue();
      if (!"pytorch".equals(p.get("backend"))) {
        continue;
      }
      Map<String, Object> executor = (Map<String, Object>) p.get("executor");
      Path record = dir.resolve(file.getFileName() + "-" + pool.getKey() + ".jsonl");
      executor.put("model", "standin?record=" + record);
      executor.put("python_path", List.of(System.getProperty("affinity.test.standin")));
      records.put(pool.getKey(), record);
      llmArgs.put(pool.getKey(), (Map<String, Object>) executor.getOrDefault("llm_args", Map.of()));
    }
    if (records.isEmpty()) {
      return false;
    }
    yaml.put("hostname", "127.0.0.1");
    DisaggConfig cfg = ConfigLoader.parse(new Yaml().dump(yaml), file.getFileName().toString()).config();
    String model = (String) affinity.get("model");
    try (AffinityServer server = AffinityServer.start(cfg,
        FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()))) {
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> parent = post(http, server.port(), model, "agent-1", null);
      assertEquals(200, parent.statusCode(), file + ": " + parent.body());
      HttpResponse<String> child = post(http, server.port(), model, "sub-1", "agent-1");
      assertEquals(200, child.statusCode(), file + ": " + child.body());
    }
    for (Map.Entry<String, Path> pool : records.entrySet()) {
      JsonNode init = calls(pool.getValue(), "LLM").get(0);
      for (String key : llmArgs.get(pool.getKey()).keySet()) {
        assertTrue(init.path("kwargs").has(key), file + ": " + pool.getKey() + " LLM got " + key);
      }
      assertEquals(2, calls(pool.getValue(), "generate_async").size(), file + ": " + pool.getKey());
    }
    Map<String, Object> ctxArgs = llmArgs.get("context");
    if (ctxArgs != null && ctxArgs.get("attention_dp_config") instanceof Map<?, ?> adp
        && Boolean.TRUE.equals(adp.get("kv_cache_routing_conversation_affinity"))) {
      List<JsonNode> ctx = calls(records.get("context"), "generate_async");
      assertEquals(ctx.get(0).path("rank").asInt(), ctx.get(1).path("rank").asInt(),
          file + ": the sub-agent ran on its parent's context rank");
    }
    return true;
  }

  private static HttpResponse<String> post(HttpClient http, int port, String model, String session, String parent)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
        .header("Content-Type", "application/json").header("X-Session-ID", session)
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"" + model
            + "\", \"prompt\": [11, 12, 13, 14, 15, 16, 17, 18, 19], \"max_tokens\": 4}"));
    if (parent != null) {
      b.header("X-Dynamo-Parent-Session-ID", parent);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static List<JsonNode> calls(Path record, String kind) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (String line : Files.readAllLines(record)) {
      JsonNode n = JSON.readTree(line);
      if (kind.equals(n.path("call").asText())) {
        out.add(n);
      }
    }
    return out;
  }
}
