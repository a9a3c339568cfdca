package dev.affinity.server.workermode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.executor.KvRetention;
import dev.affinity.executor.KvRetentionJson;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.AccessRecord;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.server.worker.RecordingListener;
import dev.affinity.server.worker.WorkerExtensions;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Worker mode in process: {@link WorkerServer}s on port 0 in this JVM, driven over real HTTP by the
 * {@link HttpWorker} an Affinity frontend uses.
 */
class WorkerServerTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final String KEY = "worker-test-key";
  static final Duration LONG = Duration.ofSeconds(30);
  /**
   * Small blocks, 20x faster than modelled time; contexts held 30 s of executor time, i.e. 1.5 s of wall
   * time (the hold timeout runs on the executor's clock).
   */
  static final String CONFIG = """
      {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.05}, "context_hold_timeout_ms": 1500}""";
  /** 40 token ids: two full blocks of 16 are stored after prefill (the last prompt token is never cached). */
  static final String PROMPT = java.util.stream.IntStream.rangeClosed(1, 40).mapToObj(Integer::toString)
      .collect(java.util.stream.Collectors.joining(",", "[", "]"));
  static final long BASE_ID = (1L << 40) + 1000;

  /** The worker servers of a test share this JVM, as workers of one host would share their process. */
  private final HandoffDomain handoff = new HandoffDomain();
  private final List<AutoCloseable> open = new ArrayList<>();
  private final List<RecordingListener> listeners = new ArrayList<>();
  private long nextId = BASE_ID;

  @AfterEach
  void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    handoff.close();
    listeners.forEach(RecordingListener::assertContract);
  }

  WorkerServer worker(String name, String config, String key) throws Exception {
    return worker(name, config, key, AccessLog.none());
  }

  WorkerServer worker(String name, String config, String key, AccessLog log) throws Exception {
    WorkerServer w = WorkerServer.start(config, WorkerSettings.defaults().withName(name).withAuthKey(key),
        FrontendOptions.defaults().withAccessLog(log), "test", handoff);
    open.add(w);
    return w;
  }

  HttpWorker client(WorkerServer w, String key) throws Exception {
    HttpWorker h = HttpWorker.connect(HttpWorkerSettings.of("127.0.0.1:" + w.port()).withAuthKey(key), CODEC);
    open.add(h);
    return h;
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

  /** A context-only leg as the orchestration builds it. */
  OpenAiRequest contextLeg(String conversation, int maxTokens) {
    return completion("""
        {"model": "m", "prompt": %s, "max_tokens": %d, "conversation_params": {"conversation_id": "%s"},
         "disaggregated_params": {"request_type": "context_only", "disagg_request_id": %d}}"""
        .formatted(PROMPT, maxTokens, conversation, nextId++));
  }

  /** The generation leg of a context response, as the orchestration builds it. */
  static OpenAiRequest generationLeg(OpenAiRequest client, OpenAiResponse ctx) {
    DisaggregatedParams p = ctx.firstDisaggregatedParams().orElseThrow().toBuilder()
        .requestType(DisaggRequestType.GENERATION_ONLY).ctxUsage(ctx.usage()).build();
    return client.withDisaggregatedParams(p).withPromptTokenIds(ctx.promptTokenIds());
  }

  static long id(OpenAiRequest r) {
    return r.disaggregatedParams() == null ? 1 : r.disaggregatedParams().disaggRequestId();
  }

  RecordingListener send(HttpWorker h, OpenAiRequest body, String affinity, int rankHint) {
    RecordingListener l = listener();
    h.send(new WorkerRequest(id(body), body, affinity, rankHint, LONG), l);
    return l;
  }

  static long usedBlocks(WorkerServer w) {
    long used = 0;
    for (int r = 0; r < w.executor().numRanks(); r++) {
      used += w.executor().kvCacheStats(r).usedNumBlocks();
    }
    return used;
  }

  /** Waits for a condition the worker reaches on its own (a bound for a broken build, not a timing assertion). */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting: " + what);
      Thread.sleep(20);
    }
  }

  static HttpResponse<String> post(WorkerServer w, String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + w.port() + path))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    try (HttpClientHolder c = new HttpClientHolder()) {
      return c.client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
  }

  private static final java.util.concurrent.atomic.AtomicLong NONCES = new java.util.concurrent.atomic.AtomicLong();

  /**
   * The {@link LegAuth#HEADER} an Affinity frontend with {@link #KEY} sends to {@code w} for this body, rank hint
   * and affinity id (both as sent, null for none), signed now.
   */
  static String legAuth(WorkerServer w, String path, String body, String rankHint, String affinityId) {
    return LegAuth.headerValue(new InternalAuth(KEY), new LegAuth.Claim("POST", path,
        LegAuth.sha256(body.getBytes(StandardCharsets.UTF_8)), rankHint, affinityId, w.worker().id(),
        System.currentTimeMillis(), "worker-server-test-" + NONCES.incrementAndGet()));
  }

  /** A JDK client closed after use where the JDK can (21+). */
  static final class HttpClientHolder implements AutoCloseable {
    final HttpClient client = HttpClient.newHttpClient();

    @Override
    public void close() throws Exception {
      if (client instanceof AutoCloseable c) {
        c.close();
      }
    }
  }

  // ---- /server_info, /health ----

  @Test
  void aFrontendAdoptsTheWorkersInfoWithVisibleRanks() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    assertEquals(new WorkerInfo(16, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64), h.info());
    assertEquals(2, h.info().routableRanks());
    JsonNode ext = h.serverInfo().get(WorkerExtensions.SERVER_INFO_KEY);
    assertEquals("ctx-a", ext.get("name").asText());
    assertEquals("sim", ext.get("backend").asText());
    assertTrue(h.checkHealth());

    w.worker().close(); // the executor is gone: unhealthy, and requests get 503
    assertFalse(h.checkHealth());
  }

  // ---- /_internal/tokenize ----

  @Test
  void theWorkerTokenizesTextForAFrontendAndNamesABadPrompt() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    int[] ids = h.tokenize("Once upon a time").get(15, TimeUnit.SECONDS);
    assertArrayEquals(w.worker().encodeText("Once upon a time"), ids, "the worker's own tokenizer, no special tokens");
    assertTrue(ids.length > 0);
    HttpResponse<String> answer = post(w, "/_internal/tokenize", "{\"model\": \"m\", \"prompt\": \"hello\"}");
    assertEquals(200, answer.statusCode(), answer.body());
    assertTrue(answer.body().contains("\"count\":" + w.worker().encodeText("hello").length), answer.body());
    HttpResponse<String> bad = post(w, "/_internal/tokenize", "{\"prompt\": [1, 2]}");
    assertEquals(400, bad.statusCode(), bad.body());
    assertTrue(bad.body().contains("prompt"), bad.body());
  }

  // ---- rank hint ----

  @Test
  void theRankHintIsHonouredWhenTheRankHasRoom() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    for (int rank : new int[] {1, 0, 1, 1}) {
      RecordingListener l = send(h, contextLeg("conv-" + rank, 8), null, rank);
      WorkerReport report = l.awaitReport();
      assertEquals(rank, report.rank(), "the executor ran the leg on the hinted rank");
      CompletionResponse r = assertInstanceOf(CompletionResponse.class, l.response());
      assertEquals(rank, r.firstDisaggregatedParams().orElseThrow().ctxDpRank());
      assertEquals(40, r.promptTokenIds().size(), "context responses carry prompt_token_ids");
      assertEquals(40, report.promptTokens());
    }
  }

  @Test
  void aBadRankHintIsIgnoredAndTheWorkerPicksTheRank() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    for (String hint : new String[] {"7", "-3", "one"}) {
      String body = CODEC.toJsonString(contextLeg("c", 4));
      HttpResponse<String> r = post(w, "/v1/completions", body, WorkerExtensions.RANK_HINT_HEADER, hint,
          LegAuth.HEADER, legAuth(w, "/v1/completions", body, hint, null));
      assertEquals(200, r.statusCode(), r.body());
    }
  }

  // ---- context → generation through two workers ----

  @Test
  void aContextLegThenAGenerationLegOnAnotherWorkerStreamWhatTheAggregatedRequestWould() throws Exception {
    WorkerServer ctxServer = worker("ctx-a", CONFIG, KEY);
    WorkerServer genServer = worker("gen-a", CONFIG, KEY);
    WorkerServer aggServer = worker("agg-a", CONFIG, KEY);
    HttpWorker ctx = client(ctxServer, KEY);
    HttpWorker gen = client(genServer, KEY);
    HttpWorker agg = client(aggServer, KEY);

    OpenAiRequest client = completion("""
        {"model": "m", "prompt": %s, "max_tokens": 12, "stream": true, "stream_options": {"include_usage": true},
         "conversation_params": {"conversation_id": "conv-1"}}""".formatted(PROMPT));
    long id = nextId++;
    OpenAiRequest ctxBody = client.withoutStreaming().withDisaggregatedParams(
        DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).disaggRequestId(id).build());
    RecordingListener c = send(ctx, ctxBody, null, 1);
    assertEquals(1, c.awaitReport().rank());
    OpenAiResponse ctxResponse = c.response();
    assertEquals("length", ctxResponse.firstFinishReason().orElseThrow());
    assertTrue(usedBlocks(ctxServer) > 0, "the context's KV is held for its generation leg");

    RecordingListener g = send(gen, generationLeg(client, ctxResponse), null, 0);
    WorkerReport report = g.awaitReport();
    assertEquals(0, report.rank() < 0 ? 0 : report.rank());
    List<OpenAiStreamChunk> chunks = g.chunks();
    assertFalse(chunks.isEmpty());
    CompletionStreamResponse last = (CompletionStreamResponse) chunks.get(chunks.size() - 1);
    assertEquals("length", last.choices().get(0).finishReason());
    assertEquals(40, last.usage().promptTokens());
    assertEquals(0, usedBlocks(ctxServer), "in one process the pull frees the context's KV at once");
    await(() -> usedBlocks(genServer) == 0, "the generation leg's KV is released");

    // the same request aggregated on a third worker: the same tokens, so the same text
    OpenAiRequest aggBody = client.withDisaggregatedParams(
        DisaggregatedParams.builder(DisaggRequestType.CONTEXT_AND_GENERATION).disaggRequestId(id).build());
    RecordingListener a = send(agg, aggBody, null, -1);
    a.awaitReport();
    assertEquals(text(a.chunks()), text(chunks), "the generation leg streams every token, the first included");
    assertTrue(text(chunks).startsWith(text(ctxResponse)), "the context leg's one token comes first");
  }

  /**
   * Upstream's base64 ids ({@code gen_tokids_ctxbytes}): a chat context leg that sends {@code prompt_token_ids_b64} and
   * asks {@code return_prompt_token_ids_b64} prefills those ids and answers them in the same form; the generation leg
   * that carries only that string serves the request; a string that is not whole int32 ids is a 400 naming the field.
   */
  @Test
  void baseSixtyFourPromptIdsGoInAndComeBackOut() throws Exception {
    WorkerServer ctxServer = worker("ctx-b64", CONFIG, KEY);
    WorkerServer genServer = worker("gen-b64", CONFIG, KEY);
    HttpWorker ctx = client(ctxServer, KEY);
    HttpWorker gen = client(genServer, KEY);
    int[] ids = java.util.stream.IntStream.rangeClosed(1, 40).toArray();
    String b64 = dev.affinity.protocol.TokenIds.of(ids).toBase64();
    OpenAiRequest client = chat("""
        {"model": "m", "messages": [{"role": "user", "content": "ignored: the ids are the prompt"}],
         "prompt_token_ids_b64": "%s", "max_tokens": 4}""".formatted(b64));
    long id = nextId++;
    RecordingListener c = send(ctx, client.withDisaggregatedParams(DisaggregatedParams.builder(
        DisaggRequestType.CONTEXT_ONLY).disaggRequestId(id).returnPromptTokenIdsB64(true).build()), null, -1);
    c.awaitReport();
    dev.affinity.protocol.ChatCompletionResponse answer = (dev.affinity.protocol.ChatCompletionResponse) c.response();
    assertEquals(b64, answer.promptTokenIdsB64(), "the ids it prefilled, as it was asked for them");
    assertNull(answer.promptTokenIds());
    assertEquals(40, answer.usage().promptTokens());

    DisaggregatedParams p = answer.firstDisaggregatedParams().orElseThrow().toBuilder()
        .requestType(DisaggRequestType.GENERATION_ONLY).ctxUsage(answer.usage()).build();
    RecordingListener g = send(gen, ((dev.affinity.protocol.ChatCompletionRequest) client).withDisaggregatedParams(p)
        .withPromptTokenIdsB64(answer.promptTokenIdsB64()), null, -1);
    g.awaitReport();
    assertEquals(40, g.response().usage().promptTokens(), "the generation leg decoded the string");

    RecordingListener bad = send(ctx, chat("""
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "prompt_token_ids_b64": "AQID",
         "max_tokens": 1}"""), null, -1);
    WorkerFailure f = bad.awaitFailure();
    assertEquals(400, f.status(), f.toString());
    assertTrue(f.message().contains("prompt_token_ids_b64"), f.toString());
  }

  static String text(List<OpenAiStreamChunk> chunks) {
    StringBuilder sb = new StringBuilder();
    for (OpenAiStreamChunk chunk : chunks) {
      if (chunk instanceof CompletionStreamResponse c && !c.choices().isEmpty()) {
        sb.append(c.choices().get(0).text());
      }
    }
    return sb.toString();
  }

  static String text(OpenAiResponse r) {
    return ((CompletionResponse) r).choices().get(0).text();
  }

  @Test
  void aHeldContextIsFreedOnItsOwnTimeoutAndItsGenerationLegThenFailsRetryably() throws Exception {
    WorkerServer ctxServer = worker("ctx-a", CONFIG, KEY);
    WorkerServer genServer = worker("gen-a", CONFIG, KEY);
    HttpWorker ctx = client(ctxServer, KEY);
    HttpWorker gen = client(genServer, KEY);
    OpenAiRequest ctxBody = contextLeg("conv-1", 8);
    RecordingListener c = send(ctx, ctxBody, null, -1);
    c.awaitReport();
    assertTrue(usedBlocks(ctxServer) > 0, "held for the generation leg");
    await(() -> usedBlocks(ctxServer) == 0, "context_hold_timeout_ms frees the held KV");

    RecordingListener g = send(gen, generationLeg(ctxBody.withDisaggregatedParams(null), c.response()), null, -1);
    WorkerFailure f = g.awaitFailure();
    assertEquals(WorkerFailure.Kind.SERVER_ERROR, f.kind(), f.toString());
    assertEquals(502, f.status());
    assertTrue(f.message().contains("expired"), f.message());
    assertTrue(f.retryable(), "the frontend retries from the context leg");
  }

  // ---- KV events ----

  @Test
  void kvEventsAreDrainedThroughKvCacheEventsIntoTheSink() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    LinkedBlockingQueue<List<KvEvent>> sink = new LinkedBlockingQueue<>();
    h.onKvEvents(sink::add);
    assertEquals(2, h.pollKvEvents().get(10, TimeUnit.SECONDS), "one created event per rank");
    assertEquals(List.of(0, 1), sink.poll().stream().map(KvEvent::rank).toList());

    send(h, contextLeg("conv-1", 4), null, 1).awaitReport();
    int n = h.pollKvEvents().get(10, TimeUnit.SECONDS);
    assertTrue(n >= 1, "the prefilled blocks are stored");
    List<KvEvent> batch = sink.poll();
    KvEvent stored = batch.stream().filter(e -> e.type() == KvEventType.STORED).findFirst().orElseThrow();
    assertEquals(1, stored.rank(), "events carry the rank that cached the blocks");
    assertEquals(2, stored.blockHashes().length, "two full blocks of 16 tokens");
    assertEquals(32, stored.tokens().length);
    assertEquals(0, h.pollKvEvents().get(10, TimeUnit.SECONDS), "drained");
  }

  // ---- KV retention ----

  @Test
  void aLegsKvRetentionReachesTheExecutorsCache() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    LinkedBlockingQueue<List<KvEvent>> sink = new LinkedBlockingQueue<>();
    h.onKvEvents(sink::add);
    send(h, contextLeg("conv-1", 4), null, 1).awaitReport();
    // the same prompt again, its blocks kept at priority 80 for 30 s after release: the cache claims the cached
    // blocks at that priority (an "updated" event each, TensorRT-LLM's priorityUpdated)
    OpenAiRequest again = contextLeg("conv-1", 4);
    RecordingListener l = listener();
    h.send(new WorkerRequest(id(again), again, null, 1, LONG, null, null, KvRetention.wholePrompt(80, 30_000)), l);
    l.awaitReport();
    List<KvEvent> events = new ArrayList<>();
    await(() -> {
      try {
        h.pollKvEvents().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      sink.forEach(events::addAll);
      sink.clear();
      return events.stream().filter(e -> e.type() == KvEventType.UPDATED).count() >= 2;
    }, "the updated events of the two cached blocks");
    List<KvEvent> updated = events.stream().filter(e -> e.type() == KvEventType.UPDATED).toList();
    assertEquals(2, updated.size(), updated.toString());
    for (KvEvent e : updated) {
      assertEquals(80, e.value());
      assertEquals(1, e.rank());
    }
  }

  @Test
  void aMalformedKvRetentionIsRefusedWith400NamingTheHeader() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, null);
    for (String value : new String[] {"{", "{\"token_range_retention_configs\": [{\"token_start\": 0, \"token_end\": null,"
        + " \"priority\": 101}]}", "{\"token_range_retention_configs\": [], \"colour\": 1}"}) {
      String body = CODEC.toJsonString(contextLeg("c", 4));
      HttpResponse<String> r = post(w, "/v1/completions", body, WorkerExtensions.KV_RETENTION_HEADER, value);
      assertEquals(400, r.statusCode(), r.body());
      assertTrue(r.body().contains(WorkerExtensions.KV_RETENTION_HEADER), r.body());
    }
    String body = CODEC.toJsonString(contextLeg("c", 4));
    assertEquals(200, post(w, "/v1/completions", body, WorkerExtensions.KV_RETENTION_HEADER,
        KvRetentionJson.toJson(KvRetention.wholePrompt(60, 1000))).statusCode());
  }

  // ---- internal auth ----

  @Test
  void aGenerationLegWithABadOrMissingSignatureIsRefusedWith401() throws Exception {
    WorkerServer ctxServer = worker("ctx-a", CONFIG, KEY);
    WorkerServer genServer = worker("gen-a", CONFIG, KEY);
    RecordingListener c = send(client(ctxServer, KEY), contextLeg("conv-1", 8), null, -1);
    c.awaitReport();
    OpenAiRequest genBody = generationLeg(contextLeg("conv-1", 8).withDisaggregatedParams(null), c.response());

    for (String key : new String[] {"another-key", null}) {
      RecordingListener g = send(client(genServer, key), genBody, null, -1);
      WorkerFailure f = g.awaitFailure();
      assertEquals(WorkerFailure.Kind.CLIENT_ERROR, f.kind(), f.toString());
      assertEquals(401, f.status());
      assertFalse(f.retryable());
    }
    HttpResponse<String> raw = post(genServer, "/v1/completions", CODEC.toJsonString(genBody),
        InternalAuth.DISAGG_AUTH_HEADER, "sha256=00");
    assertEquals(401, raw.statusCode());
    assertEquals("authentication_error", CODEC.readTree(raw.body().getBytes(StandardCharsets.UTF_8))
        .at("/error/type").asText());

    RecordingListener ok = send(client(genServer, KEY), genBody, null, -1);
    ok.awaitReport(); // signed with the shared key: served
  }

  @Test
  void withoutAKeyHandOffStateIsAcceptedUnsigned() throws Exception {
    WorkerServer ctxServer = worker("ctx-a", CONFIG, null);
    WorkerServer genServer = worker("gen-a", CONFIG, null);
    RecordingListener c = send(client(ctxServer, null), contextLeg("conv-1", 8), null, -1);
    c.awaitReport();
    OpenAiRequest genBody = generationLeg(contextLeg("conv-1", 8).withDisaggregatedParams(null), c.response());
    send(client(genServer, null), genBody, null, -1).awaitReport();
  }

  @Test
  void aSubAgentAffinityIdCountsOnlyWhenItsSignatureVerifies() throws Exception {
    String config = """
        {"num_ranks": 2, "tokens_per_block": 16, "clock": {"time_scale": 0.05}, "adp_router": {"type": "conversation"}}""";
    LinkedBlockingQueue<AccessRecord> log = new LinkedBlockingQueue<>();
    WorkerServer w = worker("ctx-a", config, KEY, log::add);
    HttpWorker signed = client(w, KEY);
    // "solo" is bound to rank 0 and the parent to rank 1 (a hint on a first turn becomes the binding)
    assertEquals(0, send(signed, contextLeg("solo", 4), null, 0).awaitReport().rank());
    assertEquals(1, send(signed, contextLeg("child-1", 4), "parent", 1).awaitReport().rank());

    assertEquals(1, send(signed, contextLeg("solo", 4), "parent", -1).awaitReport().rank(),
        "a verified affinity id is the rank key");
    String solo = CODEC.toJsonString(contextLeg("solo", 4));
    HttpResponse<String> wronglySigned = post(w, "/v1/completions", solo, InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, "sha256=00", LegAuth.HEADER, legAuth(w, "/v1/completions", solo, null,
            "parent"));
    assertEquals(200, wronglySigned.statusCode(), wronglySigned.body());
    assertEquals(0, CODEC.readTree(wronglySigned.body().getBytes(StandardCharsets.UTF_8))
        .at("/choices/0/disaggregated_params/ctx_dp_rank").asInt(),
        "a wrongly signed one is ignored: the own conversation id is the key");
    OpenAiRequest aggregated = contextLeg("solo", 4).withDisaggregatedParams(
        DisaggregatedParams.builder(DisaggRequestType.CONTEXT_AND_GENERATION).disaggRequestId(nextId++).build());
    send(signed, aggregated, "parent", -1).awaitReport();
    AccessRecord last = null;
    for (AccessRecord r = log.poll(10, TimeUnit.SECONDS); r != null; r = log.poll()) {
      last = r;
    }
    assertNotNull(last);
    assertEquals(aggregated.disaggregatedParams().disaggRequestId(), last.requestId());
    assertEquals(0, last.ctxRank(), "neither context_only nor generation_only: ignored, like an aggregated server"
        + " (the worker's access log shows the rank it ran on)");
    assertNull(last.affinity());
  }

  @Test
  void withRequireInternalAuthAWronglySignedSubAgentAffinityIdIsRefusedWith401() throws Exception {
    WorkerSettings strict = WorkerSettings.defaults().withName("ctx-strict").withAuthKey(KEY).withRequireInternalAuth(true);
    WorkerServer w = WorkerServer.start(CONFIG, strict, FrontendOptions.defaults().withAccessLog(AccessLog.none()),
        "test", handoff);
    open.add(w);
    String solo = CODEC.toJsonString(contextLeg("solo", 4));
    HttpResponse<String> refused = post(w, "/v1/completions", solo, InternalAuth.SUBAGENT_AFFINITY_HEADER, "parent",
        InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER, "sha256=00", LegAuth.HEADER, legAuth(w, "/v1/completions", solo, null,
            "parent"));
    assertEquals(401, refused.statusCode(), refused.body());
    assertTrue(refused.body().contains(InternalAuth.SUBAGENT_AFFINITY_AUTH_HEADER), refused.body());
    send(client(w, KEY), contextLeg("solo", 4), "parent", -1).awaitReport(); // signed: served
    send(client(w, KEY), contextLeg("solo", 4), null, -1).awaitReport(); // no affinity id: served
  }

  @Test
  void requireInternalAuthWithoutAKeyIsAStartUpError() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> WorkerSettings.defaults().withRequireInternalAuth(true));
    assertTrue(e.getMessage().contains("--auth-key"), e.getMessage());
  }

  // ---- streaming and the trtllm-serve contract ----

  @Test
  void aggregatedRequestsStreamAsServerSentEvents() throws Exception {
    WorkerServer w = worker("agg-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    RecordingListener l = send(h, chat("""
        {"model": "m", "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 6, "stream": true}"""),
        null, 1);
    l.awaitReport();
    List<OpenAiStreamChunk> chunks = l.chunks();
    assertEquals(6, chunks.size(), "one chunk per token");
    ChatCompletionStreamResponse first = assertInstanceOf(ChatCompletionStreamResponse.class, chunks.get(0));
    assertEquals("assistant", first.choices().get(0).delta().role());
    assertEquals("length", ((ChatCompletionStreamResponse) chunks.get(5)).choices().get(0).finishReason());

    String rawBody = "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 3, \"stream\": true}";
    HttpResponse<String> raw = post(w, "/v1/completions", rawBody,
        LegAuth.HEADER, legAuth(w, "/v1/completions", rawBody, null, null));
    assertEquals(200, raw.statusCode());
    assertTrue(raw.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
    assertTrue(raw.body().endsWith("data: [DONE]\n\n"), raw.body());
  }

  /**
   * Upstream's frontend with {@code TRTLLM_SERVE_ENABLE_MSGSPEC=1} sends msgpack bodies flagged
   * {@code X-TRTLLM-Msgpack: 1} (its Content-Type still JSON): the worker decodes them as upstream's does.
   */
  @Test
  void aMsgpackBodyFromAStockFrontendIsDecoded() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, null);
    com.fasterxml.jackson.databind.ObjectMapper msgpack =
        new com.fasterxml.jackson.databind.ObjectMapper(new org.msgpack.jackson.dataformat.MessagePackFactory());
    byte[] body = msgpack.writeValueAsBytes(CODEC.readTree("""
        {"model": "m", "prompt": %s, "max_tokens": 3,
         "disaggregated_params": {"request_type": "context_only", "disagg_request_id": %d}}"""
        .formatted(PROMPT, nextId++).getBytes(StandardCharsets.UTF_8)));
    HttpResponse<String> ok = postBytes(w, body, "X-TRTLLM-Msgpack", "1");
    assertEquals(200, ok.statusCode(), ok.body());
    assertEquals("context_only", CODEC.readTree(ok.body().getBytes(StandardCharsets.UTF_8))
        .at("/choices/0/disaggregated_params/request_type").asText(), ok.body());
    HttpResponse<String> unflagged = postBytes(w, body);
    assertEquals(400, unflagged.statusCode(), "msgpack without the flag is not JSON: " + unflagged.body());
    HttpResponse<String> bad = postBytes(w, new byte[] {(byte) 0xc1}, "X-TRTLLM-Msgpack", "1");
    assertEquals(400, bad.statusCode(), bad.body());
    assertTrue(bad.body().contains("msgpack"), bad.body());
  }

  static HttpResponse<String> postBytes(WorkerServer w, byte[] body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + w.port() + "/v1/completions"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    try (HttpClientHolder c = new HttpClientHolder()) {
      return c.client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }
  }

  @Test
  void legsAnAffinityWorkerCannotServeAreRefusedWith400() throws Exception {
    WorkerServer w = worker("gen-a", CONFIG, KEY);
    HttpWorker h = client(w, KEY);
    OpenAiRequest generationFirst = completion("""
        {"model": "m", "prompt": "hi", "max_tokens": 3,
         "disaggregated_params": {"request_type": "generation_only", "ctx_request_id": 5, "disagg_request_id": 5,
           "schedule_style": 1}}""");
    OpenAiRequest streamedContext = completion("""
        {"model": "m", "prompt": "hi", "max_tokens": 3, "stream": true,
         "disaggregated_params": {"request_type": "context_only", "disagg_request_id": 6}}""");
    for (OpenAiRequest body : List.of(generationFirst, streamedContext)) {
      WorkerFailure f = send(h, body, null, -1).awaitFailure();
      assertEquals(400, f.status(), f.toString());
    }
    assertEquals(400, post(w, "/v1/completions", "{", LegAuth.HEADER, legAuth(w, "/v1/completions", "{", null, null))
        .statusCode(), "the frontend's own checks apply");
  }

  @Test
  void aWorkerOnAModelsTokenizerCountsInItsTokensAndReportsItsRenderFingerprint() throws Exception {
    java.nio.file.Path dir = dev.affinity.tokenizer.TestModels.dir(dev.affinity.tokenizer.TestModels.LLAMA3);
    WorkerServer w = WorkerServer.start(CONFIG, WorkerSettings.defaults().withModel("m").withTokenizer(dir.toString()),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "test");
    open.add(w);
    HttpWorker h = client(w, null);
    try (dev.affinity.tokenizer.ModelTokenizer t = dev.affinity.tokenizer.ModelTokenizer.load(dir)) {
      assertEquals(new dev.affinity.tokenizer.PromptRenderer(t).fingerprint(),
          h.serverInfo().path("render_fingerprint").path("digest").asText(), "a frontend on the same files matches it");
      HttpResponse<String> r = post(w, "/v1/completions", "{\"model\": \"m\", \"prompt\": \"Hello world\", \"max_tokens\": 2}");
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(t.encode("Hello world", true).length, new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body()).at("/usage/prompt_tokens").asInt(),
          "Llama's BOS and its own ids");
    }
    assertTrue(client(worker("plain", CONFIG, KEY), KEY).serverInfo().path("render_fingerprint").isMissingNode(),
        "a BPE codec promises no rendering");
  }

  @Test
  void aWorkerWithAModelNameServesOnlyThatModel() throws Exception {
    WorkerServer w = WorkerServer.start(CONFIG, WorkerSettings.defaults().withModel("m"),
        FrontendOptions.defaults().withAccessLog(AccessLog.none()), "test");
    open.add(w);
    assertEquals(404, post(w, "/v1/completions", "{\"model\": \"other\", \"prompt\": \"hi\"}").statusCode());
    assertEquals(200, post(w, "/v1/completions", "{\"model\": \"m\", \"prompt\": \"hi\", \"max_tokens\": 2}")
        .statusCode());
  }

  @Test
  void aClosedExecutorAnswers503() throws Exception {
    WorkerServer w = worker("ctx-a", CONFIG, KEY);
    w.worker().close();
    String body = CODEC.toJsonString(contextLeg("c", 4));
    HttpResponse<String> r = post(w, "/v1/completions", body, LegAuth.HEADER, legAuth(w, "/v1/completions", body, null, null));
    assertEquals(503, r.statusCode(), r.body());
    assertNotNull(r.body());
  }
}
