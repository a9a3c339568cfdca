package dev.affinity.server.http;

import static dev.affinity.server.http.Fixtures.CHAT;
import static dev.affinity.server.http.Fixtures.COMPLETION;
import static dev.affinity.server.http.Fixtures.DISAGG_ID;
import static dev.affinity.server.http.Fixtures.ROUTE;
import static dev.affinity.server.http.Fixtures.STREAMING_COMPLETION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolException;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The frontend over real HTTP, with the JDK client and a scripted backend. */
class FrontendServerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private static HttpClient client;
  private static ExecutorService pool;

  private final TestBackend backend = new TestBackend();
  private final RecordingAccessLog accessLog = new RecordingAccessLog();
  private final List<FrontendServer> servers = new ArrayList<>();
  private PrometheusMeterRegistry registry;
  private FrontendServer server;

  @BeforeAll
  static void client() {
    client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(TIMEOUT).build();
    pool = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void closeClient() {
    pool.shutdownNow();
  }

  @BeforeEach
  void startDefault() throws Exception {
    server = start(options());
  }

  @AfterEach
  void stop() {
    servers.forEach(FrontendServer::close);
  }

  private FrontendOptions options() {
    return FrontendOptions.defaults().withModels(List.of("test-model")).withVersion("9.9.9-test")
        .withAccessLog(accessLog).withIoThreads(2);
  }

  private FrontendServer start(FrontendOptions options) throws Exception {
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    FrontendServer s = FrontendServer.start(options, backend, registry);
    servers.add(s);
    return s;
  }

  private URI uri(FrontendServer s, String path) {
    return URI.create("http://127.0.0.1:" + s.port() + path);
  }

  private HttpResponse<String> post(FrontendServer s, String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(s, path)).timeout(TIMEOUT)
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, String body, String... headers) throws Exception {
    return post(server, path, body, headers);
  }

  private HttpResponse<String> get(FrontendServer s, String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri(s, path)).timeout(TIMEOUT).GET();
    if (headers.length > 0) {
      b.headers(headers);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path, String... headers) throws Exception {
    return get(server, path, headers);
  }

  private static JsonNode json(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body());
  }

  /** Asserts an OpenAI-style error body and returns its inner object. */
  private static JsonNode error(HttpResponse<String> r, int status) throws Exception {
    assertEquals(status, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("content-type").orElse(""));
    JsonNode e = json(r).get("error");
    assertNotNull(e, r.body());
    assertEquals(status, e.get("code").asInt());
    assertTrue(e.get("message").asText().length() > 0);
    assertTrue(e.has("type") && e.has("param"), r.body());
    return e;
  }

  // ---- backend routes ----

  @Test
  void backendRoutesPassTheSameChecksAndAnswerJson() throws Exception {
    backend.extras = Map.of(
        "/server_info", ExtraEndpoint.get(body -> JSON.createObjectNode().put("tokens_per_block", 32)),
        "/kv_cache_events", ExtraEndpoint.post(body -> List.of(body.length)),
        "/refuses", ExtraEndpoint.get(body -> {
          throw ProtocolException.invalidField("x", "x is wrong");
        }),
        "/fails", ExtraEndpoint.get(body -> {
          throw new IllegalStateException("internal detail");
        }),
        "/guarded", new ExtraEndpoint("get", true, body -> Map.of("ok", true)));
    FrontendServer s = start(options().withApiKeys(List.of("key-1")));

    HttpResponse<String> info = get(s, "/server_info");
    assertEquals(200, info.statusCode(), info.body());
    assertEquals("application/json", info.headers().firstValue("content-type").orElse(""));
    assertEquals(32, json(info).get("tokens_per_block").asInt());
    assertEquals("[3]", post(s, "/kv_cache_events", "abc").body(), "the handler sees the body");
    assertEquals("[0]", client.send(HttpRequest.newBuilder(uri(s, "/kv_cache_events")).timeout(TIMEOUT)
        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString()).body());

    HttpResponse<String> wrongMethod = get(s, "/kv_cache_events");
    error(wrongMethod, 405);
    assertEquals("POST", wrongMethod.headers().firstValue("allow").orElse(""));
    assertEquals("x", error(get(s, "/refuses"), 400).get("param").asText());
    assertFalse(error(get(s, "/fails"), 500).get("message").asText().contains("internal detail"));
    error(get(s, "/guarded"), 401);
    assertEquals("{\"ok\":true}", get(s, "/guarded", "Authorization", "Bearer key-1").body());
    error(get(s, "/server_info/"), 404);
    error(get(s, "/v1/models"), 401); // the built-in routes are unchanged

    String text = registry.scrape();
    assertTrue(text.contains("affinity_frontend_requests_total{endpoint=\"/server_info\",outcome=\"ok\","), text);
  }

  @Test
  void aBackendRouteMayNotReplaceABuiltInOne() {
    backend.extras = Map.of("/health", ExtraEndpoint.get(body -> "mine"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> start(options())).getMessage().contains("/health"));
    backend.extras = Map.of("server_info", ExtraEndpoint.get(body -> "mine"));
    assertThrows(IllegalArgumentException.class, () -> start(options()));
    assertThrows(IllegalArgumentException.class, () -> new ExtraEndpoint("PUT", false, body -> "x"));
  }

  private void answerWith(String text) {
    backend.handler = (request, headers, sink) -> pool.execute(() -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(
        request.isChat() ? Fixtures.chatResponse(text) : Fixtures.completionResponse(text)), ROUTE));
  }

  private void streamChunks(int n) {
    backend.handler = (request, headers, sink) -> pool.execute(() -> {
      sink.streamStart(ROUTE);
      for (int i = 0; i < n; i++) {
        sink.streamEncoded(dev.affinity.worker.EncodedChunk.of(request.isChat() ? Fixtures.chatChunk(i) : Fixtures.chunk(i)));
      }
      sink.streamEnd(ROUTE.withRetries(3));
    });
  }

  // ---- completion endpoints ----

  @Test
  void completionIsAnsweredAsCompactJson() throws Exception {
    answerWith("world");
    HttpResponse<String> r = post("/v1/completions", COMPLETION);
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("content-type").orElseThrow());
    assertEquals(Fixtures.CODEC.toJsonString(Fixtures.completionResponse("world")), r.body());
    assertEquals(Long.toString(DISAGG_ID), r.headers().firstValue("x-request-id").orElseThrow());
    assertTrue(r.headers().firstValue("x-affinity-route").isEmpty(), "debug headers are off");
    assertEquals("test-model", backend.lastRequest.model());
    assertFalse(backend.lastRequest.isChat());
  }

  @Test
  void chatCompletionReachesTheHandlerAsChat() throws Exception {
    answerWith("hey");
    HttpResponse<String> r = post("/v1/chat/completions", CHAT, "X-Session-Id", "s-1");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("hey", json(r).at("/choices/0/message/content").asText());
    assertTrue(backend.lastRequest.isChat());
    assertEquals("s-1", backend.lastHeaders.first("x-session-id"), "headers reach the handler case-insensitively");
  }

  @Test
  void streamDeliversEveryChunkInOrderThenDone() throws Exception {
    int n = 25;
    streamChunks(n);
    HttpResponse<String> r = post("/v1/completions", STREAMING_COMPLETION);
    assertEquals(200, r.statusCode());
    assertEquals("text/event-stream; charset=utf-8", r.headers().firstValue("content-type").orElseThrow());
    assertEquals("no-cache", r.headers().firstValue("cache-control").orElseThrow());
    assertEquals(Long.toString(DISAGG_ID), r.headers().firstValue("x-request-id").orElseThrow());
    String[] events = r.body().split("\n\n", -1);
    assertEquals(n + 2, events.length, r.body()); // n chunks, [DONE], and the empty tail after the last blank line
    for (int i = 0; i < n; i++) {
      assertTrue(events[i].startsWith("data: {"), events[i]);
      assertEquals("t" + i, JSON.readTree(events[i].substring(6)).at("/choices/0/text").asText());
    }
    assertEquals("data: [DONE]", events[n]);
    assertEquals("", events[n + 1]);
  }

  @Test
  void chatStreamUsesTheSameFraming() throws Exception {
    streamChunks(3);
    String body = CHAT.replace("}]}", "}],\"stream\":true}");
    HttpResponse<String> r = post("/v1/chat/completions", body);
    assertEquals(200, r.statusCode());
    assertTrue(r.body().startsWith("data: {\"id\":\"chat-1\""), r.body());
    assertTrue(r.body().endsWith("data: [DONE]\n\n"), r.body());
  }

  @Test
  void streamWithoutChunksSendsOnlyDone() throws Exception {
    backend.handler = (request, headers, sink) -> sink.streamEnd(ROUTE);
    HttpResponse<String> r = post("/v1/completions", STREAMING_COMPLETION);
    assertEquals(200, r.statusCode());
    assertEquals("data: [DONE]\n\n", r.body());
  }

  @Test
  void keepAliveConnectionServesManyRequests() throws Exception {
    answerWith("x");
    for (int i = 0; i < 5; i++) {
      assertEquals(200, post("/v1/completions", COMPLETION).statusCode());
      assertEquals(200, get("/health").statusCode());
    }
    assertEquals(5, backend.calls.get());
  }

  // ---- informational endpoints ----

  @Test
  void modelsListsConfiguredAndBackendModels() throws Exception {
    backend.models = List.of("test-model", "other-model");
    HttpResponse<String> r = get("/v1/models");
    assertEquals(200, r.statusCode());
    JsonNode body = json(r);
    assertEquals("list", body.get("object").asText());
    assertEquals(2, body.get("data").size());
    assertEquals("test-model", body.at("/data/0/id").asText());
    assertEquals("other-model", body.at("/data/1/id").asText());
    assertEquals("model", body.at("/data/0/object").asText());
    assertTrue(body.at("/data/0/created").asLong() > 0);
    assertEquals("affinity", body.at("/data/0/owned_by").asText());
  }

  @Test
  void healthFollowsReadiness() throws Exception {
    HttpResponse<String> ok = get("/health");
    assertEquals(200, ok.statusCode());
    assertEquals("", ok.body());
    assertTrue(ok.headers().firstValue("x-request-id").isPresent());
    backend.ready = false;
    JsonNode e = error(get("/health"), 503);
    assertEquals("service_unavailable_error", e.get("type").asText());
  }

  @Test
  void completionsAreRefusedWhileNotReady() throws Exception {
    backend.ready = false;
    answerWith("x");
    error(post("/v1/completions", COMPLETION), 503);
    assertEquals(0, backend.calls.get());
  }

  @Test
  void clusterInfoAndVersion() throws Exception {
    HttpResponse<String> info = get("/cluster_info");
    assertEquals(200, info.statusCode());
    assertEquals(backend.clusterInfo, json(info));
    HttpResponse<String> version = get("/version");
    assertEquals(200, version.statusCode());
    assertEquals("{\"version\":\"9.9.9-test\"}", version.body());
  }

  @Test
  void metricsExposeTheRequestCounterOnBothPaths() throws Exception {
    answerWith("x");
    post("/v1/completions", COMPLETION);
    get("/nope");
    for (String path : List.of("/metrics", "/prometheus/metrics")) {
      HttpResponse<String> r = get(path);
      assertEquals(200, r.statusCode());
      assertTrue(r.headers().firstValue("content-type").orElseThrow().startsWith("text/plain; version=0.0.4"));
      String text = r.body();
      assertTrue(text.contains("affinity_frontend_requests_total{endpoint=\"/v1/completions\",outcome=\"ok\","
          + "status=\"200\"} 1.0"), text);
      assertTrue(text.contains("affinity_frontend_requests_total{endpoint=\"other\",outcome=\"error\","
          + "status=\"404\"} 1.0"), text);
      assertTrue(text.contains("affinity_frontend_ttft_seconds_bucket{endpoint=\"/v1/completions\""), text);
      assertTrue(text.contains("affinity_frontend_in_flight"), text);
    }
  }

  @Test
  void streamRecordsTtftAndInterTokenTimes() throws Exception {
    streamChunks(4);
    post("/v1/completions", STREAMING_COMPLETION);
    String text = get("/metrics").body();
    assertTrue(text.contains("affinity_frontend_ttft_seconds_count{endpoint=\"/v1/completions\",stream=\"true\"} 1"),
        text);
    assertTrue(text.contains("affinity_frontend_inter_token_seconds_count{endpoint=\"/v1/completions\"} 3"), text);
  }

  @Test
  void theOrchestrationCanAddMetersToTheSameRegistry() throws Exception {
    server.registry().counter("affinity.router.decisions", "fleet", "ctx").increment();
    assertTrue(get("/metrics").body().contains("affinity_router_decisions_total{fleet=\"ctx\"} 1.0"));
  }

  // ---- routing errors ----

  @Test
  void unknownPathIs404Json() throws Exception {
    JsonNode e = error(get("/v1/embeddings"), 404);
    assertTrue(e.get("message").asText().contains("GET /v1/embeddings"), e.toString());
    assertEquals("not_found_error", e.get("type").asText());
  }

  @Test
  void wrongMethodIs405WithAllow() throws Exception {
    HttpResponse<String> r = get("/v1/completions");
    JsonNode e = error(r, 405);
    assertTrue(e.get("message").asText().contains("use POST"), e.toString());
    assertEquals("POST", r.headers().firstValue("allow").orElseThrow());
    HttpResponse<String> r2 = post("/health", "{}");
    error(r2, 405);
    assertEquals("GET", r2.headers().firstValue("allow").orElseThrow());
  }

  // ---- bad input: never reaches the handler ----

  @Test
  void malformedJsonIs400WithLineAndColumn() throws Exception {
    answerWith("x");
    JsonNode e = error(post("/v1/completions", "{\n  \"model\": \"test-model\",\n  \"prompt\": \"hi\"\n  oops\n}"),
        400);
    String message = e.get("message").asText();
    assertTrue(message.startsWith("malformed JSON"), message);
    assertTrue(message.contains("line 4, column"), message);
    assertEquals("invalid_request_error", e.get("type").asText());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void emptyBodyIs400() throws Exception {
    error(post("/v1/completions", ""), 400);
    assertEquals(0, backend.calls.get());
  }

  @Test
  void missingFieldIs400NamingIt() throws Exception {
    JsonNode e = error(post("/v1/completions", "{\"prompt\":\"hi\"}"), 400);
    assertEquals("model", e.get("param").asText(), e.toString());
    JsonNode chat = error(post("/v1/chat/completions", "{\"model\":\"test-model\"}"), 400);
    assertEquals("messages", chat.get("param").asText(), chat.toString());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void wrongTypedFieldIs400NamingIt() throws Exception {
    JsonNode e = error(post("/v1/completions", "{\"model\":\"test-model\",\"prompt\":\"hi\",\"max_tokens\":\"ten\"}"),
        400);
    assertEquals("max_tokens", e.get("param").asText(), e.toString());
    assertTrue(e.get("message").asText().contains("expected an integer"), e.toString());
    JsonNode nested = error(post("/v1/chat/completions",
        "{\"model\":\"test-model\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":7}]}"), 400);
    assertEquals("messages[1].role", nested.get("param").asText(), nested.toString());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void unknownModelIs404NamingIt() throws Exception {
    JsonNode e = error(post("/v1/completions", COMPLETION.replace("test-model", "gpt-9")), 404);
    assertEquals("The model `gpt-9` does not exist.", e.get("message").asText());
    assertEquals("model", e.get("param").asText());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void backendModelsAreAccepted() throws Exception {
    backend.models = List.of("late-model");
    answerWith("x");
    assertEquals(200, post("/v1/completions", COMPLETION.replace("test-model", "late-model")).statusCode());
  }

  @Test
  void anyModelIsAcceptedWhenNoneIsKnown() throws Exception {
    backend.models = List.of();
    FrontendServer open = start(options().withModels(List.of()));
    answerWith("x");
    assertEquals(200, post(open, "/v1/completions", COMPLETION.replace("test-model", "whatever"), new String[0])
        .statusCode());
  }

  @Test
  void clientDisaggregatedParamsAre400UnlessAllowed() throws Exception {
    answerWith("x");
    String body = "{\"model\":\"test-model\",\"prompt\":\"hi\","
        + "\"disaggregated_params\":{\"request_type\":\"generation_only\",\"ctx_request_id\":5}}";
    JsonNode e = error(post("/v1/completions", body), 400);
    assertEquals("disaggregated_params", e.get("param").asText());
    assertEquals(0, backend.calls.get());

    FrontendServer allowing = start(options().withAllowClientDisaggregatedParams(true));
    assertEquals(200, post(allowing, "/v1/completions", body, new String[0]).statusCode());
    assertEquals(1, backend.calls.get());
  }

  @Test
  void requestChatTemplateIs400UnlessAllowed() throws Exception {
    answerWith("x");
    String body = CHAT.replace("}]}", "}],\"chat_template\":\"{{ messages }}\"}");
    JsonNode e = error(post("/v1/chat/completions", body), 400);
    assertEquals("chat_template", e.get("param").asText());
    assertEquals(0, backend.calls.get());
    FrontendServer allowing = start(options().withAllowRequestChatTemplate(true));
    assertEquals(200, post(allowing, "/v1/chat/completions", body, new String[0]).statusCode());
  }

  @Test
  void overlongRoutingHeaderIs400NamingIt() throws Exception {
    answerWith("x");
    JsonNode e = error(post("/v1/completions", COMPLETION, "X-Session-Id", "s".repeat(257)), 400);
    assertEquals("x-session-id", e.get("param").asText());
    assertTrue(e.get("message").asText().contains("x-session-id"), e.toString());
    assertEquals(0, backend.calls.get());
    assertEquals(200, post("/v1/completions", COMPLETION, "X-Session-Id", "s".repeat(256)).statusCode());
  }

  @Test
  void controlCharacterInRoutingHeaderIs400() throws Exception {
    answerWith("x");
    JsonNode e = error(post("/v1/completions", COMPLETION, "X-Correlation-Id", "a\tb"), 400);
    assertEquals("x-correlation-id", e.get("param").asText());
    assertTrue(e.get("message").asText().contains("control character"), e.toString());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void configuredSubagentHeaderIsChecked() throws Exception {
    FrontendServer s = start(options().withRouting(new dev.affinity.conversation.ConversationSettings(
        List.of("x-session-id"), java.util.Optional.of("X-Parent-Session"), dev.affinity.config.SubagentScope.CONTEXT)));
    JsonNode e = error(post(s, "/v1/completions", COMPLETION, "X-Parent-Session", "p".repeat(300)), 400);
    assertEquals("x-parent-session", e.get("param").asText());
    assertEquals(0, backend.calls.get());
  }

  @Test
  void bodyOverTheLimitIs413FromContentLength() throws Exception {
    FrontendServer small = start(options().withMaxRequestBodyBytes(1024));
    answerWith("x");
    String big = "{\"model\":\"test-model\",\"prompt\":\"" + "a".repeat(2000) + "\"}";
    JsonNode e = error(post(small, "/v1/completions", big, new String[0]), 413);
    assertTrue(e.get("message").asText().contains("at most 1024 bytes"), e.toString());
    assertEquals(0, backend.calls.get());
    assertEquals(200, post(small, "/v1/completions", COMPLETION, new String[0]).statusCode());
  }

  @Test
  void chunkedBodyOverTheLimitIs413() throws Exception {
    FrontendServer small = start(options().withMaxRequestBodyBytes(1024));
    answerWith("x");
    byte[] big = Fixtures.bytes("{\"model\":\"test-model\",\"prompt\":\"" + "a".repeat(5000) + "\"}");
    HttpRequest request = HttpRequest.newBuilder(uri(small, "/v1/completions")).timeout(TIMEOUT)
        .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(big))).build();
    HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
    JsonNode e = error(r, 413);
    assertTrue(e.get("message").asText().contains("at most 1024 bytes"), e.toString());
    assertEquals(0, backend.calls.get());
  }

  // ---- handler errors ----

  @Test
  void handlerFailureKeepsItsStatusAndBody() throws Exception {
    backend.handler = (request, headers, sink) -> pool.execute(() ->
        sink.fail(502, ErrorResponse.of(502, "context worker ctx-0 answered garbage", null), ROUTE));
    JsonNode e = error(post("/v1/completions", COMPLETION), 502);
    assertEquals("context worker ctx-0 answered garbage", e.get("message").asText());
    assertEquals("server_error", e.get("type").asText());
  }

  @Test
  void invalidHeaderThrownByTheHandlerIs400() throws Exception {
    backend.handler = (request, headers, sink) -> {
      throw new InvalidHeaderException("x-custom-session", "header x-custom-session is too long");
    };
    JsonNode e = error(post("/v1/completions", COMPLETION), 400);
    assertEquals("x-custom-session", e.get("param").asText());
    assertEquals("header x-custom-session is too long", e.get("message").asText());
  }

  @Test
  void protocolExceptionThrownByTheHandlerKeepsItsStatus() throws Exception {
    backend.handler = (request, headers, sink) -> {
      throw ProtocolException.invalidField("prompt", "multi-prompt batches are not served");
    };
    JsonNode e = error(post("/v1/completions", COMPLETION), 400);
    assertEquals("prompt", e.get("param").asText());
    backend.handler = (request, headers, sink) -> {
      throw ProtocolException.of(502, "worker body unreadable", null);
    };
    error(post("/v1/completions", COMPLETION), 502);
  }

  @Test
  void otherHandlerExceptionsAre500WithoutInternals() throws Exception {
    backend.handler = (request, headers, sink) -> {
      throw new IllegalStateException("secret internal detail");
    };
    JsonNode e = error(post("/v1/completions", COMPLETION), 500);
    assertTrue(e.get("message").asText().startsWith("internal server error (request id "), e.toString());
    assertFalse(e.toString().contains("secret"), e.toString());
    // the connection and the server stay usable
    answerWith("x");
    assertEquals(200, post("/v1/completions", COMPLETION).statusCode());
  }

  // ---- API keys ----

  @Test
  void apiKeysGuardTheApi() throws Exception {
    FrontendServer s = start(options().withApiKeys(List.of("k-one", "k-two")));
    answerWith("x");
    HttpResponse<String> missing = post(s, "/v1/completions", COMPLETION);
    JsonNode e = error(missing, 401);
    assertEquals("authentication_error", e.get("type").asText());
    assertEquals("Bearer", missing.headers().firstValue("www-authenticate").orElseThrow());
    assertEquals("invalid API key", error(post(s, "/v1/completions", COMPLETION, "Authorization", "Bearer nope"), 401)
        .get("message").asText());
    error(post(s, "/v1/completions", COMPLETION, "Authorization", "Basic k-one"), 401);
    error(get(s, "/v1/models"), 401);
    error(get(s, "/cluster_info"), 401);
    assertEquals(0, backend.calls.get());

    assertEquals(200, post(s, "/v1/completions", COMPLETION, "Authorization", "Bearer k-two").statusCode());
    assertEquals(200, get(s, "/v1/models", "Authorization", "bearer k-one").statusCode());
    assertEquals(200, get(s, "/health").statusCode(), "probes need no key");
    assertEquals(200, get(s, "/metrics").statusCode());
    assertEquals(200, get(s, "/version").statusCode());
  }

  // ---- debug headers ----

  @Test
  void routeHeaderOnlyWithDebugHeaders() throws Exception {
    answerWith("x");
    assertTrue(post("/v1/completions", COMPLETION).headers().firstValue("x-affinity-route").isEmpty());

    FrontendServer debug = start(options().withDebugHeaders(true));
    HttpResponse<String> r = post(debug, "/v1/completions", COMPLETION, new String[0]);
    assertEquals(ROUTE.toHeader(), r.headers().firstValue("x-affinity-route").orElseThrow());
    assertEquals("ctx=ctx-0; ctx_rank=1; gen=gen-1; gen_rank=0; conversation=conv-7; affinity=parent-3; reused=128",
        r.headers().firstValue("x-affinity-route").orElseThrow());

    streamChunks(2);
    HttpResponse<String> s = post(debug, "/v1/completions", STREAMING_COMPLETION, new String[0]);
    assertEquals(ROUTE.toHeader(), s.headers().firstValue("x-affinity-route").orElseThrow());

    backend.handler = (request, headers, sink) -> sink.fail(504, ErrorResponse.of(504, "timed out", null), ROUTE);
    HttpResponse<String> f = post(debug, "/v1/completions", COMPLETION, new String[0]);
    error(f, 504);
    assertEquals(ROUTE.toHeader(), f.headers().firstValue("x-affinity-route").orElseThrow());

    backend.handler = (request, headers, sink) -> sink.fail(503, ErrorResponse.of(503, "no workers", null), null);
    HttpResponse<String> noRoute = post(debug, "/v1/completions", COMPLETION, new String[0]);
    error(noRoute, 503);
    assertTrue(noRoute.headers().firstValue("x-affinity-route").isEmpty());
    assertTrue(noRoute.headers().firstValue("x-request-id").isPresent());
  }

  @Test
  void routeHeaderIsMadeSafe() throws Exception {
    FrontendServer debug = start(options().withDebugHeaders(true));
    RouteInfo odd = RouteInfo.of(0).withConversation(new RouteInfo.Conversation("caf\u00e9\nx", null));
    backend.handler = (request, headers, sink) -> sink.respondEncoded(dev.affinity.worker.EncodedResponse.of(Fixtures.completionResponse("x")), odd);
    HttpResponse<String> r = post(debug, "/v1/completions", COMPLETION, new String[0]);
    assertEquals(200, r.statusCode());
    assertEquals("conversation=caf??x", r.headers().firstValue("x-affinity-route").orElseThrow());
    long localId = Long.parseLong(r.headers().firstValue("x-request-id").orElseThrow());
    assertTrue(localId > 0 && localId < (1L << 40), "the frontend's own id when the route has none");
  }

  // ---- access log ----

  @Test
  void accessLogRecordsAStreamedRequest() throws Exception {
    streamChunks(3);
    HttpResponse<String> r = post("/v1/completions", STREAMING_COMPLETION);
    assertEquals(200, r.statusCode());
    AccessRecord a = accessLog.last();
    assertEquals(DISAGG_ID, a.requestId());
    assertEquals("POST", a.method());
    assertEquals("/v1/completions", a.path());
    assertEquals(200, a.status());
    assertEquals(AccessRecord.OK, a.outcome());
    assertEquals("test-model", a.model());
    assertEquals(Boolean.TRUE, a.stream());
    assertEquals("conv-7", a.conversation());
    assertEquals("parent-3", a.affinity());
    assertEquals("ctx-0", a.ctxWorker());
    assertEquals(1, a.ctxRank());
    assertEquals("gen-1", a.genWorker());
    assertEquals(0, a.genRank());
    assertEquals(128, a.reusedTokens());
    assertEquals(3, a.retries(), "the route given at stream end");
    assertNotNull(a.ttftMs());
    assertTrue(a.totalMs() >= a.ttftMs());
    assertEquals(r.body().length(), a.bytes());
    assertTrue(a.remote().startsWith("127.0.0.1:"), a.remote());
    assertNull(a.error());

    JsonNode line = JSON.readTree(a.toJson());
    for (String field : List.of("time", "request_id", "method", "path", "status", "outcome", "conversation",
        "affinity", "ctx_worker", "ctx_rank", "gen_worker", "gen_rank", "reused_tokens", "ttft_ms", "total_ms",
        "retries", "bytes")) {
      assertTrue(line.has(field), field + " in " + line);
    }
    assertEquals(DISAGG_ID, line.get("request_id").asLong());
  }

  @Test
  void accessLogRecordsErrorsAndOtherEndpoints() throws Exception {
    error(post("/v1/completions", "{"), 400);
    AccessRecord bad = accessLog.last();
    assertEquals(400, bad.status());
    assertEquals(AccessRecord.ERROR, bad.outcome());
    assertTrue(bad.error().startsWith("malformed JSON"), bad.error());
    assertNull(bad.ttftMs());
    assertNull(bad.ctxWorker());
    assertNull(bad.ctxRank());

    get("/health");
    AccessRecord health = accessLog.last();
    assertEquals("GET", health.method());
    assertEquals("/health", health.path());
    assertEquals(200, health.status());
    assertNull(health.model());
    assertEquals(2, accessLog.records().size());
  }

  @Test
  void closingTheServerClosesTheAccessLog() {
    server.close();
    assertTrue(accessLog.closed);
  }
}
