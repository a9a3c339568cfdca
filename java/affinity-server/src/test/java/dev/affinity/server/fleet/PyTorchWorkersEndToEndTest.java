package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The frontend over in-process pytorch workers (context and generation colocated in one
 * interpreter) with the stand-in tensorrt_llm: a disaggregated request over real HTTP, the sub-agent
 * header, and what each LLM received. The same configuration runs TensorRT-LLM on a GPU node with a
 * real model and interpreter (docs/gpu.md).
 */
class PyTorchWorkersEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  @TempDir Path dir;

  @BeforeAll
  static void available() {
    PyTorchBackend.unavailability(null).ifPresent(why -> assumeTrue(false, why));
  }

  private String pool(String role, Path record) {
    return pool(role, record, "", "{backend: DEFAULT}");
  }

  /**
   * A pytorch pool over the stand-in: two attention-DP ranks with conversation affinity (the ADP
   * router binds a conversation, or a sub-agent to its parent, to a rank only with it);
   * {@code options} ride on the model name.
   */
  private String pool(String role, Path record, String options, String transceiver) {
    return """
            %s:
              instances: 1
              backend: pytorch
              executor:
                python_path: ["%s"]
                model: "standin?record=%s%s"
                kv_events: {rank_wait_ms: 20000}
                llm_args:
                  tensor_parallel_size: 2
                  enable_attention_dp: true
                  attention_dp_config: {kv_cache_routing_conversation_affinity: true}
                  kv_cache_config: {tokens_per_block: 4, enable_block_reuse: true}
                  cache_transceiver_config: %s
        """.formatted(role, System.getProperty("affinity.test.standin"), record, options, transceiver);
  }

  /** A frontend from the YAML head (ending in "workers:") plus pytorch pools recording to the files. */
  private AffinityServer start(String head, Path ctxRecord, Path genRecord) throws Exception {
    return start(head + pool("context", ctxRecord) + pool("generation", genRecord));
  }

  private static AffinityServer start(String yaml) throws Exception {
    DisaggConfig cfg = ConfigLoader.parse(yaml, "pytorch.yaml").config();
    return AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, "t").withPort(0).withAccessLog(AccessLog.none()));
  }

  private static final String HEAD = """
      context_servers: {num_instances: 1}
      generation_servers: {num_instances: 1}
      affinity:
        model: m
        debug_headers: true
        workers:
      """;

  @Test
  void withoutCtxDpRankTheRouteHeaderSaysTheRankCameFromTheKvEvents() throws Exception {
    // Releases whose context output has no ctx_dp_rank (tensorrt_llm/executor/result.py @ a678b91a).
    Path ctxRecord = dir.resolve("ctx.jsonl");
    try (AffinityServer server = start(HEAD + pool("context", ctxRecord, "&ctx_dp_rank=omit", "{backend: DEFAULT}")
        + pool("generation", dir.resolve("gen.jsonl")))) {
      HttpResponse<String> r = post(HttpClient.newHttpClient(), server.port(), "agent-1", null);
      assertEquals(200, r.statusCode(), r.body());
      String route = r.headers().firstValue("x-affinity-route").orElseThrow();
      int served = calls(ctxRecord).get(0).path("rank").asInt();
      assertTrue(route.contains("ctx_rank=" + served + "; ctx_rank_src=kv_events;"), route);
      assertTrue(!route.contains("gen_rank_src"), route);
    }
  }

  @Test
  void thePythonKvTransferGetsItsEndpointAndRequestIdThroughTheFrontend() throws Exception {
    String python = "{backend: NIXL, transceiver_runtime: PYTHON}";
    Path ctxRecord = dir.resolve("ctx.jsonl");
    Path genRecord = dir.resolve("gen.jsonl");
    try (AffinityServer server = start(HEAD + pool("context", ctxRecord, "", python)
        + pool("generation", genRecord, "", python))) {
      HttpResponse<String> r = post(HttpClient.newHttpClient(), server.port(), "agent-1", null);
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(5, JSON.readTree(r.body()).at("/usage/completion_tokens").asInt(), r.body());
      JsonNode g = calls(genRecord).get(0).path("disaggregated_params");
      assertEquals("generation_only", g.path("request_type").asText());
      assertTrue(g.path("ctx_info_endpoint").asText().startsWith("standin-transfer://"), g.toString());
      assertTrue(g.path("disagg_request_id").canConvertToLong(), g.toString());
    }
  }

  @Test
  void aSubagentRequestRunsDisaggregatedAndItsIntentReachesTheContextLlm() throws Exception {
    Path ctxRecord = dir.resolve("ctx.jsonl");
    Path genRecord = dir.resolve("gen.jsonl");
    try (AffinityServer server = start("""
        conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
        subagent_affinity_scope: context
        context_servers: {num_instances: 1, router: {type: conversation}}
        generation_servers: {num_instances: 1}
        affinity:
          model: m
          debug_headers: true
          workers:
        """, ctxRecord, genRecord)) {
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> parent = post(http, server.port(), "agent-1", null);
      assertEquals(200, parent.statusCode(), parent.body());
      HttpResponse<String> child = post(http, server.port(), "sub-1", "agent-1");
      assertEquals(200, child.statusCode(), child.body());
      JsonNode body = JSON.readTree(child.body());
      assertEquals(5, body.at("/usage/completion_tokens").asInt(), child.body());
      String route = child.headers().firstValue("x-affinity-route").orElseThrow();
      assertTrue(route.contains("affinity=agent-1"), route);

      List<JsonNode> ctx = calls(ctxRecord);
      List<JsonNode> gen = calls(genRecord);
      assertEquals(2, ctx.size());
      assertEquals(2, gen.size());
      JsonNode c = ctx.get(1);
      assertEquals("context_only", c.at("/disaggregated_params/request_type").asText());
      assertEquals("sub-1", c.at("/conversation_params/conversation_id").asText());
      assertEquals("agent-1", c.at("/scheduling_params/subagent_affinity_id").asText());
      assertEquals(ctx.get(0).path("rank").asInt(), c.path("rank").asInt(), "the sub-agent ran on its parent's rank");
      assertTrue(route.contains("ctx_rank=" + c.path("rank").asInt()), route);
      JsonNode g = gen.get(1);
      assertEquals("generation_only", g.at("/disaggregated_params/request_type").asText());
      assertEquals(c.path("request_id").asLong(), g.at("/disaggregated_params/ctx_request_id").asLong(),
          "the context phase params of the context LLM reached the generation LLM");
      assertEquals("sub-1", g.at("/conversation_params/conversation_id").asText());
    }
  }

  @Test
  void withTokenizerModelTheLlmsTokenizerAndChatTemplateAreUsed() throws Exception {
    Path ctxRecord = dir.resolve("ctx.jsonl");
    Path genRecord = dir.resolve("gen.jsonl");
    try (AffinityServer server = start("""
        context_servers: {num_instances: 1}
        generation_servers: {num_instances: 1}
        affinity:
          model: m
          tokenizer: model
          workers:
        """, ctxRecord, genRecord)) {
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(
              "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 3}"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      // The stand-in's tokenizer: BOS 1, then one id per character of its chat template.
      String rendered = "<|user|>hi\n<|assistant|>";
      JsonNode prompt = calls(ctxRecord).get(0).path("prompt_token_ids");
      assertEquals(rendered.length() + 1, prompt.size(), prompt.toString());
      assertEquals(1, prompt.get(0).asInt());
      assertEquals('<', prompt.get(1).asInt());
      // The answer is the generated ids decoded by the same tokenizer (the stand-in's ids: 1 + (base + 7k) % 1000).
      JsonNode gen = calls(genRecord).get(0);
      assertEquals(prompt, gen.path("prompt_token_ids"));
      int base = 0;
      for (JsonNode t : prompt) {
        base += t.asInt();
      }
      base %= 997;
      StringBuilder expected = new StringBuilder();
      for (int k = 1; k <= 3; k++) {
        int id = 1 + (base + 7 * k) % 1000;
        if (id != 1) {
          expected.appendCodePoint(id);
        }
      }
      assertEquals(expected.toString(), JSON.readTree(r.body()).at("/choices/0/message/content").asText());
    }
  }

  private static HttpResponse<String> post(HttpClient http, int port, String session, String parent) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
        .header("Content-Type", "application/json").header("X-Session-ID", session)
        .POST(HttpRequest.BodyPublishers.ofString(
            "{\"model\": \"m\", \"prompt\": [11, 12, 13, 14, 15, 16, 17, 18, 19], \"max_tokens\": 5}"));
    if (parent != null) {
      b.header("X-Dynamo-Parent-Session-ID", parent);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static List<JsonNode> calls(Path record) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (String line : Files.readAllLines(record)) {
      JsonNode n = JSON.readTree(line);
      if ("generate_async".equals(n.path("call").asText())) {
        out.add(n);
      }
    }
    return out;
  }
}
