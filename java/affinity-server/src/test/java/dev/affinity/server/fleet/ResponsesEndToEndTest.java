package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.HttpResponseFor;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.responses.FunctionTool;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseOutputItem;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import dev.affinity.config.DisaggConfig;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * OpenAI's Responses API (stateless form) end to end over real HTTP, with the official OpenAI Java SDK's Responses
 * client: the embedded default fleet (two context and one generation CPU-executor worker, in process), whole and
 * streamed responses, instructions, a function tool, usage, the session headers and the route header, and the
 * refusal of stored-state features.
 */
class ResponsesEndToEndTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String MODEL = "affinity-sim";
  static final String INSTRUCTIONS = "You are a careful coding agent with tools. ".repeat(30);
  static AffinityServer server;
  static HttpClient http;
  static String base;
  static OpenAIClient client;

  @BeforeAll
  static void start() throws Exception {
    DisaggConfig cfg = AnthropicEndToEndTest.defaultFleet();
    server = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION).withPort(0)
        .withAccessLog(AccessLog.none()));
    base = "http://127.0.0.1:" + server.port();
    http = HttpClient.newHttpClient();
    client = OpenAIOkHttpClient.builder().baseUrl(base + "/v1").apiKey("unused").maxRetries(0).build();
  }

  @AfterAll
  static void stop() {
    client.close();
    server.close();
  }

  static HttpResponse<String> post(String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/v1/responses"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static ResponseCreateParams params(String input, long maxOutputTokens) {
    return ResponseCreateParams.builder().model(MODEL).instructions(INSTRUCTIONS).input(input)
        .maxOutputTokens(maxOutputTokens).store(false).build();
  }

  static String text(Response r) {
    StringBuilder sb = new StringBuilder();
    for (ResponseOutputItem item : r.output()) {
      item.message().ifPresent(m -> m.content().forEach(c -> c.outputText().ifPresent(t -> sb.append(t.text()))));
    }
    return sb.toString();
  }

  @Test
  void aResponseRunsThroughTheDisaggregatedFleetWithTheSdk() {
    HttpResponseFor<Response> raw = client.responses().withRawResponse().create(params("Hello there", 6));
    assertEquals(200, raw.statusCode());
    Response r = raw.parse();
    r.validate();
    assertTrue(r.id().startsWith("resp_"), r.id());
    assertEquals(MODEL, r.model().asString());
    assertEquals(INSTRUCTIONS, r.instructions().orElseThrow().asString(), "instructions are repeated");
    assertEquals(ResponseStatus.INCOMPLETE, r.status().orElseThrow(), "stopped at max_output_tokens");
    assertEquals("max_output_tokens", r.incompleteDetails().orElseThrow().reason().orElseThrow().asString());
    assertEquals(1, r.output().size());
    assertTrue(r.output().get(0).isMessage());
    assertFalse(text(r).isEmpty());
    assertEquals(6, r.usage().orElseThrow().outputTokens());
    assertTrue(r.usage().orElseThrow().inputTokens() > 250, "the instructions are in the prompt: " + r.usage());
    assertEquals(r.usage().orElseThrow().inputTokens() + 6, r.usage().orElseThrow().totalTokens());
    List<String> header = raw.headers().values("x-affinity-route");
    assertTrue(AnthropicEndToEndTest.route(header, "ctx").startsWith("ctx-")
        && "gen-0".equals(AnthropicEndToEndTest.route(header, "gen")), header.toString());
  }

  @Test
  void aStreamedResponseIsTheResponseEventSequence() {
    List<String> types = new ArrayList<>();
    StringBuilder deltas = new StringBuilder();
    List<String> done = new ArrayList<>();
    List<Long> sequence = new ArrayList<>();
    Response[] last = new Response[1];
    try (StreamResponse<ResponseStreamEvent> stream = client.responses().createStreaming(params("Stream it", 7))) {
      stream.stream().forEach(e -> {
        e.validate();
        types.add(type(e));
        e.outputTextDelta().ifPresent(d -> {
          deltas.append(d.delta());
          sequence.add(d.sequenceNumber());
        });
        e.outputTextDone().ifPresent(d -> done.add(d.text()));
        e.incomplete().ifPresent(d -> last[0] = d.response());
        e.completed().ifPresent(d -> last[0] = d.response());
      });
    }
    assertEquals(List.of("response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added"), types.subList(0, 4));
    assertEquals(List.of("response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.incomplete"), types.subList(types.size() - 4, types.size()));
    assertTrue(types.subList(4, types.size() - 4).stream().allMatch("response.output_text.delta"::equals),
        types.toString());
    assertTrue(types.size() > 9, "text streamed delta by delta: " + types);
    for (int i = 1; i < sequence.size(); i++) {
      assertEquals(sequence.get(i - 1) + 1, sequence.get(i), "sequence numbers count up");
    }
    Response r = last[0];
    assertEquals(List.of(deltas.toString()), done, "the deltas concatenate to the done text");
    assertEquals(deltas.toString(), text(r), "and to the final response's text");
    assertEquals(7, r.usage().orElseThrow().outputTokens());
    assertTrue(r.usage().orElseThrow().inputTokens() > 250, r.usage().toString());
  }

  static String type(ResponseStreamEvent e) {
    Map<String, Boolean> known = Map.of("response.created", e.isCreated(), "response.in_progress", e.isInProgress(),
        "response.output_item.added", e.isOutputItemAdded(), "response.content_part.added", e.isContentPartAdded(),
        "response.output_text.delta", e.isOutputTextDelta(), "response.output_text.done", e.isOutputTextDone(),
        "response.content_part.done", e.isContentPartDone(), "response.output_item.done", e.isOutputItemDone(),
        "response.completed", e.isCompleted(), "response.incomplete", e.isIncomplete());
    return known.entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).findFirst().orElse("other");
  }

  @Test
  void theStreamIsFramedWithEventLinesAndNoDone() throws Exception {
    HttpResponse<String> r = post("{\"model\": \"" + MODEL + "\", \"input\": \"hi\", \"max_output_tokens\": 3,"
        + " \"stream\": true}");
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
    assertFalse(r.body().contains("[DONE]"), r.body());
    String[] events = r.body().split("\n\n");
    for (int i = 0; i < events.length; i++) {
      String[] lines = events[i].split("\n");
      assertEquals(2, lines.length, events[i]);
      JsonNode data = JSON.readTree(lines[1].substring("data: ".length()));
      assertEquals(lines[0].substring("event: ".length()), data.get("type").asText(), events[i]);
      assertEquals(i, data.get("sequence_number").asInt(), events[i]);
    }
    assertTrue(events[events.length - 1].startsWith("event: response.incomplete"), r.body());
  }

  @Test
  void aFunctionToolIsPassedThroughAndRepeated() {
    FunctionTool tool = FunctionTool.builder().name("get_weather").description("The weather in a city.")
        .parameters(FunctionTool.Parameters.builder().putAdditionalProperty("type", JsonValue.from("object"))
            .putAdditionalProperty("properties", JsonValue.from(Map.of("city", Map.of("type", "string"))))
            .build())
        .strict(false).build();
    Response r = client.responses().create(params("What is the weather in Oslo?", 4).toBuilder().addTool(tool)
        .build());
    r.validate();
    assertEquals(1, r.tools().size());
    assertEquals("get_weather", r.tools().get(0).asFunction().name());
    assertEquals(4, r.usage().orElseThrow().outputTokens());
  }

  @Test
  void functionCallItemsAndOutputsAreAcceptedAsInput() throws Exception {
    HttpResponse<String> r = post("{\"model\": \"" + MODEL + "\", \"max_output_tokens\": 2, \"store\": false,"
        + " \"tools\": [{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"type\": \"object\"}}],"
        + " \"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_text\", \"text\": \"Weather?\"}]},"
        + " {\"type\": \"function_call\", \"call_id\": \"call_1\", \"name\": \"get_weather\", \"arguments\": \"{}\"},"
        + " {\"type\": \"function_call_output\", \"call_id\": \"call_1\", \"output\": \"rain\"}]}");
    assertEquals(200, r.statusCode(), r.body());
    JsonNode body = JSON.readTree(r.body());
    assertEquals("response", body.get("object").asText());
    assertEquals(2, body.at("/usage/output_tokens").asInt());
  }

  @Test
  void sessionHeadersApplyAsOnChatCompletions() throws Exception {
    String body = "{\"model\": \"" + MODEL + "\", \"instructions\": \"" + INSTRUCTIONS + "\", \"input\": \"%s\","
        + " \"max_output_tokens\": 2}";
    HttpResponse<String> first = post(body.formatted("turn"), "X-Session-ID", "responses-session-1");
    HttpResponse<String> second = post(body.formatted("turn"), "X-Session-ID", "responses-session-1");
    assertEquals(200, second.statusCode(), second.body());
    List<String> h1 = first.headers().allValues("x-affinity-route");
    List<String> h2 = second.headers().allValues("x-affinity-route");
    assertEquals("responses-session-1", AnthropicEndToEndTest.route(h2, "conversation"));
    assertEquals(AnthropicEndToEndTest.route(h1, "ctx"), AnthropicEndToEndTest.route(h2, "ctx"));
    int reused = Integer.parseInt(AnthropicEndToEndTest.route(h2, "reused"));
    assertTrue(reused > 0, h2.toString());
    assertEquals(reused, JSON.readTree(second.body()).at("/usage/input_tokens_details/cached_tokens").asInt());

    HttpResponse<String> child = post(body.formatted("sub-task"), "X-Session-ID", "responses-child-1",
        "X-Dynamo-Parent-Session-ID", "responses-session-1");
    assertEquals(200, child.statusCode(), child.body());
    List<String> hc = child.headers().allValues("x-affinity-route");
    assertEquals("responses-session-1", AnthropicEndToEndTest.route(hc, "affinity"), hc.toString());
    assertEquals(AnthropicEndToEndTest.route(h1, "ctx"), AnthropicEndToEndTest.route(hc, "ctx"));
  }

  @Test
  void apiKeysGuardTheEndpointAsTheChatEndpoint() throws Exception {
    DisaggConfig cfg = AnthropicEndToEndTest.defaultFleet();
    try (AffinityServer keyed = AffinityServer.start(cfg, FrontendOptions.fromConfig(cfg, AffinityServer.VERSION)
        .withPort(0).withAccessLog(AccessLog.none()).withApiKeys(List.of("sk-right")))) {
      String keyedBase = "http://127.0.0.1:" + keyed.port() + "/v1";
      OpenAIClient right = OpenAIOkHttpClient.builder().baseUrl(keyedBase).apiKey("sk-right").maxRetries(0).build();
      OpenAIClient wrong = OpenAIOkHttpClient.builder().baseUrl(keyedBase).apiKey("sk-wrong").maxRetries(0).build();
      try {
        assertEquals(2, right.responses().create(params("with a key", 2)).usage().orElseThrow().outputTokens());
        assertThrows(UnauthorizedException.class, () -> wrong.responses().create(params("with a bad key", 2)));
      } finally {
        right.close();
        wrong.close();
      }
    }
  }

  @Test
  void storedStateFeaturesAreRefusedWithA400NamingTheField() throws Exception {
    BadRequestException e = assertThrows(BadRequestException.class, () -> client.responses()
        .create(params("again", 2).toBuilder().previousResponseId("resp_123").build()));
    assertEquals(400, e.statusCode());
    assertEquals("previous_response_id", e.param().orElseThrow());
    BadRequestException stored = assertThrows(BadRequestException.class, () -> client.responses()
        .create(params("keep it", 2).toBuilder().store(true).build()));
    assertEquals("store", stored.param().orElseThrow());

    HttpResponse<String> ref = post("{\"model\": \"" + MODEL + "\", \"input\": [{\"type\": \"item_reference\","
        + " \"id\": \"msg_1\"}]}");
    assertEquals(400, ref.statusCode());
    JsonNode error = JSON.readTree(ref.body()).get("error");
    assertEquals("input.0.type", error.get("param").asText(), ref.body());
    assertEquals("invalid_request_error", error.get("type").asText());
    assertTrue(error.has("message") && error.has("code"), ref.body());
    HttpResponse<String> search = post("{\"model\": \"" + MODEL + "\", \"input\": \"hi\","
        + " \"tools\": [{\"type\": \"web_search\"}]}");
    assertEquals(400, search.statusCode());
    assertEquals("tools.0.type", JSON.readTree(search.body()).at("/error/param").asText());

    HttpResponse<String> model = post("{\"model\": \"nope\", \"input\": \"hi\"}");
    assertEquals(404, model.statusCode(), model.body());
  }
}
