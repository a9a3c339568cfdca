package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.http.HttpResponseFor;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.errors.UnauthorizedException;
import com.anthropic.helpers.MessageAccumulator;
import com.anthropic.models.messages.ContentBlock;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCountTokensParams;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.anthropic.models.messages.StopReason;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Anthropic Messages API end to end over real HTTP, with the official Anthropic Java SDK as the client: the
 * embedded default fleet (two context and one generation CPU-executor worker, in process), whole and streamed
 * answers, count_tokens, the session header, the route header, the error envelope and x-api-key.
 */
class AnthropicEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String MODEL = "affinity-sim";
  static final String SYSTEM = "You are a careful coding agent with tools. ".repeat(30);
  static AffinityServer server;
  static AffinityServer keyed;
  static HttpClient http;
  static String base;
  static AnthropicClient client;

  @BeforeAll
  static void start() throws Exception {
    DisaggConfig cfg = defaultFleet();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()));
    keyed = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()).withApiKeys(List.of("sk-right")));
    base = "http://127.0.0.1:" + server.port();
    http = HttpClient.newHttpClient();
    client = AnthropicOkHttpClient.builder().baseUrl(base).apiKey("unused").maxRetries(0).build();
  }

  /** The shipped default, 100x faster than modelled time (as ServeEndToEndTest). */
  static DisaggConfig defaultFleet() throws Exception {
    String yaml;
    try (InputStream in = AnthropicEndToEndTest.class.getResourceAsStream("/dev/affinity/server/sim-workers.yaml")) {
      yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    yaml = yaml.replace("      preset: llama3-70b-h100-tp8\n      kv_blocks_per_rank: 8192",
            "      preset: llama3-70b-h100-tp8\n      time_scale: 0.01\n      kv_blocks_per_rank: 8192")
        .replace("    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8",
            "    generation:\n      instances: 1\n      ranks: 2\n      preset: llama3-70b-h100-tp8\n      time_scale: 0.01");
    return ConfigLoader.parse(yaml, "default").config();
  }

  @AfterAll
  static void stop() {
    client.close();
    server.close();
    keyed.close();
  }

  static HttpResponse<String> post(String url, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String route(List<String> header, String key) {
    for (String part : (header.isEmpty() ? "" : header.get(0)).split("; ")) {
      if (part.startsWith(key + "=")) {
        return part.substring(key.length() + 1);
      }
    }
    return null;
  }

  static MessageCreateParams params(String user, long maxTokens) {
    return MessageCreateParams.builder().model(MODEL).maxTokens(maxTokens).system(SYSTEM).addUserMessage(user).build();
  }

  @Test
  void aMessageRunsThroughTheDisaggregatedFleetWithTheSdk() {
    HttpResponseFor<Message> raw = client.messages().withRawResponse().create(params("Hello there", 6));
    assertEquals(200, raw.statusCode());
    Message m = raw.parse();
    assertTrue(m.id().startsWith("msg_"), m.id());
    assertEquals(MODEL, m.model().asString());
    assertEquals(StopReason.MAX_TOKENS, m.stopReason().orElseThrow());
    assertEquals(6, m.usage().outputTokens());
    assertTrue(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L) > 250, m.usage().toString());
    assertEquals(1, m.content().size());
    assertFalse(m.content().get(0).text().orElseThrow().text().isEmpty());
    List<String> header = raw.headers().values("x-affinity-route");
    assertTrue(route(header, "ctx").startsWith("ctx-") && "gen-0".equals(route(header, "gen")), header.toString());
  }

  @Test
  void aStreamedMessageIsAnthropicsEventSequence() {
    List<String> types = new ArrayList<>();
    MessageAccumulator acc = MessageAccumulator.create();
    try (StreamResponse<RawMessageStreamEvent> stream = client.messages().createStreaming(params("Stream it", 7))) {
      stream.stream().forEach(e -> {
        acc.accumulate(e);
        types.add(type(e));
      });
    }
    assertEquals("message_start", types.get(0));
    assertEquals("content_block_start", types.get(1));
    assertEquals(List.of("content_block_stop", "message_delta", "message_stop"), types.subList(types.size() - 3,
        types.size()));
    assertTrue(types.subList(2, types.size() - 3).stream().allMatch("content_block_delta"::equals), types.toString());
    Message m = acc.message();
    assertEquals(StopReason.MAX_TOKENS, m.stopReason().orElseThrow());
    assertEquals(7, m.usage().outputTokens());
    assertTrue(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L) > 250, m.usage().toString());
    ContentBlock text = m.content().get(0);
    assertFalse(text.text().orElseThrow().text().isEmpty());
  }

  static String type(RawMessageStreamEvent e) {
    if (e.isMessageStart()) {
      return "message_start";
    } else if (e.isContentBlockStart()) {
      return "content_block_start";
    } else if (e.isContentBlockDelta()) {
      return "content_block_delta";
    } else if (e.isContentBlockStop()) {
      return "content_block_stop";
    } else if (e.isMessageDelta()) {
      return "message_delta";
    } else if (e.isMessageStop()) {
      return "message_stop";
    }
    return "other";
  }

  @Test
  void theStreamIsFramedWithEventLinesAndNoDone() throws Exception {
    HttpResponse<String> r = post(base + "/v1/messages", "{\"model\": \"" + MODEL + "\", \"max_tokens\": 3,"
        + " \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}");
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
    assertFalse(r.body().contains("[DONE]"), r.body());
    String[] events = r.body().split("\n\n");
    for (String event : events) {
      String[] lines = event.split("\n");
      assertEquals(2, lines.length, event);
      String type = lines[0].substring("event: ".length());
      JsonNode data = JSON.readTree(lines[1].substring("data: ".length()));
      assertEquals(type, data.get("type").asText(), event);
    }
    assertTrue(events[events.length - 1].startsWith("event: message_stop"));
  }

  @Test
  void countTokensMatchesThePromptTheMessageReports() {
    long counted = client.messages().countTokens(MessageCountTokensParams.builder().model(MODEL).system(SYSTEM)
        .addUserMessage("Count me").build()).inputTokens();
    Message m = client.messages().create(params("Count me", 2));
    assertEquals(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L), counted);
  }

  @Test
  void theClaudeCodeSessionHeaderPinsTheConversationAndCachedTokensAreReported() throws Exception {
    String body = "{\"model\": \"" + MODEL + "\", \"max_tokens\": 2, \"system\": \"" + SYSTEM + "\","
        + " \"messages\": [{\"role\": \"user\", \"content\": \"turn\"}]}";
    HttpResponse<String> first = post(base + "/v1/messages", body, "x-claude-code-session-id", "cc-session-1");
    HttpResponse<String> second = post(base + "/v1/messages", body, "x-claude-code-session-id", "cc-session-1");
    assertEquals(200, second.statusCode(), second.body());
    List<String> h1 = first.headers().allValues("x-affinity-route");
    List<String> h2 = second.headers().allValues("x-affinity-route");
    assertEquals("cc-session-1", route(h2, "conversation"));
    assertEquals(route(h1, "ctx"), route(h2, "ctx"));
    int reused = Integer.parseInt(route(h2, "reused"));
    assertTrue(reused > 0, h2.toString());
    JsonNode usage = JSON.readTree(second.body()).get("usage");
    assertEquals(reused, usage.get("cache_read_input_tokens").asInt(), usage.toString());
  }

  /**
   * A Claude Code session's next turn is converted from its last body where the bytes agree (KeptTurns): the turn gets
   * the prompt a whole conversion gives (another session sends the same body) and /metrics counts the reuse.
   */
  @Test
  void aSessionsNextTurnIsReadFromItsLastBodyAndGetsTheWholeConversionsPrompt() throws Exception {
    String turn1 = "{\"model\": \"" + MODEL + "\", \"max_tokens\": 2, \"system\": \"" + SYSTEM + "\","
        + " \"messages\": [{\"role\": \"user\", \"content\": \"read a.txt\"}]}";
    String turn2 = turn1.replace("]}", ", {\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\","
        + " \"id\": \"toolu_1\", \"name\": \"read\", \"input\": {\"path\": \"a.txt\"}}]},"
        + " {\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"toolu_1\","
        + " \"content\": \"hello\\nworld\"}]}]}");
    assertEquals(200, post(base + "/v1/messages", turn1, "x-claude-code-session-id", "kept-1").statusCode());
    double before = metric("affinity_kept_turn_bodies_total{result=\"reused\"}");
    HttpResponse<String> next = post(base + "/v1/messages", turn2, "x-claude-code-session-id", "kept-1");
    assertEquals(200, next.statusCode(), next.body());
    assertEquals(before + 1, metric("affinity_kept_turn_bodies_total{result=\"reused\"}"));
    HttpResponse<String> whole = post(base + "/v1/messages", turn2, "x-claude-code-session-id", "kept-2");
    assertEquals(200, whole.statusCode(), whole.body());
    JsonNode a = JSON.readTree(next.body()).get("usage");
    JsonNode b = JSON.readTree(whole.body()).get("usage");
    assertEquals(b.get("input_tokens").asInt() + b.path("cache_read_input_tokens").asInt(),
        a.get("input_tokens").asInt() + a.path("cache_read_input_tokens").asInt(), a + " against " + b);
  }

  private static double metric(String series) throws Exception {
    String text = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
        java.net.URI.create(base + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    for (String line : text.split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    throw new AssertionError(series + " not in /metrics");
  }

  @Test
  void errorsUseAnthropicsEnvelopeNamingTheField() throws Exception {
    HttpResponse<String> r = post(base + "/v1/messages", "{\"model\": \"" + MODEL + "\", \"max_tokens\": 5,"
        + " \"tool_choice\": {\"type\": \"any\"}, \"tools\": [{\"name\": \"t\", \"input_schema\": {\"type\": \"object\"}}],"
        + " \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}");
    assertEquals(400, r.statusCode());
    JsonNode e = JSON.readTree(r.body());
    assertEquals("error", e.get("type").asText(), r.body());
    assertEquals("invalid_request_error", e.at("/error/type").asText());
    assertTrue(e.at("/error/message").asText().startsWith("tool_choice.type"), r.body());

    HttpResponse<String> missing = post(base + "/v1/messages", "{\"model\": \"nope\", \"max_tokens\": 5,"
        + " \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}");
    assertEquals(404, missing.statusCode());
    assertEquals("not_found_error", JSON.readTree(missing.body()).at("/error/type").asText(), missing.body());

    HttpResponse<String> method = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/messages")).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(405, method.statusCode());
    assertEquals("error", JSON.readTree(method.body()).get("type").asText(), method.body());
  }

  @Test
  void xApiKeyIsAcceptedOnEveryEndpoint() throws Exception {
    String keyedBase = "http://127.0.0.1:" + keyed.port();
    AnthropicClient right = AnthropicOkHttpClient.builder().baseUrl(keyedBase).apiKey("sk-right").maxRetries(0)
        .build();
    AnthropicClient wrong = AnthropicOkHttpClient.builder().baseUrl(keyedBase).apiKey("sk-wrong").maxRetries(0)
        .build();
    try {
      assertEquals(2, right.messages().create(params("with a key", 2)).usage().outputTokens());
      assertThrows(UnauthorizedException.class, () -> wrong.messages().create(params("with a bad key", 2)));
    } finally {
      right.close();
      wrong.close();
    }
    String body = "{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    HttpResponse<String> none = post(keyedBase + "/v1/messages/count_tokens", body);
    assertEquals(401, none.statusCode());
    assertEquals("authentication_error", JSON.readTree(none.body()).at("/error/type").asText(), none.body());
    assertEquals(200, post(keyedBase + "/v1/messages/count_tokens", body, "Authorization", "Bearer sk-right")
        .statusCode());
    // one rule on every endpoint: the OpenAI endpoints take x-api-key too (and the tenant is the same either way)
    String chat = "{\"model\": \"" + MODEL + "\", \"max_tokens\": 2, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    assertEquals(200, post(keyedBase + "/v1/chat/completions", chat, "x-api-key", "sk-right").statusCode());
    assertEquals(401, post(keyedBase + "/v1/chat/completions", chat, "x-api-key", "sk-wrong").statusCode());
  }
}
