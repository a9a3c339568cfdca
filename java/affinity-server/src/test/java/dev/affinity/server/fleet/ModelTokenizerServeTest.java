package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.tokenizer.ModelPromptTokenizer;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.TestModels;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The frontend with {@code affinity.tokenizer} naming a real model's tokenizer directory (Gemma 3, whose template
 * adds its BOS and refuses roles that do not alternate) over HTTP, with embedded CPU-executor workers that simulate
 * over the same ids: prompts are counted in the model's tokens, a chat sharing a prefix with an earlier one reuses
 * it, a conversation the template refuses is a 400 naming {@code messages}, and a prompt long enough to be tokenized
 * off the event loop is answered like any other while a short request on another connection is answered too.
 */
class ModelTokenizerServeTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String SYSTEM = "You are a careful coding agent with tools to read, edit and test code. ".repeat(30);

  private AffinityServer server;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private void start(Path dir) throws Exception {
    start(dir, "");
  }

  /** {@code top}: more top-level lines of the configuration. */
  private void start(Path dir, String top) throws Exception {
    DisaggConfig cfg = ConfigLoader.parse(top + """
        context_servers: {num_instances: 1, router: {type: kv_cache_aware}}
        generation_servers: {num_instances: 1}
        affinity:
          model: m
          debug_headers: true
          tokenizer: "%s"
          workers:
            context: {instances: 1, ranks: 1, time_scale: 0.01, tokens_per_block: 16, kv_blocks_per_rank: 8192}
            generation: {instances: 1, time_scale: 0.01, tokens_per_block: 16, kv_blocks_per_rank: 8192}
        """.formatted(dir), "tokenizer.yaml").config();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()));
  }

  private CompletableFuture<HttpResponse<String>> post(String path, String body) {
    return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String chat(String... roleContent) {
    ObjectNode body = JSON.createObjectNode().put("model", "m").put("max_tokens", 3);
    var messages = body.putArray("messages");
    for (int i = 0; i < roleContent.length; i += 2) {
      messages.addObject().put("role", roleContent[i]).put("content", roleContent[i + 1]);
    }
    return body.toString();
  }

  private static String route(HttpResponse<?> r, String key) {
    for (String part : r.headers().firstValue("x-affinity-route").orElse("").split("; ")) {
      if (part.startsWith(key + "=")) {
        return part.substring(key.length() + 1);
      }
    }
    return null;
  }

  @Test
  void chatsAndCompletionsAreCountedAndCachedInTheModelsTokens() throws Exception {
    Path dir = TestModels.dir(TestModels.GEMMA3);
    start(dir);
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      String first = chat("system", SYSTEM, "user", "Read the file.");
      HttpResponse<String> r = post("/v1/chat/completions", first).get();
      assertEquals(200, r.statusCode(), r.body());
      String rendered = "<bos><start_of_turn>user\n" + SYSTEM + "\n\nRead the file.<end_of_turn>\n"
          + "<start_of_turn>model\n";
      assertEquals(tokenizer.encode(rendered, false).length,
          JSON.readTree(r.body()).at("/usage/prompt_tokens").asInt(), "Gemma's template, in Gemma's tokens");

      HttpResponse<String> second = post("/v1/chat/completions", chat("system", SYSTEM, "user", "Now test it.")).get();
      assertEquals(200, second.statusCode(), second.body());
      assertTrue(Integer.parseInt(route(second, "reused")) > 0, "the shared prefix is reused: " + second.headers());

      HttpResponse<String> completion = post("/v1/completions",
          "{\"model\": \"m\", \"prompt\": \"Hello world\", \"max_tokens\": 2}").get();
      assertEquals(200, completion.statusCode(), completion.body());
      assertEquals(tokenizer.encode("Hello world", true).length,
          JSON.readTree(completion.body()).at("/usage/prompt_tokens").asInt(), "a completion gets Gemma's BOS");
      String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString()).body();
      assertEquals(0.0, metric(metrics, "affinity_tokenizer_encodes_total{engine=\"java\"}"), metrics);
      assertTrue(metric(metrics, "affinity_tokenizer_encodes_total{engine=\"rust\"}") > 0, "Gemma 3 is Rust's");
    }
  }

  /**
   * A conversation's turns reuse the frontend's kept prompt ({@code affinity.prompt_prefix_bytes}): the second turn's
   * ids are the whole encoding's (the worker's usage counts them, its KV reuses the first turn's blocks) and
   * {@code /metrics} shows the kept conversation and the ids it lent.
   */
  @Test
  void aConversationsNextTurnReusesTheKeptPromptsIds() throws Exception {
    Path dir = TestModels.dir(TestModels.QWEN3);
    start(dir);
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      String[] turn1 = {"system", SYSTEM, "user", "Read the file."};
      HttpResponse<String> first = post("/v1/chat/completions", chat(turn1), "s1").get();
      assertEquals(200, first.statusCode(), first.body());
      String[] turn2 = {"system", SYSTEM, "user", "Read the file.", "assistant", "It has 3 functions.", "user",
          "Now test them."};
      HttpResponse<String> second = post("/v1/chat/completions", chat(turn2), "s1").get();
      assertEquals(200, second.statusCode(), second.body());
      String rendered = tokenizer.renderChat(new dev.affinity.tokenizer.ChatInput(List.of(
          java.util.Map.of("role", "system", "content", SYSTEM), java.util.Map.of("role", "user", "content", "Read the file."),
          java.util.Map.of("role", "assistant", "content", "It has 3 functions."),
          java.util.Map.of("role", "user", "content", "Now test them.")), null, true, java.util.Map.of()));
      assertEquals(tokenizer.encode(rendered, false).length,
          JSON.readTree(second.body()).at("/usage/prompt_tokens").asInt(), "the whole encoding's ids");
      assertTrue(Integer.parseInt(route(second, "reused")) > 0, "the first turn's blocks are reused: " + second.headers());
      String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString()).body();
      assertTrue(metric(metrics, "affinity_prompt_prefix_entries") >= 1, metrics);
      assertTrue(metric(metrics, "affinity_prompt_prefix_bytes") > 0, metrics);
      assertTrue(metric(metrics, "affinity_prompt_prefix_tokens_total{source=\"reused\"}") > 0, metrics);
      assertEquals(1.0, metric(metrics, "affinity_prompt_prefix_turns_total{result=\"reused\"}"), metrics);
      assertTrue(metric(metrics, "affinity_tokenizer_encodes_total{engine=\"java\"}") > 0, "Qwen3 is encoded in Java");
      // the second body was read from the first where their bytes agree (affinity.kept_turn_bytes)
      assertEquals(1.0, metric(metrics, "affinity_kept_turn_bodies_total{result=\"reused\"}"), metrics);
      assertEquals(1.0, metric(metrics, "affinity_kept_turn_bodies_total{result=\"whole\"}"), metrics);
      assertTrue(metric(metrics, "affinity_kept_turn_body_bytes_total{source=\"reused\"}") > 0, metrics);
      assertEquals(1.0, metric(metrics, "affinity_kept_turn_entries"), metrics);

      // the client ends the session (X-Dynamo-Session-Final): its kept prompt goes with it
      HttpResponse<String> last = http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
              + "/v1/chat/completions")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
          .header("X-Session-ID", "s1").header("X-Dynamo-Session-Final", "true")
          .POST(HttpRequest.BodyPublishers.ofString(chat(turn2))).build(), HttpResponse.BodyHandlers.ofString()).get();
      assertEquals(200, last.statusCode(), last.body());
      String after = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString()).body();
      assertEquals(0.0, metric(after, "affinity_prompt_prefix_entries"), after);
      assertEquals(0.0, metric(after, "affinity_kept_turn_entries"), after);
    }
  }

  /**
   * A sub-agent's first turn (a session of its own, its parent's in {@code X-Dynamo-Parent-Session-ID}) re-sends its
   * parent's prefix: its body is read from the parent's kept body where the bytes agree, and its prompt is the whole
   * encoding's.
   */
  @Test
  void aSubagentsFirstTurnIsReadFromItsParentsKeptBody() throws Exception {
    Path dir = TestModels.dir(TestModels.QWEN3);
    start(dir, "conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID\n");
    try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
      String[] parent = {"system", SYSTEM, "user", "Read the file.", "assistant", "It has 3 functions."};
      assertEquals(200, post("/v1/chat/completions", chat(parent), "p1").get().statusCode());
      String[] child = {"system", SYSTEM, "user", "Read the file.", "assistant", "It has 3 functions.", "user",
          "Test the second one."};
      HttpResponse<String> r = http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
              + "/v1/chat/completions")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
          .header("X-Session-ID", "c1").header("X-Dynamo-Parent-Session-ID", "p1")
          .POST(HttpRequest.BodyPublishers.ofString(chat(child))).build(), HttpResponse.BodyHandlers.ofString()).get();
      assertEquals(200, r.statusCode(), r.body());
      List<java.util.Map<String, Object>> messages = new java.util.ArrayList<>();
      for (int i = 0; i < child.length; i += 2) {
        messages.add(java.util.Map.<String, Object>of("role", child[i], "content", child[i + 1]));
      }
      String rendered = tokenizer.renderChat(new dev.affinity.tokenizer.ChatInput(messages, null, true,
          java.util.Map.of()));
      assertEquals(tokenizer.encode(rendered, false).length,
          JSON.readTree(r.body()).at("/usage/prompt_tokens").asInt(), "the whole encoding's ids");
      String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString()).body();
      assertEquals(1.0, metric(metrics, "affinity_kept_turn_bodies_total{result=\"reused\"}"), metrics);
      assertEquals(2.0, metric(metrics, "affinity_kept_turn_entries"), "the parent's turn and the sub-agent's own");
    }
  }

  private CompletableFuture<HttpResponse<String>> post(String path, String body, String session) {
    return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json").header("X-Session-ID", session)
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static double metric(String text, String name) {
    for (String line : text.split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{") && name.contains("{") && line.startsWith(name)) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return Double.NaN;
  }

  @Test
  void aConversationTheTemplateRefusesIsA400NamingMessages() throws Exception {
    start(TestModels.dir(TestModels.GEMMA3));
    HttpResponse<String> r = post("/v1/chat/completions", chat("user", "one", "user", "two")).get();
    assertEquals(400, r.statusCode(), r.body());
    JsonNode error = JSON.readTree(r.body()).path("error");
    assertEquals("messages", error.path("param").asText(), r.body());
    assertTrue(error.path("message").asText().contains("Conversation roles must alternate"), r.body());
  }

  @Test
  void aLongPromptIsTokenizedOffTheLoopAndAnsweredBesideAShortOne() throws Exception {
    start(TestModels.dir(TestModels.QWEN3));
    String longText = "def handler(request):\n\treturn route(request)  # agent context\n"
        .repeat(ModelPromptTokenizer.LONG_PROMPT_CHARS / 50 + 100);
    assertTrue(longText.length() >= ModelPromptTokenizer.LONG_PROMPT_CHARS);
    List<CompletableFuture<HttpResponse<String>>> calls = List.of(
        post("/v1/chat/completions", chat("user", longText)),
        post("/v1/chat/completions", chat("user", "short")),
        post("/v1/completions", JSON.createObjectNode().put("model", "m").put("prompt", longText).put("max_tokens", 2)
            .toString()));
    for (CompletableFuture<HttpResponse<String>> c : calls) {
      HttpResponse<String> r = c.get();
      assertEquals(200, r.statusCode(), r.body());
      assertFalse(JSON.readTree(r.body()).path("choices").isEmpty(), r.body());
    }
    // a long prompt the template refuses still gets its 400, from the tokenizing thread
    start2(TestModels.dir(TestModels.GEMMA3));
    HttpResponse<String> refused = post("/v1/chat/completions", chat("user", longText, "user", "again")).get();
    assertEquals(400, refused.statusCode(), refused.body());
    assertEquals("messages", JSON.readTree(refused.body()).at("/error/param").asText(), refused.body());
  }

  private void start2(Path dir) throws Exception {
    server.close();
    start(dir);
  }
}
