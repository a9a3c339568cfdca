package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.FrontendOptions;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The main job end to end over real HTTP: the embedded default (3 in-process CPU-executor workers). */
class ServeEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static AffinityServer server;
  static HttpClient http;
  static String base;

  @BeforeAll
  static void start() throws Exception {
    String yaml;
    try (InputStream in = ServeEndToEndTest.class.getResourceAsStream("/dev/affinity/server/sim-workers.yaml")) {
      yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    // the shipped default, 100x faster than modelled time so the tests stay quick
    yaml = yaml.replace("      preset: llama3-70b-h100-tp8\n      kv_blocks_per_rank: 8192", "      preset: llama3-70b-h100-tp8\n      time_scale: 0.01\n      kv_blocks_per_rank: 8192")
        .replace("    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8", "    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8\n      time_scale: 0.01");
    DisaggConfig cfg = ConfigLoader.parse(yaml, "default").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(dev.affinity.server.http.AccessLog.none()));
    base = "http://127.0.0.1:" + server.port();
    http = HttpClient.newHttpClient();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  static HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String route(HttpResponse<?> r, String key) {
    for (String part : r.headers().firstValue("x-affinity-route").orElse("").split("; ")) {
      if (part.startsWith(key + "=")) {
        return part.substring(key.length() + 1);
      }
    }
    return null;
  }

  @Test
  void aChatCompletionRunsThroughTheDisaggregatedFleet() throws Exception {
    HttpResponse<String> r = post("/v1/chat/completions",
        "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}], \"max_tokens\": 6}",
        "X-Session-ID", "agent-e2e");
    assertEquals(200, r.statusCode(), r.body());
    JsonNode body = JSON.readTree(r.body());
    assertEquals("length", body.at("/choices/0/finish_reason").asText());
    assertEquals(6, body.at("/usage/completion_tokens").asInt());
    assertTrue(body.at("/choices/0/disaggregated_params").isMissingNode(), "no handoff state for clients");
    assertTrue(route(r, "ctx").startsWith("ctx-") && route(r, "gen").equals("gen-0"), r.headers().toString());
    assertEquals("agent-e2e", route(r, "conversation"));
  }

  @Test
  void subAgentsRunOnTheParentsContextWorkerAndRank() throws Exception {
    String sys = "You are a careful coding agent with tools. ".repeat(30);
    String body = "{\"model\": \"affinity-sim\", \"messages\": [{\"role\": \"system\", \"content\": \"" + sys + "\"},"
        + "{\"role\": \"user\", \"content\": \"%s\"}], \"max_tokens\": 3}";
    HttpResponse<String> parent = post("/v1/chat/completions", body.formatted("plan"), "X-Session-ID", "parent-e2e");
    assertEquals(200, parent.statusCode(), parent.body());
    Set<String> gens = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> child = post("/v1/chat/completions", body.formatted("task " + i), "X-Session-ID", "child-" + i,
          "X-Dynamo-Parent-Session-ID", "parent-e2e");
      assertEquals(200, child.statusCode(), child.body());
      assertEquals(route(parent, "ctx"), route(child, "ctx"));
      assertEquals(route(parent, "ctx_rank"), route(child, "ctx_rank"), "the executor served it on the parent's rank");
      assertEquals("parent-e2e", route(child, "affinity"));
      assertTrue(Integer.parseInt(route(child, "reused")) > 0, "the parent's prefix was reused");
      gens.add(route(child, "gen") + "#" + route(child, "gen_rank"));
    }
    assertTrue(gens.size() >= 2, "generation spreads over ranks with scope context: " + gens);
  }

  @Test
  void streamingEndsWithDoneAndLosesNoToken() throws Exception {
    HttpResponse<String> r = post("/v1/completions",
        "{\"model\": \"affinity-sim\", \"prompt\": \"Once upon a time\", \"max_tokens\": 7, \"stream\": true,"
            + " \"stream_options\": {\"include_usage\": true}}");
    assertEquals(200, r.statusCode());
    List<String> events = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
    assertEquals("[DONE]", events.get(events.size() - 1));
    JsonNode last = JSON.readTree(events.get(events.size() - 2));
    assertEquals("length", last.at("/choices/0/finish_reason").asText());
    assertEquals(7, last.at("/usage/completion_tokens").asInt(), "usage counts every token streamed");
  }

  @Test
  void badRequestsGetClearErrors() throws Exception {
    HttpResponse<String> malformed = post("/v1/completions", "{\"model\": \"affinity-sim\", \"prompt\": ");
    assertEquals(400, malformed.statusCode());
    assertTrue(malformed.body().contains("line"), malformed.body());
    HttpResponse<String> model = post("/v1/completions", "{\"model\": \"gpt-9\", \"prompt\": \"x\"}");
    assertEquals(404, model.statusCode());
    assertTrue(model.body().contains("gpt-9"), model.body());
    HttpResponse<String> internal = post("/v1/completions",
        "{\"model\": \"affinity-sim\", \"prompt\": \"x\", \"disaggregated_params\": {\"request_type\": \"generation_only\"}}");
    assertEquals(400, internal.statusCode());
    assertTrue(internal.body().contains("disaggregated_params"), internal.body());
  }

  @Test
  void aPromptLongerThanARanksKvCacheIsRefusedBeforeRouting() throws Exception {
    // 300,000 token ids (about 2 MB): more than one rank of the default fleet holds. Sent twice: the
    // second must be answered like the first (a prompt this long once overflowed a router's stack).
    StringBuilder ids = new StringBuilder("[");
    for (int i = 0; i < 300_000; i++) {
      ids.append(i == 0 ? "" : ",").append(1000 + i % 50_000);
    }
    String body = "{\"model\": \"affinity-sim\", \"max_tokens\": 1, \"prompt\": " + ids.append(']') + "}";
    for (int round = 0; round < 2; round++) {
      HttpResponse<String> r = post("/v1/completions", body);
      assertEquals(400, r.statusCode(), r.body());
      JsonNode error = JSON.readTree(r.body()).get("error");
      assertEquals("prompt", error.get("param").asText(), r.body());
      assertTrue(error.get("message").asText().contains("the prompt has 300000 tokens; at most"), r.body());
      assertTrue(error.get("message").asText().contains("KV cache"), r.body());
    }
  }

  @Test
  void metricsExposeRouterDecisionsAndPerWorkerGauges() throws Exception {
    post("/v1/completions", "{\"model\": \"affinity-sim\", \"prompt\": \"metrics\", \"max_tokens\": 2}", "X-Session-ID", "m-1");
    String metrics = http.send(java.net.http.HttpRequest.newBuilder(URI.create(base + "/prometheus/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    assertTrue(metrics.contains("affinity_router_decisions_total{fleet=\"context\",reason=\"new_pin\"}"), metrics);
    assertTrue(metrics.contains("affinity_worker_in_flight{worker=\"ctx-0\"}"), metrics);
    assertTrue(metrics.contains("affinity_worker_prefix_hit_ratio{worker=\"gen-0\"}"), metrics);
    assertTrue(metrics.contains("affinity_router_expired_selections_total{fleet=\"generation\"}"), metrics);
    assertTrue(metrics.contains("affinity_frontend_ttft_seconds"), metrics);
  }

  @Test
  void theOfficialOpenAiJavaClientWorks() {
    OpenAIClient client = OpenAIOkHttpClient.builder().baseUrl(base + "/v1").apiKey("unused").build();
    ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model("affinity-sim")
        .addUserMessage("Hello from the OpenAI Java client").maxCompletionTokens(5).build();
    ChatCompletion completion = client.chat().completions().create(params);
    assertTrue(completion.choices().get(0).message().content().isPresent());
    assertEquals(5L, completion.usage().orElseThrow().completionTokens());
    StringBuilder streamed = new StringBuilder();
    int chunks = 0;
    try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
      for (ChatCompletionChunk c : (Iterable<ChatCompletionChunk>) stream.stream()::iterator) {
        chunks++;
        c.choices().forEach(ch -> ch.delta().content().ifPresent(streamed::append));
      }
    }
    assertTrue(chunks >= 4, "streamed chunk by chunk: " + chunks);
    assertTrue(streamed.length() > 0);
  }
}
