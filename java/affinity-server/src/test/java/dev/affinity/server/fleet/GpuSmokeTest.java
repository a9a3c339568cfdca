package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.nativebridge.gpu.GpuInventory;
import dev.affinity.nativebridge.python.PyTorchBackend;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * On a GPU node: one disaggregated request end to end through TensorRT-LLM itself, context and
 * generation LLMs colocated on GPU 0 in this JVM (backend pytorch, cache transceiver), then a
 * sub-agent sharing its parent's prefix. Tagged gpu (excluded from the default build) and skipped
 * unless a GPU is seen, the pytorch backend can run, and $AFFINITY_GPU_MODEL names a model.
 * Run it with scripts/gpu/smoke --junit (docs/gpu.md).
 */
@Tag("gpu")
class GpuSmokeTest {
  private static final Logger log = LoggerFactory.getLogger(GpuSmokeTest.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Skips (with the reason) off a GPU node; a per-test assumption so that reports show the skip. */
  private static void assumeGpuNode() {
    GpuInventory gpus = GpuInventory.detect();
    assumeTrue(gpus.hasGpu(), gpus.describe());
    PyTorchBackend.unavailability(null).ifPresent(why -> assumeTrue(false, why));
    String model = System.getenv("AFFINITY_GPU_MODEL");
    assumeTrue(model != null && !model.isBlank(), "set AFFINITY_GPU_MODEL to a model directory or Hugging Face id");
    log.info("GPU smoke test on {}", gpus.describe());
  }

  private static String pool(String role, String model) {
    return """
            %s:
              instances: 1
              backend: pytorch
              executor:
                model: "%s"
                env: {CUDA_VISIBLE_DEVICES: "0"}
                llm_args:
                  kv_cache_config: {enable_block_reuse: true, free_gpu_memory_fraction: 0.35}
                  cache_transceiver_config: {backend: DEFAULT}
        """.formatted(role, model);
  }

  @Test
  void aDisaggregatedRequestAndASubagentRunOnTensorRtLlm() throws Exception {
    assumeGpuNode();
    String model = System.getenv("AFFINITY_GPU_MODEL");
    DisaggConfig cfg = ConfigLoader.parse("""
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        context_servers: {num_instances: 1, router: {type: conversation}}
        generation_servers: {num_instances: 1}
        affinity:
          model: smoke
          tokenizer: model
          debug_headers: true
          request_timeout_seconds: 600
          workers:
        """ + pool("context", model) + pool("generation", model), "gpu-smoke.yaml").config();
    long t0 = System.nanoTime();
    try (AffinityServer server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "gpu").withPort(0)
        .withAccessLog(AccessLog.none()))) {
      log.info("two LLMs built in {} s", (System.nanoTime() - t0) / 1_000_000_000);
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      String system = "You are a careful assistant. ".repeat(40);
      HttpResponse<String> parent = chat(http, server.port(), "agent-1", null, system, "Name three prime numbers.");
      HttpResponse<String> child = chat(http, server.port(), "sub-1", "agent-1", system, "Name three even numbers.");
      assertFalse(JSON.readTree(parent.body()).at("/choices/0/message/content").asText().isEmpty(), parent.body());
      String route = child.headers().firstValue("x-affinity-route").orElseThrow();
      Matcher reused = Pattern.compile("reused=(\\d+)").matcher(route);
      assertTrue(reused.find() && Integer.parseInt(reused.group(1)) > 0,
          "the sub-agent reused its parent's prefix on the context instance (TensorRT-LLM's cached_tokens): " + route);
      Matcher rank = Pattern.compile("ctx_rank=(\\d+)(; ctx_rank_src=(\\w+))?").matcher(route);
      assertTrue(rank.find(), "the sub-agent's served context rank is unknown: " + route);
      String source = rank.group(3) == null ? "executor" : rank.group(3);
      assertFalse(source.equals("router"), "no one but the router knows the sub-agent's context rank: " + route);
      log.info("served context rank of the sub-agent: {} (source: {})", rank.group(1), source);
    }
  }

  private static HttpResponse<String> chat(HttpClient http, int port, String session, String parent, String system,
      String question)
      throws Exception {
    String body = JSON.createObjectNode().put("model", "smoke").put("max_tokens", 32)
        .set("messages", JSON.createArrayNode()
            .add(JSON.createObjectNode().put("role", "system").put("content", system))
            .add(JSON.createObjectNode().put("role", "user").put("content", question))).toString();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
        .timeout(Duration.ofMinutes(10)).header("Content-Type", "application/json").header("X-Session-ID", session)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (parent != null) {
      b.header("X-Dynamo-Parent-Session-ID", parent);
    }
    long start = System.nanoTime();
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertEquals(200, r.statusCode(), r.body());
    JsonNode json = JSON.readTree(r.body());
    log.info("{}: {} ms, route [{}], usage {}, answer: {}", session, ms, r.headers().firstValue("x-affinity-route").orElse("?"),
        json.path("usage"), json.at("/choices/0/message/content").asText());
    return r;
  }
}
