package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.KvRetention;
import dev.affinity.executor.KvRetentionJson;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.SubagentAffinityClaim;
import dev.affinity.server.worker.FakeTrtllmServe.Behavior;
import dev.affinity.server.worker.FakeTrtllmServe.Received;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerFailure.Kind;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** HttpWorker against a fake trtllm-serve: wire contract, headers, streaming, failure mapping, cancel, timeout. */
class HttpWorkerTest {
  static final String KEY = "change-me-shared-secret";
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final long DISAGG_ID = 4328034999294952979L;
  static final Duration LONG = Duration.ofSeconds(30);

  static final String CTX_COMPLETION = """
      {"model":"glm-5.2","prompt":"h\\u00e9llo w\\u00f6rld","max_tokens":8,"temperature":0.5,
       "client_extra":{"nested":[1,2.50,"x",null],"flag":true},"user":"u-1",
       "conversation_params":{"conversation_id":"child-1"},
       "disaggregated_params":{"request_type":"context_only","disagg_request_id":4328034999294952979}}""";
  static final String GEN_COMPLETION = """
      {"model":"glm-5.2","prompt":[1,2,3,4],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true},
       "conversation_params":{"conversation_id":"child-1"},
       "disaggregated_params":{"request_type":"generation_only","first_gen_tokens":[7],"ctx_request_id":1001,
         "encoded_opaque_state":"AAEC","disagg_request_id":4328034999294952979,"ctx_dp_rank":3,
         "future_lifecycle_field":{"x":1}}}""";
  static final String CTX_CHAT = """
      {"model":"glm-5.2","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],
       "max_completion_tokens":8,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],
       "conversation_params":{"conversation_id":"child-1"},
       "disaggregated_params":{"request_type":"context_only","disagg_request_id":4328034999294952979}}""";
  static final String GEN_CHAT = """
      {"model":"glm-5.2","messages":[{"role":"user","content":"hi"}],"prompt_token_ids":[1,2,3,4],"stream":true,
       "conversation_params":{"conversation_id":"child-1"},
       "disaggregated_params":{"request_type":"generation_only","first_gen_tokens":[7],"ctx_request_id":1001,
         "ctx_info_endpoint":["tcp://10.0.0.5:5555","tcp://10.0.0.6:5555"],"disagg_request_id":4328034999294952979}}""";

  private FakeTrtllmServe fake;
  private final List<HttpWorker> workers = new ArrayList<>();
  private final List<RecordingListener> listeners = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    fake = FakeTrtllmServe.start();
  }

  @AfterEach
  void stop() {
    workers.forEach(HttpWorker::close);
    fake.close();
    listeners.forEach(RecordingListener::assertContract);
  }

  HttpWorker worker(String key) throws WorkerSetupException {
    HttpWorker w = HttpWorker.connect(HttpWorkerSettings.of(fake.url()).withAuthKey(key), CODEC);
    workers.add(w);
    return w;
  }

  RecordingListener listener() {
    RecordingListener l = new RecordingListener();
    listeners.add(l);
    return l;
  }

  static OpenAiRequest completion(String json) {
    return CODEC.parseCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
  }

  static OpenAiRequest chat(String json) {
    return CODEC.parseChatCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
  }

  static OpenAiRequest nonStreaming(OpenAiRequest r) {
    return r.withoutStreaming();
  }

  static WorkerRequest leg(OpenAiRequest body, String affinityId, Duration timeout) {
    Long id = body.disaggregatedParams() == null ? null : body.disaggregatedParams().disaggRequestId();
    return new WorkerRequest(id == null ? 1 : id, body, affinityId, -1, timeout);
  }

  static WorkerRequest leg(OpenAiRequest body) {
    return leg(body, null, LONG);
  }

  /** What a worker parses from the body it received. */
  static OpenAiRequest parsedAtWorker(Received r) {
    return r.path().equals("/v1/chat/completions") ? CODEC.parseChatCompletionRequest(r.body())
        : CODEC.parseCompletionRequest(r.body());
  }

  // ---- wire contract ----

  @Test
  void contextLegPostsTheCompactBodyWithAllClientFieldsAndReportsWhatTheWorkerDid() throws Exception {
    HttpWorker w = worker(KEY);
    OpenAiRequest body = completion(CTX_COMPLETION);
    RecordingListener l = listener();
    w.send(leg(body), l);

    WorkerReport report = l.awaitReport();
    assertEquals(new WorkerReport(FakeTrtllmServe.CTX_DP_RANK, FakeTrtllmServe.CACHED_TOKENS,
        FakeTrtllmServe.PROMPT_TOKENS, -1), report);
    CompletionResponse response = assertInstanceOf(CompletionResponse.class, l.response());
    assertEquals(FakeTrtllmServe.PROMPT_TOKENS, response.promptTokenIds().size());
    DisaggregatedParams dp = response.firstDisaggregatedParams().orElseThrow();
    assertEquals(FakeTrtllmServe.OPAQUE_STATE, dp.encodedOpaqueState());
    assertEquals(DISAGG_ID, dp.disaggRequestId());
    assertEquals("length", response.firstFinishReason().orElseThrow());
    assertTrue(l.chunks().isEmpty());

    Received r = fake.last("/v1/completions");
    assertEquals("POST", r.method());
    assertEquals("application/json", r.header("content-type"));
    assertArrayEquals(CODEC.toJsonBytes(body), r.body(), "the compact JSON of the request, byte for byte");
    assertEquals(CODEC.readTree(CTX_COMPLETION.getBytes(StandardCharsets.UTF_8)), CODEC.readTree(r.body()),
        "every client field arrives intact, nothing added");
    assertNull(r.header(InternalAuth.DISAGG_AUTH_HEADER), "context legs are not signed");
    assertNull(r.header(InternalAuth.SUBAGENT_AFFINITY_HEADER));
    assertNull(r.header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER));
    assertEquals(0, w.inFlight());
  }

  static final String TENANT_SALT = "t-0123456789abcdef";
  static final String CACHE_SALT_HEADER = "x-affinity-cache-salt";

  static int cached(dev.affinity.protocol.UsageInfo usage) {
    return usage.promptTokensDetails() == null || usage.promptTokensDetails().cachedTokens() == null ? -1
        : usage.promptTokensDetails().cachedTokens();
  }

  @Test
  void aCompletionsCacheSaltGoesToAWorkerThatTakesItAndAStockWorkerReportsNoCachedTokensForIt() throws Exception {
    OpenAiRequest body = completion(CTX_COMPLETION);
    // a stock worker: a completion has no cache_salt upstream, so the salt cannot reach it
    RecordingListener stock = listener();
    worker(KEY).send(new WorkerRequest(DISAGG_ID, body, null, -1, LONG, TENANT_SALT), stock);
    assertEquals(0, stock.awaitReport().reusedTokens(), "its cache was not salted: no cached tokens are told");
    assertEquals(0, cached(stock.response().usage()));
    assertEquals(FakeTrtllmServe.PROMPT_TOKENS, stock.response().usage().promptTokens());
    assertNull(fake.last("/v1/completions").header(CACHE_SALT_HEADER));
    assertEquals(CODEC.readTree(CTX_COMPLETION.getBytes(StandardCharsets.UTF_8)),
        CODEC.readTree(fake.last("/v1/completions").body()), "nothing is added to the body");
    RecordingListener stream = listener();
    worker(KEY).send(new WorkerRequest(DISAGG_ID, completion(GEN_COMPLETION), null, -1, LONG, TENANT_SALT), stream);
    assertEquals(0, stream.awaitReport().reusedTokens());
    for (OpenAiStreamChunk c : stream.chunks()) {
      assertTrue(c.usage() == null || cached(c.usage()) == 0, "no chunk tells cached tokens: " + c.usage());
    }
    // a chat carries its salt in its body: the stock worker's cached tokens are its own tenant's
    RecordingListener chat = listener();
    worker(KEY).send(new WorkerRequest(DISAGG_ID, chat(CTX_CHAT), null, -1, LONG, TENANT_SALT), chat);
    assertEquals(FakeTrtllmServe.CACHED_TOKENS, chat.awaitReport().reusedTokens());
    // without a salt nothing changes
    RecordingListener unsalted = listener();
    worker(KEY).send(leg(body), unsalted);
    assertEquals(FakeTrtllmServe.CACHED_TOKENS, unsalted.awaitReport().reusedTokens());

    // an Affinity worker that takes a completion's salt gets it in the header (signed with the leg)
    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("num_ranks", 2).put("ranks_visible", true).put("completion_cache_salt", true)
        .put("name", "w-1");
    fake.serverInfo(info);
    RecordingListener salted = listener();
    worker(KEY).send(new WorkerRequest(DISAGG_ID, body, null, -1, LONG, TENANT_SALT), salted);
    assertEquals(FakeTrtllmServe.CACHED_TOKENS, salted.awaitReport().reusedTokens(), "its cache is the tenant's");
    Received r = fake.last("/v1/completions");
    assertEquals(TENANT_SALT, r.header(CACHE_SALT_HEADER));
    LegAuth.Verifier verifier = new LegAuth.Verifier(InternalAuth.ofNullable(KEY).orElseThrow(), "w-1", java.time.Clock.systemUTC(),
        LegAuth.DEFAULT_WINDOW);
    assertNull(verifier.refusal("POST", "/v1/completions", dev.affinity.conversation.HeaderSource.of(r.headers()),
        r.body()), "the salt is covered by the leg's signature");
  }

  @Test
  void aHeldContextIsReleasedOnAnAffinityWorkerSignedAsAGenerationWorkersReleaseIs() throws Exception {
    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("num_ranks", 2).put("ranks_visible", true).put("release_context", true);
    fake.serverInfo(info);
    HttpWorker w = worker(KEY);
    w.releaseContext(DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).ctxRequestId(1001L).build());
    fake.awaitReceived("/release_context", 1);
    Received r = fake.last("/release_context");
    assertEquals("POST", r.method());
    assertEquals(CODEC.readTree("{\"ctx_request_ids\": [1001]}".getBytes(StandardCharsets.UTF_8)),
        CODEC.readTree(r.body()));
    LegAuth.Verifier verifier = new LegAuth.Verifier(InternalAuth.ofNullable(KEY).orElseThrow(), "kv-handoff", java.time.Clock.systemUTC(),
        LegAuth.DEFAULT_WINDOW);
    assertNull(verifier.refusal("POST", "/release_context", dev.affinity.conversation.HeaderSource.of(r.headers()),
        r.body()), "signed as a generation worker signs its release");
  }

  @Test
  void aLegsKvRetentionGoesOnlyToAffinityWorkers() throws Exception {
    OpenAiRequest body = completion(CTX_COMPLETION);
    KvRetention keep = KvRetention.wholePrompt(80, 30_000);
    RecordingListener l = listener();
    worker(KEY).send(new WorkerRequest(DISAGG_ID, body, null, -1, LONG, null, null, keep), l);
    l.awaitReport();
    assertNull(fake.last("/v1/completions").header(WorkerExtensions.KV_RETENTION_HEADER),
        "trtllm-serve's OpenAI protocol has no field for it: a stock worker is left alone");
    assertEquals(CODEC.readTree(CTX_COMPLETION.getBytes(StandardCharsets.UTF_8)),
        CODEC.readTree(fake.last("/v1/completions").body()), "nor is anything added to the body");

    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("num_ranks", 2).put("ranks_visible", true);
    fake.serverInfo(info);
    HttpWorker affinity = worker(KEY);
    RecordingListener kept = listener();
    affinity.send(new WorkerRequest(DISAGG_ID, body, null, 1, LONG, null, null, keep), kept);
    kept.awaitReport();
    String header = fake.last("/v1/completions").header(WorkerExtensions.KV_RETENTION_HEADER);
    assertEquals(keep, KvRetentionJson.parse(header));
    RecordingListener none = listener();
    affinity.send(new WorkerRequest(DISAGG_ID, body, null, 1, LONG), none);
    none.awaitReport();
    assertNull(fake.last("/v1/completions").header(WorkerExtensions.KV_RETENTION_HEADER), "no retention, no header");
  }

  @Test
  void theRankHintGoesOnlyToWorkersWhoseRanksAreVisible() throws Exception {
    OpenAiRequest body = completion(CTX_COMPLETION);
    HttpWorker trtllm = worker(KEY);
    RecordingListener l = listener();
    trtllm.send(new WorkerRequest(DISAGG_ID, body, null, 1, LONG), l);
    l.awaitReport();
    assertNull(fake.last("/v1/completions").header(WorkerExtensions.RANK_HINT_HEADER),
        "a trtllm-serve worker picks its rank itself: no hint");

    ObjectNode info = fake.serverInfo();
    info.putObject("affinity").put("num_ranks", 2).put("ranks_visible", true);
    fake.serverInfo(info);
    HttpWorker affinity = worker(KEY);
    for (int rank : new int[] {1, 0}) {
      RecordingListener hinted = listener();
      affinity.send(new WorkerRequest(DISAGG_ID, body, null, rank, LONG), hinted);
      hinted.awaitReport();
      assertEquals(Integer.toString(rank), fake.last("/v1/completions").header(WorkerExtensions.RANK_HINT_HEADER));
    }
    for (int rank : new int[] {-1, 2}) {
      RecordingListener none = listener();
      affinity.send(new WorkerRequest(DISAGG_ID, body, null, rank, LONG), none);
      none.awaitReport();
      assertNull(fake.last("/v1/completions").header(WorkerExtensions.RANK_HINT_HEADER),
          "no hint, or one outside the worker's ranks, is not sent: " + rank);
    }
  }

  @Test
  void chatContextLegGoesToTheChatEndpoint() throws Exception {
    HttpWorker w = worker(KEY);
    OpenAiRequest body = chat(CTX_CHAT);
    RecordingListener l = listener();
    w.send(leg(body), l);

    assertEquals(FakeTrtllmServe.CTX_DP_RANK, l.awaitReport().rank());
    ChatCompletionResponse response = assertInstanceOf(ChatCompletionResponse.class, l.response());
    assertEquals(FakeTrtllmServe.OPAQUE_STATE, response.firstDisaggregatedParams().orElseThrow().encodedOpaqueState());
    Received r = fake.last("/v1/chat/completions");
    assertEquals(CODEC.readTree(CTX_CHAT.getBytes(StandardCharsets.UTF_8)), CODEC.readTree(r.body()));
    assertTrue(fake.received("/v1/completions").isEmpty());
  }

  @Test
  void generationLegStreamsEveryChunkOnceInOrder() throws Exception {
    HttpWorker w = worker(KEY);
    fake.streamChunks(25);
    RecordingListener l = listener();
    w.send(leg(completion(GEN_COMPLETION)), l);

    WorkerReport report = l.awaitReport();
    List<OpenAiStreamChunk> chunks = l.chunks();
    assertEquals(25, chunks.size());
    for (int i = 0; i < chunks.size(); i++) {
      CompletionStreamResponse c = assertInstanceOf(CompletionStreamResponse.class, chunks.get(i));
      assertEquals("tok-" + i, c.choices().get(0).text());
    }
    assertEquals("stop", ((CompletionStreamResponse) chunks.get(24)).choices().get(0).finishReason());
    assertNull(l.response(), "no onResponse for a streamed leg");
    assertEquals(new WorkerReport(-1, FakeTrtllmServe.CACHED_TOKENS, FakeTrtllmServe.PROMPT_TOKENS, -1), report,
        "usage of the last chunk; the rank is not reported on a generation stream");
    assertEquals(CODEC.readTree(GEN_COMPLETION.getBytes(StandardCharsets.UTF_8)),
        CODEC.readTree(fake.last("/v1/completions").body()));
  }

  @Test
  void chatGenerationLegStreamsDeltasInOrder() throws Exception {
    HttpWorker w = worker(KEY);
    fake.streamChunks(7);
    RecordingListener l = listener();
    w.send(leg(chat(GEN_CHAT)), l);

    l.awaitReport();
    List<OpenAiStreamChunk> chunks = l.chunks();
    assertEquals(7, chunks.size());
    for (int i = 0; i < chunks.size(); i++) {
      ChatCompletionStreamResponse c = assertInstanceOf(ChatCompletionStreamResponse.class, chunks.get(i));
      assertEquals("tok-" + i, c.choices().get(0).delta().content());
    }
  }

  @Test
  void generationLegWithoutStreamingAnswersOneResponse() throws Exception {
    HttpWorker w = worker(KEY);
    RecordingListener l = listener();
    w.send(leg(nonStreaming(completion(GEN_COMPLETION))), l);

    WorkerReport report = l.awaitReport();
    CompletionResponse response = assertInstanceOf(CompletionResponse.class, l.response());
    assertEquals("tok-0tok-1tok-2tok-3tok-4", response.firstChoice().orElseThrow().text());
    assertEquals(-1, report.rank());
    assertEquals(FakeTrtllmServe.PROMPT_TOKENS, report.promptTokens());
    assertFalse(fake.last("/v1/completions").json().path("stream").asBoolean());
  }

  // ---- headers ----

  @Test
  void signsProtectedGenerationLegsWithTheDisaggAuthHeader() throws Exception {
    HttpWorker w = worker(KEY);
    InternalAuth auth = new InternalAuth(KEY);

    RecordingListener opaque = listener();
    w.send(leg(nonStreaming(completion(GEN_COMPLETION))), opaque);
    opaque.awaitReport();
    Received r1 = fake.last("/v1/completions");
    OpenAiRequest atWorker1 = parsedAtWorker(r1);
    assertEquals(auth.signDisagg(atWorker1.disaggregatedParams()), r1.header(InternalAuth.DISAGG_AUTH_HEADER));
    assertTrue(auth.verifyDisagg(atWorker1.disaggregatedParams(), r1.header(InternalAuth.DISAGG_AUTH_HEADER)));

    RecordingListener endpoint = listener();
    w.send(leg(nonStreaming(chat(GEN_CHAT))), endpoint);
    endpoint.awaitReport();
    Received r2 = fake.last("/v1/chat/completions");
    String header = r2.header(InternalAuth.DISAGG_AUTH_HEADER);
    assertEquals(auth.sign("{\"ctx_info_endpoint\":\"tcp://10.0.0.5:5555\",\"encoded_opaque_state\":null}"), header,
        "the first element of a ctx_info_endpoint list is signed");
    assertTrue(auth.verifyDisagg(parsedAtWorker(r2).disaggregatedParams(), header));
    assertNull(r2.header(InternalAuth.SUBAGENT_AFFINITY_HEADER));
  }

  @Test
  void disaggAuthOnlyOnGenerationLegsThatCarryProtectedFields() throws Exception {
    HttpWorker w = worker(KEY);
    OpenAiRequest gen = nonStreaming(completion(GEN_COMPLETION));
    DisaggregatedParams plain = gen.disaggregatedParams().toBuilder().encodedOpaqueState(null).build();
    OpenAiRequest unprotected = gen.withDisaggregatedParams(plain);
    OpenAiRequest ctxWithState = gen.withDisaggregatedParams(
        gen.disaggregatedParams().withRequestType(DisaggRequestType.CONTEXT_ONLY));
    for (OpenAiRequest body : List.of(unprotected, ctxWithState)) {
      RecordingListener l = listener();
      w.send(leg(body), l);
      l.awaitReport();
      assertNull(fake.last("/v1/completions").header(InternalAuth.DISAGG_AUTH_HEADER), body.toString());
    }
  }

  @Test
  void withoutAKeyNothingIsSignedAndTheAffinityIdIsNeverSentButWarnedAboutOnce() throws Exception {
    Logger signerLog = (Logger) LoggerFactory.getLogger(RequestSigner.class);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    signerLog.addAppender(logs);
    try {
      HttpWorker w = worker(null);
      for (int i = 0; i < 2; i++) {
        RecordingListener l = listener();
        w.send(leg(nonStreaming(completion(GEN_COMPLETION)), "parent-42", LONG), l);
        l.awaitReport();
        Received r = fake.last("/v1/completions");
        assertNull(r.header(InternalAuth.DISAGG_AUTH_HEADER));
        assertNull(r.header(InternalAuth.SUBAGENT_AFFINITY_HEADER), "never unsigned");
        assertNull(r.header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER));
        assertFalse(new String(r.body(), StandardCharsets.UTF_8).contains("parent-42"), "nor in the body");
      }
      long affinityWarnings = logs.list.stream()
          .filter(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains("sub-agent affinity")).count();
      long authWarnings = logs.list.stream()
          .filter(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains("unsigned")).count();
      assertEquals(1, affinityWarnings, "warned once");
      assertEquals(1, authWarnings, "warned once");
    } finally {
      signerLog.detachAppender(logs);
    }
  }

  @Test
  void sendsTheSignedAffinityIdBoundToTheLegsRole() throws Exception {
    HttpWorker w = worker(KEY);
    InternalAuth auth = new InternalAuth(KEY);

    RecordingListener ctx = listener();
    w.send(leg(completion(CTX_COMPLETION), "  parent-42 ", LONG), ctx);
    ctx.awaitReport();
    Received r1 = fake.last("/v1/completions");
    assertEquals("parent-42", r1.header(InternalAuth.SUBAGENT_AFFINITY_HEADER), "stripped");
    String sig1 = r1.header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER);
    OpenAiRequest atWorker1 = parsedAtWorker(r1);
    SubagentAffinityClaim asContext = SubagentAffinityClaim.of(atWorker1, InternalAuth.Role.CONTEXT, "parent-42");
    assertTrue(auth.verifySubagentAffinity(asContext, sig1));
    assertEquals(new SubagentAffinityClaim("CONTEXT", "glm-5.2", "child-1", "parent-42", "context_only", DISAGG_ID),
        asContext);
    assertFalse(auth.verifySubagentAffinity(
        SubagentAffinityClaim.of(atWorker1, InternalAuth.Role.GENERATION, "parent-42"), sig1), "bound to the role");
    assertFalse(auth.verifySubagentAffinity(
        SubagentAffinityClaim.of(atWorker1, InternalAuth.Role.CONTEXT, "parent-43"), sig1), "bound to the parent");
    assertNull(r1.header(InternalAuth.DISAGG_AUTH_HEADER));

    RecordingListener gen = listener();
    w.send(leg(chat(GEN_CHAT), "parent-42", LONG), gen);
    gen.awaitReport();
    Received r2 = fake.last("/v1/chat/completions");
    OpenAiRequest atWorker2 = parsedAtWorker(r2);
    assertEquals("parent-42", r2.header(InternalAuth.SUBAGENT_AFFINITY_HEADER));
    assertTrue(auth.verifySubagentAffinity(
        SubagentAffinityClaim.of(atWorker2, InternalAuth.Role.GENERATION, "parent-42"),
        r2.header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER)));
    assertTrue(auth.verifyDisagg(atWorker2.disaggregatedParams(), r2.header(InternalAuth.DISAGG_AUTH_HEADER)),
        "both signatures on a protected generation leg");
  }

  @Test
  void aBlankAffinityIdSendsNoAffinityHeaders() throws Exception {
    HttpWorker w = worker(KEY);
    RecordingListener l = listener();
    w.send(leg(completion(CTX_COMPLETION), "   ", LONG), l);
    l.awaitReport();
    assertNull(fake.last("/v1/completions").header(InternalAuth.SUBAGENT_AFFINITY_HEADER));
    assertNull(fake.last("/v1/completions").header(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER));
  }

  // ---- failures ----

  private WorkerFailure failureOf(HttpWorker w, OpenAiRequest body, Behavior behavior) {
    fake.enqueue(behavior);
    RecordingListener l = listener();
    w.send(leg(body), l);
    return l.awaitFailure();
  }

  @Test
  void refusedConnectionsAreConnectFailuresAndRetryable() throws Exception {
    fake.closeConnections(true); // no idle pooled connection survives the server
    HttpWorker w = worker(KEY);
    fake.close();
    RecordingListener l = listener();
    w.send(leg(completion(CTX_COMPLETION)), l);
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.CONNECT, f.kind(), f.toString());
    assertFalse(f.afterFirstByte());
    assertTrue(f.retryable());
  }

  @Test
  void serverErrorsAreRetryableWithTheWorkersMessage() throws Exception {
    HttpWorker w = worker(KEY);
    WorkerFailure f = failureOf(w, completion(CTX_COMPLETION), Behavior.status(500,
        "{\"object\":\"error\",\"message\":\"boom\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}"));
    assertEquals(new WorkerFailure(Kind.SERVER_ERROR, 500, "boom", false), f);
    assertTrue(f.retryable());

    WorkerFailure streamed = failureOf(w, completion(GEN_COMPLETION), Behavior.status(503, "overloaded"));
    assertEquals(new WorkerFailure(Kind.SERVER_ERROR, 503, "overloaded", false), streamed);
    assertTrue(streamed.retryable());
  }

  @Test
  void clientErrorsAreNeverRetried() throws Exception {
    HttpWorker w = worker(KEY);
    WorkerFailure f = failureOf(w, completion(CTX_COMPLETION), Behavior.status(400,
        "{\"object\":\"error\",\"message\":\"prompt is too long\",\"type\":\"BadRequestError\",\"code\":400}"));
    assertEquals(new WorkerFailure(Kind.CLIENT_ERROR, 400, "prompt is too long", false), f);
    assertFalse(f.retryable());

    WorkerFailure validation = failureOf(w, chat(GEN_CHAT), Behavior.status(400, "{\"error\":\"1 validation error\"}"));
    assertEquals(new WorkerFailure(Kind.CLIENT_ERROR, 400, "1 validation error", false), validation);
  }

  @Test
  void aConnectionClosedMidStreamIsAResetAfterTheFirstByte() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.closeAfter(2));
    RecordingListener l = listener();
    w.send(leg(completion(GEN_COMPLETION)), l);
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.RESET, f.kind(), f.toString());
    assertTrue(f.afterFirstByte());
    assertFalse(f.retryable(), "nothing is retried after a streamed byte");
    assertEquals(2, l.chunks().size(), "the chunks before the break, each once");
  }

  @Test
  void aConnectionClosedBeforeTheAnswerIsARetryableReset() throws Exception {
    HttpWorker w = worker(KEY);
    WorkerFailure f = failureOf(w, completion(CTX_COMPLETION), Behavior.closeAfter(0));
    assertEquals(Kind.RESET, f.kind(), f.toString());
    assertFalse(f.afterFirstByte());
    assertTrue(f.retryable());
  }

  @Test
  void unparsableAnswersAreProtocolFailures() throws Exception {
    HttpWorker w = worker(KEY);
    WorkerFailure json = failureOf(w, completion(CTX_COMPLETION), Behavior.raw("application/json", "{\"id\": oops"));
    assertEquals(Kind.PROTOCOL, json.kind(), json.toString());
    assertFalse(json.retryable());

    WorkerFailure sse = failureOf(w, nonStreaming(completion(GEN_COMPLETION)), Behavior.sseForNonStream());
    assertEquals(Kind.PROTOCOL, sse.kind(), sse.toString());
    assertTrue(sse.message().contains("event stream"), sse.message());

    WorkerFailure notSse = failureOf(w, completion(GEN_COMPLETION), Behavior.jsonForStream());
    assertEquals(Kind.PROTOCOL, notSse.kind(), notSse.toString());

    fake.enqueue(Behavior.raw("text/event-stream",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\ndata: {broken\n\n"));
    RecordingListener badChunk = listener();
    w.send(leg(completion(GEN_COMPLETION)), badChunk);
    WorkerFailure f = badChunk.awaitFailure();
    assertEquals(Kind.PROTOCOL, f.kind(), f.toString());
    assertTrue(f.afterFirstByte());
    assertEquals(1, badChunk.chunks().size());
  }

  @Test
  void aStreamEndingWithoutDoneIsAReset() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.raw("text/event-stream",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"));
    RecordingListener l = listener();
    w.send(leg(completion(GEN_COMPLETION)), l);
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.RESET, f.kind(), f.toString());
    assertTrue(f.afterFirstByte());
  }

  @Test
  void theLegTimeoutCoversTheWholeExchange() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.stallAfter(0));
    RecordingListener beforeAnswer = listener();
    w.send(leg(completion(CTX_COMPLETION), null, Duration.ofMillis(100)), beforeAnswer);
    WorkerFailure f = beforeAnswer.awaitFailure();
    assertEquals(Kind.TIMEOUT, f.kind(), f.toString());
    assertTrue(f.retryable(), "a stalled worker is retried elsewhere while nothing was delivered");

    fake.enqueue(Behavior.stallAfter(1));
    RecordingListener midStream = listener();
    w.send(leg(completion(GEN_COMPLETION), null, Duration.ofMillis(300)), midStream);
    WorkerFailure g = midStream.awaitFailure();
    assertEquals(Kind.TIMEOUT, g.kind(), g.toString());
    assertTrue(g.afterFirstByte());
    assertEquals(1, midStream.chunks().size());
    assertEquals(0, w.inFlight());
  }

  // ---- cancel, close, exactly once ----

  @Test
  void cancelAbortsTheExchangeAndEndsTheCallOnceWithCancelled() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.stallAfter(0));
    RecordingListener l = listener();
    WorkerCall call = w.send(leg(completion(CTX_COMPLETION)), l);
    fake.awaitReceived("/v1/completions", 1);
    call.cancel();
    call.cancel();
    assertEquals(new WorkerFailure(Kind.CANCELLED, 0, "cancelled", false), l.awaitFailure());
    assertEquals(0, w.inFlight());

    RecordingListener after = listener();
    w.send(leg(completion(CTX_COMPLETION)), after);
    after.awaitReport(); // the worker is still usable
  }

  @Test
  void cancelMidStreamKeepsTheDeliveredChunksAndMarksTheFailureAfterTheFirstByte() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.stallAfter(1));
    CountDownLatch first = new CountDownLatch(1);
    RecordingListener l = new RecordingListener(first::countDown);
    listeners.add(l);
    WorkerCall call = w.send(leg(completion(GEN_COMPLETION)), l);
    assertTrue(first.await(10, TimeUnit.SECONDS));
    call.cancel();
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.CANCELLED, f.kind());
    assertTrue(f.afterFirstByte());
    assertEquals(1, l.chunks().size());
  }

  @Test
  void cancelFromInsideOnChunkEndsTheCallAfterOnChunkReturns() throws Exception {
    HttpWorker w = worker(KEY);
    fake.streamChunks(50);
    CompletableFuture<WorkerCall> self = new CompletableFuture<>();
    RecordingListener l = new RecordingListener(() -> self.join().cancel());
    listeners.add(l);
    self.complete(w.send(leg(completion(GEN_COMPLETION)), l));
    WorkerFailure f = l.awaitFailure();
    assertEquals(new WorkerFailure(Kind.CANCELLED, 0, "cancelled", true), f);
    assertEquals(1, l.chunks().size(), "nothing after the cancelling chunk");
    // assertContract(): onError did not nest inside onChunk
  }

  @Test
  void aListenerThrowingOnAChunkCancelsTheCall() throws Exception {
    HttpWorker w = worker(KEY);
    RecordingListener l = new RecordingListener(() -> {
      throw new IllegalStateException("client went away");
    });
    listeners.add(l);
    w.send(leg(completion(GEN_COMPLETION)), l);
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.CANCELLED, f.kind());
    assertTrue(f.message().contains("client went away"), f.message());
    assertEquals(1, l.chunks().size());
  }

  @Test
  void cancelAfterTheEndChangesNothing() throws Exception {
    HttpWorker w = worker(KEY);
    RecordingListener l = listener();
    WorkerCall call = w.send(leg(completion(GEN_COMPLETION)), l);
    l.awaitReport();
    call.cancel();
    assertEquals(1, l.terminals());
  }

  @Test
  void cancelRacingTheAnswerStillEndsEveryCallExactlyOnce() throws Exception {
    HttpWorker w = worker(KEY);
    List<RecordingListener> all = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      RecordingListener l = listener();
      all.add(l);
      WorkerCall call = w.send(leg(i % 2 == 0 ? completion(GEN_COMPLETION) : completion(CTX_COMPLETION)), l);
      if (i % 3 != 0) {
        call.cancel();
      }
    }
    for (RecordingListener l : all) {
      Object t = l.awaitTerminal();
      if (t instanceof WorkerFailure f) {
        assertEquals(Kind.CANCELLED, f.kind(), f.toString());
      }
    }
    // assertContract() in @AfterEach checks exactly one terminal call each, also after close()
  }

  @Test
  void closeEndsCallsInFlightAndLaterSendsFailToConnect() throws Exception {
    HttpWorker w = worker(KEY);
    fake.enqueue(Behavior.stallAfter(0));
    RecordingListener l = listener();
    w.send(leg(completion(CTX_COMPLETION)), l);
    fake.awaitReceived("/v1/completions", 1);
    w.close();
    WorkerFailure f = l.awaitFailure();
    assertEquals(Kind.RESET, f.kind());
    assertTrue(f.retryable(), "another worker may take it");
    assertFalse(w.isAlive());

    RecordingListener later = listener();
    w.send(leg(completion(CTX_COMPLETION)), later);
    assertEquals(Kind.CONNECT, later.awaitFailure().kind());
    w.close(); // idempotent
  }

  @Test
  void requestsRunConcurrentlyOverPooledConnections() throws Exception {
    HttpWorker w = worker(KEY);
    List<RecordingListener> all = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      RecordingListener l = listener();
      all.add(l);
      w.send(leg(i % 2 == 0 ? chat(GEN_CHAT) : completion(CTX_COMPLETION)), l);
    }
    for (int i = 0; i < all.size(); i++) {
      all.get(i).awaitReport();
      if (i % 2 == 0) {
        assertEquals(5, all.get(i).chunks().size());
      }
    }
  }

  @Test
  void errorTextComesFromTheUsualErrorShapes() {
    assertEquals("boom", Failures.errorMessage(500, bytes("{\"object\":\"error\",\"message\":\"boom\"}"), CODEC));
    assertEquals("bad", Failures.errorMessage(400, bytes("{\"error\":{\"message\":\"bad\",\"type\":\"x\"}}"), CODEC));
    assertEquals("invalid", Failures.errorMessage(400, bytes("{\"error\":\"invalid\"}"), CODEC));
    assertEquals("[{\"loc\":[\"body\"]}]", Failures.errorMessage(422, bytes("{\"detail\":[{\"loc\":[\"body\"]}]}"), CODEC));
    assertEquals("Internal Server Error", Failures.errorMessage(500, bytes("Internal Server Error\n"), CODEC));
    assertEquals("HTTP 502", Failures.errorMessage(502, new byte[0], CODEC));
    assertEquals(Failures.MAX_MESSAGE + 3, Failures.errorMessage(500, bytes("x".repeat(5000)), CODEC).length());
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
