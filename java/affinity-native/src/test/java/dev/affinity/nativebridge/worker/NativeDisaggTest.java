package dev.affinity.nativebridge.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.DisaggSettings;
import dev.affinity.disagg.RequestIds;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpaqueState;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.timer.RealScheduler;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Disaggregated serving end to end over in-process CPU executors (no HTTP). */
class NativeDisaggTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final String EXEC = """
      {"num_ranks": 2, "tokens_per_block": 16, "kv_blocks_per_rank": 2048, "clock": {"mode": "real", "time_scale": 0.001},
       "adp_router": {"type": "conversation"}}""";
  static final BpeTokenCodec CODEC_BPE = new BpeTokenCodec("cl100k_base");

  final List<NativeWorker> workers = new ArrayList<>();
  final RealScheduler scheduler = new RealScheduler();
  final HandoffDomain handoff = new HandoffDomain();
  DisaggService service;
  RequestAdmission admission;

  @AfterEach
  void tearDown() {
    workers.forEach(NativeWorker::close);
    handoff.close();
    scheduler.close();
  }

  private NativeWorker worker(String id) {
    NativeWorker w = new NativeWorker(id, NativeExecutor.create("sim", EXEC, handoff), CODEC_BPE, 16, handoff);
    workers.add(w);
    return w;
  }

  private DisaggService build(ScheduleStyle style, String ctxRouterType) {
    Router ctx = new RouterFactory().create(new RouterConfig(ctxRouterType, Location.unknown("t"), Map.of(), Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    Router gen = new RouterFactory().create(new RouterConfig("load_balancing", Location.unknown("t"), Map.of(), Map.of()),
        "generation_servers", RouterContext.of(Fleet.GENERATION));
    for (String id : List.of("ctx-0", "ctx-1")) {
      NativeWorker w = worker(id);
      ctx.addWorker(w);
      w.onKvEvents(events -> ctx.onKvEvents(w.id(), events));
    }
    for (String id : List.of("gen-0", "gen-1")) {
      gen.addWorker(worker(id));
    }
    ConversationResolver resolver = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        Optional.of("X-Dynamo-Parent-Session-ID"), SubagentScope.CONTEXT));
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, resolver,
        r -> workers.get(0).promptTokens(r));
    service = new DisaggService(new DisaggSettings(style, SubagentScope.CONTEXT, 1, Duration.ofSeconds(30), -1), ctx, gen,
        new RequestIds(3), scheduler);
    return service;
  }

  /** Waits for the end of one answer. */
  static final class Waiter implements ClientSink {
    final CountDownLatch done = new CountDownLatch(1);
    final List<OpenAiStreamChunk> chunks = new CopyOnWriteArrayList<>();
    volatile OpenAiResponse response;
    volatile RouteInfo route;
    volatile int status;
    volatile ErrorResponse error;
    volatile boolean ended;

    @Override
    public void respondEncoded(dev.affinity.worker.EncodedResponse encodedR, RouteInfo route) {
      OpenAiResponse r = encodedR == null ? null : encodedR.parsed();
      response = r;
      this.route = route;
      status = 200;
      done.countDown();
    }

    @Override
    public void streamStart(RouteInfo route) {
      status = 200;
    }

    @Override
    public void streamEncoded(dev.affinity.worker.EncodedChunk encodedChunk) {
      OpenAiStreamChunk chunk = encodedChunk.parsed();
      chunks.add(chunk);
    }

    @Override
    public void streamEnd(RouteInfo route) {
      this.route = route;
      ended = true;
      done.countDown();
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      this.status = status;
      this.error = error;
      this.route = route;
      done.countDown();
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      status = -1;
      done.countDown();
    }

    @Override
    public void onDisconnect(Runnable callback) {}

    Waiter await() throws InterruptedException {
      assertTrue(done.await(30, TimeUnit.SECONDS), "answer within 30 s");
      return this;
    }
  }

  private Waiter send(String json, Map<String, String> headers) throws InterruptedException {
    OpenAiRequest r = json.contains("\"messages\"")
        ? CODEC.parseChatCompletionRequest(json.getBytes(StandardCharsets.UTF_8))
        : CODEC.parseCompletionRequest(json.getBytes(StandardCharsets.UTF_8));
    Waiter w = new Waiter();
    admission.admitAndHandle(r, HeaderSource.of(headers), service, w);
    return w.await();
  }

  @Test
  void aCompletionRunsThroughBothLegs() throws Exception {
    build(ScheduleStyle.CONTEXT_FIRST, "conversation");
    Waiter w = send("{\"model\": \"m\", \"prompt\": \"The quick brown fox jumps over the lazy dog\", \"max_tokens\": 6}", Map.of());
    assertEquals(200, w.status, () -> w.error == null ? "" : w.error.error().message());
    CompletionResponse r = (CompletionResponse) w.response;
    assertEquals("length", r.choices().get(0).finishReason());
    assertEquals(6, r.usage().completionTokens());
    assertEquals(CODEC_BPE.encode("The quick brown fox jumps over the lazy dog").length, r.usage().promptTokens());
    assertTrue(w.route.ctxWorker().startsWith("ctx-") && w.route.genWorker().startsWith("gen-"), w.route.toHeader());
    assertTrue(w.route.ctxRank() >= 0 && w.route.genRank() >= 0, w.route.toHeader());
    for (NativeWorker nw : workers) {
      for (int rank = 0; rank < 2; rank++) {
        assertEquals(0, nw.executor().kvCacheStats(rank).usedNumBlocks(), nw.id() + " holds no KV after the request");
      }
    }
  }

  @Test
  void subAgentsFollowTheirParentsContextWorkerAndRank() throws Exception {
    build(ScheduleStyle.CONTEXT_FIRST, "conversation");
    String system = "You are a coding agent. ".repeat(40);
    Waiter parent = send("{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"" + system + "\"},"
        + "{\"role\": \"user\", \"content\": \"plan the work\"}], \"max_tokens\": 4}", Map.of("x-session-id", "parent-1"));
    assertEquals(200, parent.status);
    Set<String> genWorkers = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      Waiter child = send("{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"" + system + "\"},"
          + "{\"role\": \"user\", \"content\": \"sub task " + i + "\"}], \"max_tokens\": 4}",
          Map.of("x-session-id", "child-" + i, "X-Dynamo-Parent-Session-ID", "parent-1"));
      assertEquals(200, child.status);
      assertEquals(parent.route.ctxWorker(), child.route.ctxWorker(), child.route.toHeader());
      assertEquals(parent.route.ctxRank(), child.route.ctxRank(), "the executor served it on the parent's rank");
      assertEquals("parent-1", child.route.affinityId());
      assertEquals("child-" + i, child.route.conversationId());
      assertTrue(child.route.reusedTokens() > 0, "the shared prefix was reused: " + child.route.toHeader());
      genWorkers.add(child.route.genWorker());
    }
    assertEquals(2, genWorkers.size(), "generation stays load-balanced with scope context");
  }

  @Test
  void chatStreamsEveryTokenInOrder() throws Exception {
    build(ScheduleStyle.CONTEXT_FIRST, "round_robin");
    Waiter w = send("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 5,"
        + " \"stream\": true, \"stream_options\": {\"include_usage\": true}}", Map.of());
    assertTrue(w.ended);
    // one chunk per decode step; the first carries the context's first token too
    assertEquals(4, w.chunks.size());
    ChatCompletionStreamResponse first = (ChatCompletionStreamResponse) w.chunks.get(0);
    assertEquals("assistant", first.choices().get(0).delta().role());
    ChatCompletionStreamResponse last = (ChatCompletionStreamResponse) w.chunks.get(3);
    assertEquals("length", last.choices().get(0).finishReason());
    assertNotNull(last.usage());
    assertEquals(5, last.usage().completionTokens());
  }

  @Test
  void theContextStateReachesTheGenerationExecutorAsBytesWithoutBase64() throws Exception {
    build(ScheduleStyle.CONTEXT_FIRST, "round_robin");
    List<OpaqueState> seen = new CopyOnWriteArrayList<>();
    Router gen = new RouterFactory().create(new RouterConfig("load_balancing", Location.unknown("t"), Map.of(), Map.of()),
        "generation_servers", RouterContext.of(Fleet.GENERATION));
    NativeWorker target = workers.get(2);
    gen.addWorker(new Worker() {  // records what the generation leg carries, then hands it to a real worker
      @Override
      public String id() {
        return target.id();
      }

      @Override
      public WorkerInfo info() {
        return target.info();
      }

      @Override
      public boolean isAlive() {
        return target.isAlive();
      }

      @Override
      public WorkerCall send(WorkerRequest request, WorkerListener listener) {
        seen.add(request.body().disaggregatedParams().opaqueState());
        return target.send(request, listener);
      }
    });
    Router ctx = new RouterFactory().create(new RouterConfig("round_robin", Location.unknown("t"), Map.of(), Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    ctx.addWorker(workers.get(0));
    service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1,
        Duration.ofSeconds(30), -1), ctx, gen, new RequestIds(3), scheduler);
    Waiter w = send("{\"model\": \"m\", \"prompt\": \"hand the context over as bytes\", \"max_tokens\": 4}", Map.of());
    assertEquals(200, w.status, () -> w.error == null ? "" : w.error.error().message());
    assertEquals(1, seen.size());
    assertTrue(seen.get(0).isUnencoded(), "the executor's bytes went from executor to executor with no base64");
  }

  @Test
  void generationFirstHandsTheContextOverInProcess() throws Exception {
    build(ScheduleStyle.GENERATION_FIRST, "conversation");
    Waiter w = send("{\"model\": \"m\", \"prompt\": \"generation first works too\", \"max_tokens\": 3}", Map.of("x-session-id", "g1"));
    assertEquals(200, w.status, () -> w.error == null ? "" : w.error.error().message());
    assertEquals(3, ((CompletionResponse) w.response).usage().completionTokens());
  }

  @Test
  void aFailedGenerationFreesTheContextKv() throws Exception {
    build(ScheduleStyle.CONTEXT_FIRST, "round_robin");
    // the context leg reserves 1 output token; the generation leg cannot fit 40k tokens in 2048 x 16
    Waiter w = send("{\"model\": \"m\", \"prompt\": \"too long an answer\", \"max_tokens\": 40000}", Map.of());
    assertEquals(400, w.status);
    assertTrue(w.error.error().message().contains("KV blocks"), w.error.error().message());
    for (NativeWorker nw : workers) {
      for (int rank = 0; rank < 2; rank++) {
        assertEquals(0, nw.executor().kvCacheStats(rank).usedNumBlocks(), nw.id() + " rank " + rank + " KV back to baseline");
      }
      assertEquals(0, nw.executor().iterationStats().heldContexts());
    }
  }
}
