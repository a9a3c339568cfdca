package dev.affinity.disagg;

import static dev.affinity.disagg.DisaggFakes.context;
import static dev.affinity.disagg.DisaggFakes.failing;
import static dev.affinity.disagg.DisaggFakes.generation;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.RequestAdmission;
import dev.affinity.agent.AgentScheduling;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.AgentSettings;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.disagg.DisaggFakes.RecordingSink;
import dev.affinity.disagg.DisaggFakes.ScriptedWorker;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvRetention;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.routing.RouterStats;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.timer.Scheduler;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DisaggServiceTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final String PARENT = "X-Dynamo-Parent-Session-ID";

  /** Records the routing keys a router receives. */
  static final class RecordingRouter implements Router {
    final Router delegate;
    final List<String> keys = new CopyOnWriteArrayList<>();
    final List<RoutingRequest> requests = new CopyOnWriteArrayList<>();

    RecordingRouter(Router delegate) {
      this.delegate = delegate;
    }

    @Override
    public String type() {
      return delegate.type();
    }

    @Override
    public Selection select(RoutingRequest request, Set<String> excludedWorkerIds) {
      keys.add(request.routingKey());
      requests.add(request);
      return delegate.select(request, excludedWorkerIds);
    }

    @Override
    public void addWorker(Worker worker) {
      delegate.addWorker(worker);
    }

    @Override
    public void removeWorker(String workerId) {
      delegate.removeWorker(workerId);
    }

    @Override
    public List<Worker> workers() {
      return delegate.workers();
    }

    @Override
    public void onKvEvents(String workerId, List<KvEvent> events) {
      delegate.onKvEvents(workerId, events);
    }

    @Override
    public RouterStats stats() {
      return delegate.stats();
    }
  }

  /** A scheduler whose tasks run only when the test says so. */
  static final class ManualScheduler implements Scheduler {
    final List<Runnable> tasks = new ArrayList<>();
    final List<Duration> delays = new ArrayList<>();

    @Override
    public Runnable schedule(Runnable task, Duration delay) {
      tasks.add(task);
      delays.add(delay);
      return () -> {
        int i = tasks.indexOf(task);
        if (i >= 0) {
          tasks.remove(i);
          delays.remove(i);
        }
      };
    }

    void fireAll() {
      new ArrayList<>(tasks).forEach(Runnable::run);
    }

    /** Runs the task scheduled last (not the request's timeout, scheduled first) and returns its delay. */
    Duration fireLast() {
      Runnable task = tasks.remove(tasks.size() - 1);
      Duration delay = delays.remove(delays.size() - 1);
      task.run();
      return delay;
    }
  }

  final ManualScheduler scheduler = new ManualScheduler();
  final AtomicLong clock = new AtomicLong(1_000);
  RecordingRouter ctxRouter;
  RecordingRouter genRouter;
  DisaggService service;
  RequestAdmission admission;

  private DisaggService service(ScheduleStyle style, SubagentScope scope, int maxRetries, List<? extends Worker> ctx,
      List<? extends Worker> gen) {
    ctxRouter = new RecordingRouter(new RouterFactory().create(new dev.affinity.config.RouterConfig("conversation",
        dev.affinity.config.Location.unknown("t"), Map.of(), Map.of()), "context_servers", RouterContext.of(Fleet.CONTEXT)));
    genRouter = new RecordingRouter(new RouterFactory().create(new dev.affinity.config.RouterConfig("load_balancing",
        dev.affinity.config.Location.unknown("t"), Map.of(), Map.of()), "generation_servers", RouterContext.of(Fleet.GENERATION)));
    ctx.forEach(ctxRouter::addWorker);
    gen.forEach(genRouter::addWorker);
    ConversationResolver resolver = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        Optional.of(PARENT), scope));
    service = new DisaggService(new DisaggSettings(style, scope, maxRetries, Duration.ofSeconds(30), -1), ctxRouter, genRouter,
        new RequestIds(1, 0, clock::get), scheduler);
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, resolver, PromptTokenizer.NONE);
    return service;
  }

  /** {@link #service} with agent-aware scheduling on (priority and retention), on the test's clock (ms as ns). */
  private DisaggService agentService(List<? extends Worker> ctx, List<? extends Worker> gen) {
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, ctx, gen);
    service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1,
        Duration.ofSeconds(30), -1), ctxRouter, genRouter, new RequestIds(1, 0, clock::get), scheduler,
        dev.affinity.tracing.RequestTracer.NONE, null,
        new AgentScheduling(new AgentSettings(true, 10, true), 3600, () -> clock.get() * 1_000_000));
    return service;
  }

  /** What a frontend does with a request: admission, then orchestration (a rejection answers the sink). */
  private void handle(OpenAiRequest request, HeaderSource headers, RecordingSink sink) {
    admission.admitAndHandle(request, headers, service, sink);
  }

  static OpenAiRequest completion(boolean stream) {
    return CODEC.parseCompletionRequest(("{\"model\": \"m\", \"prompt\": \"hello world\", \"max_tokens\": 5, \"stream\": " + stream
        + ", \"temperature\": 0.5, \"my_field\": {\"kept\": true}}").getBytes(StandardCharsets.UTF_8));
  }

  static HeaderSource headers(String... kv) {
    Map<String, String> m = new java.util.HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return HeaderSource.of(m);
  }

  private void assertAllReleased() {
    assertEquals(0, ctxRouter.stats().outstandingSelections(), "context selections released");
    assertEquals(0, genRouter.stats().outstandingSelections(), "generation selections released");
    assertEquals(0, ctxRouter.stats().doubleReleases() + genRouter.stats().doubleReleases());
  }

  @Test
  void legsCarryTheAgentPriorityOfTheirCall() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    agentService(List.of(c), List.of(g));
    handle(completion(false), headers("x-session-id", "s"), new RecordingSink());  // the session's first call
    handle(completion(false), headers("x-session-id", "s"), new RecordingSink());  // a call in progress
    handle(completion(false), headers("x-session-id", "s-sub", PARENT, "s"), new RecordingSink());  // a sub-agent
    handle(CODEC.parseCompletionRequest("{\"model\": \"m\", \"prompt\": \"x\", \"max_tokens\": 2, \"priority\": 0.2}"
        .getBytes(StandardCharsets.UTF_8)), headers("x-session-id", "s"), new RecordingSink());
    List<Double> ctx = c.received.stream().map(r -> r.body().priority()).toList();
    List<Double> gen = g.received.stream().map(r -> r.body().priority()).toList();
    assertEquals(List.of(0.5, 0.75, 0.75, 0.2), ctx, "new, in progress, sub-agent, the client's own");
    assertEquals(ctx, gen, "both legs");
    assertAllReleased();
  }

  @Test
  void withoutAgentSchedulingLegsKeepTheClientsPriority() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    handle(completion(false), headers("x-session-id", "s"), new RecordingSink());
    handle(completion(false), headers("x-session-id", "s"), new RecordingSink());
    assertNull(c.received.get(1).body().priority());
    assertNull(g.received.get(1).body().priority());
    assertNull(c.received.get(1).retention());
  }

  @Test
  void aContextLegCarriesARetentionAndTheGenerationLegNone() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    agentService(List.of(c), List.of(g));
    handle(completion(false), headers("x-session-id", "s"), new RecordingSink());
    handle(completion(false), HeaderSource.NONE, new RecordingSink());
    // the conversation router reads no KV events, so the rank's capacity is unknown: nothing is raised, and the
    // default priority goes out (putting back a priority an earlier turn raised)
    assertEquals(KvRetention.defaults(), c.received.get(0).retention());
    assertNull(c.received.get(1).retention(), "a request without a session");
    assertNull(g.received.get(0).retention());
  }

  @Test
  void anAnswerThatCallsAToolEndsTheSessionsTurnInAToolCall() {
    // whole answers: finish_reason tool_calls; streamed ones: a chunk whose delta carries tool_calls
    for (boolean stream : new boolean[] {false, true}) {
      ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
      ScriptedWorker g = new ScriptedWorker("gen0", (r, l) -> {
        boolean tool = r.body().maxOutputTokens().orElse(0) == 3;  // 3: the tool turn
        try {
          if (r.streaming()) {
            String delta = tool ? "{\"tool_calls\": [{\"index\": 0, \"id\": \"call_1\", \"type\": \"function\","
                + " \"function\": {\"name\": \"ls\", \"arguments\": \"{}\"}}]}" : "{\"content\": \"done\"}";
            l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(("{\"id\": \"c\", \"object\": \"chat.completion.chunk\","
                + " \"created\": 1, \"model\": \"m\", \"choices\": [{\"index\": 0, \"delta\": " + delta + ","
                + " \"finish_reason\": \"" + (tool ? "tool_calls" : "stop") + "\"}]}").getBytes(StandardCharsets.UTF_8))));
          } else {
            l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(DisaggFakes.chatResponse("x", tool ? "tool_calls" : "stop", null)));
          }
        } catch (dev.affinity.protocol.ProtocolException e) {
          throw new AssertionError(e);
        }
        l.onComplete(new WorkerReport(0, 0, 10, 100));
      });
      agentService(List.of(c), List.of(g));
      handle(chat(3, stream), headers("x-session-id", "tools"), new RecordingSink());
      handle(chat(2, stream), headers("x-session-id", "answers"), new RecordingSink());
      // the fleet's fraction (1 of 2 turns) is a prior worth two turns: (own tool turns + 2 x 0.5) / (own turns + 2)
      assertEquals(2.0 / 3, service.agents().history("tools").toolCallProbability(), 1e-9, "stream " + stream);
      assertEquals(1.0 / 3, service.agents().history("answers").toolCallProbability(), 1e-9, "stream " + stream);
      assertAllReleased();
    }
  }

  private static OpenAiRequest chat(int maxTokens, boolean stream) {
    return CODEC.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}],"
        + " \"max_tokens\": " + maxTokens + ", \"stream\": " + stream + "}").getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void contextFirstCarriesTheContextParamsIntoTheGenerationLeg() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(3));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers("x-session-id", "conv-1"), sink);

    assertEquals(List.of("respond"), sink.events);
    CompletionResponse r = (CompletionResponse) sink.response;
    assertEquals("generated", r.choices().get(0).text());
    assertNull(r.choices().get(0).disaggregatedParams(), "handoff state never reaches the client");
    assertEquals(10, r.usage().promptTokens(), "usage from the context leg");
    assertEquals(4, r.usage().cachedTokensOrZero());

    OpenAiRequest ctxBody = c.received.get(0).body();
    assertEquals(DisaggRequestType.CONTEXT_ONLY, ctxBody.disaggregatedParams().requestType());
    assertEquals("conv-1", ctxBody.conversationParams().conversationId());
    assertTrue(!ctxBody.isStreaming());
    OpenAiRequest genBody = g.received.get(0).body();
    DisaggregatedParams gp = genBody.disaggregatedParams();
    assertEquals(DisaggRequestType.GENERATION_ONLY, gp.requestType());
    assertEquals(777L, gp.ctxRequestId());
    assertEquals("b3BhcXVl", gp.encodedOpaqueState());
    assertEquals(1, gp.ctxDpRank());
    assertEquals(10, gp.ctxUsage().promptTokens());
    assertEquals(c.received.get(0).requestId(), gp.disaggRequestId());
    assertEquals(10, ((CompletionRequest) genBody).promptTokenIds().orElseThrow().size(), "prompt token ids from the context");
    assertTrue(CODEC.toJsonString(genBody).contains("\"my_field\":{\"kept\":true}"), "client fields forwarded");
    assertEquals("ctx=ctx0; ctx_rank=1; gen=gen0; gen_rank=0; conversation=conv-1; reused=4", sink.route.toHeader());
    assertTrue(sink.route.requestId() >= RequestIds.MIN_GLOBAL_ID);
    assertAllReleased();
  }

  @Test
  void aRankTheExecutorDidNotReportItselfIsShownWithItsSource() {
    // The worker inferred the rank (the pytorch backend without ctx_dp_rank), or could not say at all.
    for (String source : new String[] {"hint", "kv_events", null}) {
      int reported = source == null ? -1 : 1;
      ScriptedWorker c = new ScriptedWorker("ctx0", (r, l) -> {
        l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(DisaggFakes.ctxResponse(r, "length")));
        l.onComplete(new WorkerReport(reported, 4, 10, 100, source));
      });
      ScriptedWorker g = new ScriptedWorker("gen0", generation(3));
      service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
      RecordingSink sink = new RecordingSink();
      handle(completion(false), headers("x-session-id", "conv-1"), sink);
      int rank = source == null ? c.received.get(0).rankHint() : 1;
      String shown = source == null ? "router" : source;
      assertTrue(rank >= 0);
      assertEquals("ctx=ctx0; ctx_rank=" + rank + "; ctx_rank_src=" + shown
          + "; gen=gen0; gen_rank=0; conversation=conv-1; reused=4", sink.route.toHeader());
      assertEquals(shown, sink.route.context().rankSource());
      assertAllReleased();
    }
  }

  @Test
  void streamingRelaysEveryChunkInOrderThenDone() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(4));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(true), headers(), sink);
    assertEquals(List.of("start", "chunk", "chunk", "chunk", "chunk", "end"), sink.events);
    assertEquals(List.of("t0", "t1", "t2", "t3"), sink.texts());
    assertTrue(!c.received.get(0).body().isStreaming(), "the context leg never streams");
    assertTrue(g.received.get(0).body().isStreaming());
    assertAllReleased();
  }

  @Test
  void aContextThatAlreadyFinishedIsReturnedAsIsAndStreamedWithItsTokens() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("stop"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(2));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink plain = new RecordingSink();
    handle(completion(false), headers(), plain);
    assertEquals(List.of("respond"), plain.events);
    assertEquals("A", ((CompletionResponse) plain.response).choices().get(0).text());
    RecordingSink streaming = new RecordingSink();
    handle(completion(true), headers(), streaming);
    assertEquals(List.of("start", "chunk", "end"), streaming.events);
    assertEquals(List.of("A"), streaming.texts(), "its token is streamed, not a bare [DONE]");
    assertEquals(0, g.received.size(), "no generation leg");
    assertAllReleased();
  }

  /** A completion answer with one choice ({@code text} null: none) and these params. */
  static CompletionResponse answer(String text, String finish, DisaggregatedParams params) {
    return new CompletionResponse("cmpl-x", "text_completion", 1L, "m",
        List.of(new dev.affinity.protocol.CompletionChoice(0, text, null, null, finish, null, params, Map.of())),
        new dev.affinity.protocol.UsageInfo(10, 1, 11, 0), null, Map.of());
  }

  static java.util.function.BiConsumer<dev.affinity.worker.WorkerRequest, dev.affinity.worker.WorkerListener> answering(
      OpenAiResponse answer) {
    return (r, l) -> {
      l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(answer));
      l.onComplete(new WorkerReport(0, 0, 10, 100));
    };
  }

  static final CompletionResponse NO_CHOICES = new CompletionResponse(null, null, null, null, null, null, null, Map.of());

  @Test
  void aLegAnswerWithoutWhatItsLegRequiresIsA502NamingIt() {
    List<String> messages = new ArrayList<>();
    for (OpenAiResponse ctxAnswer : List.of(NO_CHOICES, answer("A", "length", null), answer("A", null, null),
        answer("A", "length", DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).build()))) {
      ScriptedWorker c = new ScriptedWorker("ctx0", answering(ctxAnswer));
      ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
      service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 0, List.of(c), List.of(g));
      for (boolean stream : new boolean[] {false, true}) {
        RecordingSink sink = new RecordingSink();
        handle(completion(stream), headers(), sink);
        assertEquals(List.of("fail 502"), sink.events, ctxAnswer + " stream " + stream);
        messages.add(sink.error.error().message());
      }
      assertEquals(0, g.received.size(), "only the context leg was sent");
      assertAllReleased();
    }
    assertEquals(List.of(
        "context worker ctx0: answered without choices[0].disaggregated_params (no choices)",
        "context worker ctx0: answered without choices[0].disaggregated_params (no choices)",
        "context worker ctx0: answered without choices[0].disaggregated_params",
        "context worker ctx0: answered without choices[0].disaggregated_params",
        "context worker ctx0: answered without choices[0].disaggregated_params",
        "context worker ctx0: answered without choices[0].disaggregated_params",
        "context worker ctx0: answered without choices[0].disaggregated_params.ctx_request_id",
        "context worker ctx0: answered without choices[0].disaggregated_params.ctx_request_id"), messages);

    messages.clear();
    for (var genScript : List.<java.util.function.BiConsumer<dev.affinity.worker.WorkerRequest,
        dev.affinity.worker.WorkerListener>>of(answering(NO_CHOICES), answering(answer(null, "length", null)),
        (r, l) -> l.onComplete(new WorkerReport(0, 0, 10, 100)))) {
      ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
      ScriptedWorker g = new ScriptedWorker("gen0", genScript);
      service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 0, List.of(c), List.of(g));
      RecordingSink sink = new RecordingSink();
      handle(completion(false), headers(), sink);
      assertEquals(List.of("fail 502"), sink.events);
      messages.add(sink.error.error().message());
      assertEquals(1, c.released.size(), "the held context is freed");
      assertAllReleased();
    }
    assertEquals(List.of("generation worker gen0: answered without choices[0] (no choices)",
        "generation worker gen0: answered without choices[0].text",
        "generation worker gen0: completed the leg without an answer"), messages);
  }

  @Test
  void aStreamWithoutAChoiceFailsBeforeTheClientHasAByteAndIsRetriedOnAnotherWorker() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker empty = new ScriptedWorker("genA", (r, l) -> {
      l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(new dev.affinity.protocol.CompletionStreamResponse("x", null, null, null, List.of(), null, Map.of())));
      l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(new dev.affinity.protocol.CompletionStreamResponse("x", null, null, null, null, null, Map.of())));
      l.onComplete(new WorkerReport(0, 0, 10, 100));
    });
    ScriptedWorker good = new ScriptedWorker("genB", generation(2));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(empty, good));
    good.alive = false;  // the first pick is genA
    RecordingSink alone = new RecordingSink();
    handle(completion(true), headers(), alone);
    assertEquals(List.of(), alone.events, "genA is the only live generation worker: its retry waits a back-off");
    scheduler.fireLast();
    assertEquals(List.of("fail 502"), alone.events, "the retry there failed the same way: " + alone.error);
    assertTrue(alone.error.error().message().contains("streamed no chunk with a choice"), alone.error.error().message());

    good.alive = true;
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(empty, good));
    RecordingSink sink = new RecordingSink();
    handle(completion(true), headers(), sink);
    assertEquals(List.of("start", "chunk", "chunk", "end"), sink.events);
    assertEquals(List.of("t0", "t1"), sink.texts(), "only the second worker's chunks reach the client");
    assertEquals(1, sink.route.retries());
    assertAllReleased();
  }

  @Test
  void legitimateAnswersStillPass() {
    // chunks without a choice (a usage chunk) before the first with one are relayed, in order, once it comes
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", (r, l) -> {
      if (r.streaming()) {
        l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(new dev.affinity.protocol.CompletionStreamResponse("u", null, null, null, List.of(),
            new dev.affinity.protocol.UsageInfo(10, 0, 10, 0), Map.of())));
        l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(DisaggFakes.chunk("", null)));
        l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(DisaggFakes.chunk("b", "length")));
      } else {
        l.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(answer("", "length", null)));  // empty text is an answer
      }
      l.onComplete(new WorkerReport(0, 0, 10, 100));
    });
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 0, List.of(c), List.of(g));
    RecordingSink streamed = new RecordingSink();
    handle(completion(true), headers(), streamed);
    assertEquals(List.of("start", "chunk", "chunk", "chunk", "end"), streamed.events);
    assertEquals("u", streamed.chunks.get(0).id(), "the withheld chunk comes first");
    assertEquals(List.of("", "b"), streamed.texts());
    RecordingSink whole = new RecordingSink();
    handle(completion(false), headers(), whole);
    assertEquals(List.of("respond"), whole.events);
    assertEquals("", ((CompletionResponse) whole.response).choices().get(0).text());

    // a context that finished the request on its first token may come without disaggregated_params (an in-process
    // executor hands nothing over then): it is the answer itself
    ScriptedWorker finished = new ScriptedWorker("ctx1", answering(answer("A", "stop", null)));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 0, List.of(finished), List.of(g));
    RecordingSink early = new RecordingSink();
    handle(completion(false), headers(), early);
    assertEquals(List.of("respond"), early.events);
    assertEquals("A", ((CompletionResponse) early.response).choices().get(0).text());
    assertAllReleased();
  }

  /** Every schedule style x scope: the routing keys the two routers actually receive. */
  @ParameterizedTest
  @CsvSource({
      "CONTEXT_FIRST, CONTEXT, parent, child",
      "CONTEXT_FIRST, BOTH, parent, parent",
      "GENERATION_FIRST, CONTEXT, parent, child",
      "GENERATION_FIRST, BOTH, parent, parent"})
  void affinityRulesHoldInEveryScheduleStyleAndScope(ScheduleStyle style, SubagentScope scope, String ctxKey, String genKey) {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(style, scope, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers("x-session-id", "child", PARENT, "parent"), sink);
    assertEquals(List.of(ctxKey), ctxRouter.keys);
    assertEquals(List.of(genKey), genRouter.keys);
    assertEquals(ctxKey, sink.route.ctxKey(), "the route records the keys the routers received");
    assertEquals(genKey, sink.route.genKey());
    assertEquals("parent", c.received.get(0).affinityId(), "the context leg carries the affinity id");
    assertEquals(scope == SubagentScope.BOTH ? "parent" : null, g.received.get(0).affinityId());
    assertEquals("child", c.received.get(0).body().conversationParams().conversationId(), "the own id is never rewritten");
    // a main-agent request routes by its own id in every fleet
    handle(completion(false), headers("x-session-id", "main"), new RecordingSink());
    assertEquals("main", ctxRouter.keys.get(1));
    assertEquals("main", genRouter.keys.get(1));
    if (style == ScheduleStyle.GENERATION_FIRST) {
      DisaggregatedParams gp = g.received.get(0).body().disaggregatedParams();
      assertEquals(gp.disaggRequestId(), gp.ctxRequestId(), "generation-first names the context by the request id");
    }
    assertAllReleased();
  }

  @Test
  void connectionErrorsAreRetriedOnAnotherWorkerWithANewRequestId() {
    ScriptedWorker bad = new ScriptedWorker("ctxA", failing(WorkerFailure.Kind.CONNECT, 0));
    ScriptedWorker good = new ScriptedWorker("ctxB", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(bad, good), List.of(g));
    for (int i = 0; i < 4; i++) {
      RecordingSink sink = new RecordingSink();
      handle(completion(false), headers("x-session-id", "s" + i), sink);
      assertEquals(List.of("respond"), sink.events, sink.events.toString());
      assertEquals("ctxB", sink.route.ctxWorker());
    }
    assertTrue(bad.received.size() >= 1);
    for (var r : bad.received) {
      assertTrue(good.received.stream().noneMatch(x -> x.requestId() == r.requestId()), "the retry re-issued the id");
    }
    assertAllReleased();
  }

  @Test
  void aStalledWorkerTimesOutWithinItsShareOfTheBudgetAndIsRetriedElsewhere() {
    ScriptedWorker stalled = new ScriptedWorker("ctxA", failing(WorkerFailure.Kind.TIMEOUT, 0));
    ScriptedWorker good = new ScriptedWorker("ctxB", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(stalled, good), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers("x-session-id", "stall"), sink);
    assertEquals(List.of("respond"), sink.events);
    assertEquals(1, stalled.received.size(), "the stalled worker was tried first");
    assertEquals("ctxB", sink.route.ctxWorker());
    assertEquals(Duration.ofSeconds(10), good.received.get(0).timeout(), "30 s budget / (1 + max_retries 2)");
    assertAllReleased();
  }

  @Test
  void clientErrorsAreNotRetriedAndRetriesAreBounded() {
    ScriptedWorker four = new ScriptedWorker("ctxA", failing(WorkerFailure.Kind.CLIENT_ERROR, 422));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 3, List.of(four), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of("fail 422"), sink.events);
    assertEquals(1, four.received.size(), "4xx is never retried");

    ScriptedWorker a = new ScriptedWorker("ctxA", failing(WorkerFailure.Kind.SERVER_ERROR, 500));
    ScriptedWorker b = new ScriptedWorker("ctxB", failing(WorkerFailure.Kind.SERVER_ERROR, 503));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(a, b), List.of(g));
    RecordingSink sink2 = new RecordingSink();
    handle(completion(false), headers(), sink2);
    assertEquals(List.of("fail 502"), sink2.events);
    assertEquals(2, a.received.size() + b.received.size(), "one try plus max_retries = 1");
    assertTrue(sink2.error.error().message().contains("after 1 retry"), sink2.error.error().message());
    assertAllReleased();
  }

  @Test
  void nothingIsRetriedAfterTheFirstStreamedByte() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g1 = new ScriptedWorker("genA", (r, l) -> {
      l.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(DisaggFakes.chunk("x", null)));
      l.onError(new WorkerFailure(WorkerFailure.Kind.RESET, 0, "reset", true));
    });
    ScriptedWorker g2 = new ScriptedWorker("genB", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 3, List.of(c), List.of(g1, g2));
    RecordingSink sink = new RecordingSink();
    g2.alive = false;  // make sure the first pick is genA
    handle(completion(true), headers(), sink);
    // The stream ends with the error as its last event (the status line is gone), naming the worker that failed.
    assertEquals(List.of("start", "chunk", "fail 502"), sink.events);
    assertTrue(sink.error.error().message().contains("generation worker genA failed mid-stream"), sink.error.error().message());
    assertEquals("genA", sink.route.genWorker(), "the access log names the generation worker of the cut stream");
    assertEquals(0, g2.received.size());
    assertAllReleased();
  }

  @Test
  void aFailedGenerationFreesTheHeldContextAndRetriesFromTheContextLeg() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g1 = new ScriptedWorker("genA", failing(WorkerFailure.Kind.CONNECT, 0));
    ScriptedWorker g2 = new ScriptedWorker("genB", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g1, g2));
    g2.alive = false;
    RecordingSink first = new RecordingSink();
    handle(completion(false), headers(), first);
    assertEquals(List.of("fail 503"), first.events, "the retry finds no other generation worker");
    assertEquals(1, c.released.size(), "the context whose generation failed was released");
    assertEquals(1, c.received.size(), "and the retry ran no second context: no generation worker was left for it");
    g2.alive = true;
    RecordingSink second = new RecordingSink();
    handle(completion(false), headers(), second);
    assertEquals(List.of("respond"), second.events);
    assertEquals("genB", second.route.genWorker());
    assertAllReleased();
  }

  @Test
  void aTimeoutCancelsTheCallAndReleasesEverything() {
    ScriptedWorker c = new ScriptedWorker("ctx0", (r, l) -> { });  // never answers
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of(), sink.events);
    scheduler.fireAll();
    assertEquals(List.of("fail 504"), sink.events);
    assertEquals(1, c.cancelled.size());
    assertAllReleased();
  }

  @Test
  void aClientThatDisconnectsBetweenTheLegsFreesTheContext() {
    List<Runnable> pendingGen = new ArrayList<>();
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", (r, l) -> pendingGen.add(() -> { }));  // never answers
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(true), headers(), sink);
    sink.disconnect.run();
    assertEquals(1, g.cancelled.size(), "the generation call is cancelled");
    assertEquals(1, c.released.size(), "the context KV is released");
    assertEquals(List.of(), sink.events, "nothing is written to a gone client");
    assertAllReleased();
  }

  @Test
  void aCallThatEndedOnTheCallersThreadIsNeverCancelledLater() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));  // answers inside send()
    ScriptedWorker g = new ScriptedWorker("gen0", (r, l) -> { });        // never answers
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    sink.disconnect.run();
    assertEquals(0, c.cancelled.size(), "the finished context call is not cancelled");
    assertEquals(1, g.cancelled.size(), "the generation call in flight is");
    assertEquals(1, c.released.size(), "the held context is released instead");
    assertAllReleased();
  }

  @Test
  void aRetryInEveryScheduleStyleGoesToAnotherWorkerWithANewId() {
    for (ScheduleStyle style : ScheduleStyle.values()) {
      ScriptedWorker bad = new ScriptedWorker("genA", failing(WorkerFailure.Kind.SERVER_ERROR, 503));
      ScriptedWorker good = new ScriptedWorker("genB", generation(1));
      ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
      service(style, SubagentScope.CONTEXT, 1, List.of(c), List.of(bad, good));
      good.alive = false;  // the first pick is genA
      RecordingSink sink = new RecordingSink();
      bad.script = (r, l) -> {
        good.alive = true;
        l.onError(new WorkerFailure(WorkerFailure.Kind.SERVER_ERROR, 503, "busy", false));
      };
      handle(completion(false), headers("x-session-id", "s"), sink);
      assertEquals(List.of("respond"), sink.events, style + ": " + sink.events);
      assertEquals("genB", sink.route.genWorker(), style.name());
      assertEquals(1, sink.route.retries(), style.name());
      assertNotEquals(bad.received.get(0).requestId(), good.received.get(0).requestId(), style.name());
      assertAllReleased();
    }
  }

  @Test
  void clientInternalFieldsAndBadHeadersAreRejected() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    OpenAiRequest withParams = CODEC.parseCompletionRequest(("{\"model\": \"m\", \"prompt\": \"x\", \"disaggregated_params\":"
        + " {\"request_type\": \"generation_only\"}}").getBytes(StandardCharsets.UTF_8));
    RecordingSink a = new RecordingSink();
    handle(withParams, headers(), a);
    assertEquals(List.of("fail 400"), a.events);
    assertEquals("disaggregated_params", a.error.error().param());
    RecordingSink b = new RecordingSink();
    handle(completion(false), headers("x-session-id", "x".repeat(300)), b);
    assertEquals(List.of("fail 400"), b.events);
    assertEquals("x-session-id", b.error.error().param());
    assertEquals(0, c.received.size(), "no bad request reaches a worker");
    assertAllReleased();
  }

  @Test
  void aTransientFailureOfTheOnlyWorkerIsRetriedThereAfterABackoff() {
    // issue 43: the fleet's only context worker stalled one leg past its timeout; the request is not a 503
    // "1 known, 1 excluded" while its budget has room: it goes back to that worker after a back-off.
    int[] calls = {0};
    ScriptedWorker c = new ScriptedWorker("ctx0", (r, l) -> {
      if (calls[0]++ == 0) {
        l.onError(new WorkerFailure(WorkerFailure.Kind.TIMEOUT, 0, "leg timed out", false));
      } else {
        context("length").accept(r, l);
      }
    });
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers("x-session-id", "only"), sink);
    assertEquals(List.of(), sink.events, "no 503: the retry waits");
    assertEquals(RetryPolicy.FIRST_BACKOFF, scheduler.fireLast());
    assertEquals(List.of("respond"), sink.events);
    assertEquals(2, c.received.size());
    assertNotEquals(c.received.get(0).requestId(), c.received.get(1).requestId(), "the retry re-issued the id");
    assertEquals("ctx0", sink.route.ctxWorker());
    assertAllReleased();
  }

  @Test
  void theBackoffDoublesPerRetryAndIsBoundedByTheLegsShare() {
    ScriptedWorker c = new ScriptedWorker("ctx0", failing(WorkerFailure.Kind.SERVER_ERROR, 503));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 5, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    List<Duration> backoffs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      backoffs.add(scheduler.fireLast());
    }
    // 30 s budget / (1 + 5) = 5 s per attempt; a back-off is at most a tenth of it
    assertEquals(List.of(Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofMillis(400), Duration.ofMillis(500),
        Duration.ofMillis(500)), backoffs);
    assertEquals(List.of("fail 502"), sink.events, "max_retries spent: the worker's own failure, not a 503");
    assertTrue(sink.error.error().message().contains("after 5 retries"), sink.error.error().message());
    assertEquals(6, c.received.size());
    assertAllReleased();
  }

  @Test
  void aRetryWaitingForItsBackoffEndsWithTheRequest() {
    ScriptedWorker c = new ScriptedWorker("ctx0", failing(WorkerFailure.Kind.RESET, 0));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    scheduler.tasks.get(0).run();  // the request's timeout comes first
    assertEquals(List.of("fail 504"), sink.events);
    scheduler.fireLast();  // the back-off ends after the request: nothing is sent
    assertEquals(1, c.received.size());
    assertEquals(List.of("fail 504"), sink.events);
    assertAllReleased();
  }

  @Test
  void theOnlyWorkerRefusingConnectionsIsNotRetried() {
    // nothing listens there: the worker is down (or restarting), not stalled; health checks will say which
    ScriptedWorker c = new ScriptedWorker("ctx0", failing(WorkerFailure.Kind.CONNECT, 0));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of("fail 503"), sink.events);
    assertEquals(1, c.received.size());
    assertAllReleased();
  }

  @Test
  void aDeadOnlyWorkerIsNotRetried() {
    ScriptedWorker c = new ScriptedWorker("ctx0", null);
    c.script = (r, l) -> {
      c.alive = false;  // the failure took it out of the fleet (health checks, membership)
      l.onError(new WorkerFailure(WorkerFailure.Kind.SERVER_ERROR, 503, "shutting down", false));
    };
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 2, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of("fail 503"), sink.events);
    assertEquals(1, c.received.size());
    assertAllReleased();
  }

  @Test
  void noWorkerIsA503() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    c.alive = false;
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of());
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of("fail 503"), sink.events);
  }

  @Test
  void withoutALiveGenerationWorkerTheContextLegNeverRuns() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("genA", generation(1));
    g.alive = false;
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    RecordingSink sink = new RecordingSink();
    handle(completion(false), headers(), sink);
    assertEquals(List.of("fail 503"), sink.events);
    assertEquals(0, c.received.size(), "no prefill was spent on a request with nowhere to decode");
    assertAllReleased();
  }

  @Test
  void conditionalDisaggregationLetsAGenerationWorkerWithTheCachedPrefixServeAlone() {
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    ctxRouter = new RecordingRouter(new RouterFactory().create(new dev.affinity.config.RouterConfig("round_robin",
        dev.affinity.config.Location.unknown("t"), Map.of(), Map.of()), "context_servers", RouterContext.of(Fleet.CONTEXT)));
    RouterContext genCtx = RouterContext.of(Fleet.GENERATION);
    genRouter = new RecordingRouter(new RouterFactory().create(new dev.affinity.config.RouterConfig("kv_cache_aware",
        dev.affinity.config.Location.unknown("t"), Map.of(), Map.of()), "generation_servers", genCtx));
    ctxRouter.addWorker(c);
    genRouter.addWorker(g);
    int[] prompt = new int[101];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 1000 + i;
    }
    ConversationResolver resolver = new ConversationResolver(new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS,
        Optional.empty(), SubagentScope.CONTEXT));
    service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, Duration.ofSeconds(30), 16),
        ctxRouter, genRouter, new RequestIds(1, 0, clock::get), scheduler);
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, resolver, r -> prompt);

    // nothing cached on the generation worker: context leg first, then the reserved generation worker
    RecordingSink cold = new RecordingSink();
    handle(completion(false), headers(), cold);
    assertEquals(List.of("respond"), cold.events);
    assertEquals(1, c.received.size());
    assertEquals(DisaggRequestType.GENERATION_ONLY, g.received.get(0).body().disaggregatedParams().requestType());
    assertEquals(1, genRouter.keys.size(), "the generation worker was chosen once, before the context leg");

    // the generation worker holds all but 4 of the prompt's tokens (block size 4): it serves alone
    long[] keys = new dev.affinity.kv.BlockHasher(dev.affinity.kv.HashAlgorithm.V1_BLOCK_KEY, 4).keys(prompt, null);
    genCtx.prefixIndex().store(genCtx.prefixIndex().location("gen0", 0), keys, 0, keys.length - 1);
    RecordingSink warm = new RecordingSink();
    handle(completion(false), headers(), warm);
    assertEquals(List.of("respond"), warm.events);
    assertEquals(1, c.received.size(), "no context leg this time");
    OpenAiRequest alone = g.received.get(1).body();
    assertNull(alone.disaggregatedParams(), "an aggregated request on the generation worker");
    assertAllReleased();
  }

  @Test
  void chatIdsReplaceTheMessagesOnTheLegsOnlyWhenTheTokenizerSaysSoAndTheContentKeyFollows() {
    dev.affinity.protocol.ChatCompletionRequest chat = CODEC.parseChatCompletionRequest(
        "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2}"
            .getBytes(StandardCharsets.UTF_8));
    int[] ids = {5, 6, 7};
    Map<Boolean, Long> contentKeys = new java.util.HashMap<>();
    for (boolean forward : new boolean[] {false, true}) {
      ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
      ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
      service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
      admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, admission.resolver(),
          fixedIds(ids, forward));
      handle(chat, headers(), new RecordingSink());
      dev.affinity.protocol.ChatCompletionRequest leg = (dev.affinity.protocol.ChatCompletionRequest) c.received.get(0).body();
      if (forward) {
        assertArrayEquals(ids, leg.promptTokenIds().toArray(), "the ids replace the messages");
      } else {
        assertNull(leg.promptTokenIds(), "the workers render the chat themselves");
      }
      RoutingRequest routed = ctxRouter.requests.get(0);
      assertArrayEquals(ids, routed.tokens(), "routing uses the ids either way");
      contentKeys.put(forward, routed.contentKey());
    }
    assertEquals(dev.affinity.routing.ContentKey.of(chat, null), contentKeys.get(false));
    assertEquals(dev.affinity.routing.ContentKey.of(chat, ids), contentKeys.get(true),
        "upstream keys on the written-back ids too");
    assertNotEquals(contentKeys.get(false), contentKeys.get(true));
  }

  /**
   * Upstream's {@code gen_tokids_ctxbytes}: the ids the frontend tokenized go to the context leg as
   * {@code prompt_token_ids_b64}, which asks for its answer's ids so; with {@code gen_strip_message_history} the
   * generation leg carries the context's ids and only the last message.
   */
  @Test
  void withBase64IdsTheFrontendsIdsGoEncodedAndTheGenerationLegKeepsTheLastMessage() {
    OpenAiRequest chat = new ProtocolCodec().parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": [{\"role\": "
        + "\"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2}")
        .getBytes(StandardCharsets.UTF_8));
    int[] ids = {5, 6, 7, 70_000};
    ScriptedWorker c = new ScriptedWorker("ctx0", context("length"));
    ScriptedWorker g = new ScriptedWorker("gen0", generation(1));
    service(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1, List.of(c), List.of(g));
    service = new DisaggService(new DisaggSettings(ScheduleStyle.CONTEXT_FIRST, SubagentScope.CONTEXT, 1,
        Duration.ofSeconds(30), -1, true, true), ctxRouter, genRouter, new RequestIds(1, 0, clock::get), scheduler);
    admission = new RequestAdmission(ClientRequestGuard.strict(), RequestAdmission.ANY_MODEL, admission.resolver(),
        fixedIds(ids, true));
    RecordingSink sink = new RecordingSink();
    handle(chat, headers(), sink);
    dev.affinity.protocol.ChatCompletionRequest ctxLeg = (dev.affinity.protocol.ChatCompletionRequest) c.received.get(0).body();
    assertEquals(TokenIds.of(ids).toBase64(), ctxLeg.promptTokenIdsB64());
    assertNull(ctxLeg.promptTokenIds());
    assertEquals(Boolean.TRUE, ctxLeg.disaggregatedParams().returnPromptTokenIdsB64());
    assertEquals(2, ctxLeg.messages().size(), "the context leg keeps the history");
    assertArrayEquals(ids, TokenIds.fromBase64(ctxLeg.promptTokenIdsB64(), "f").toArray());
    dev.affinity.protocol.ChatCompletionRequest genLeg = (dev.affinity.protocol.ChatCompletionRequest) g.received.get(0).body();
    assertEquals(List.of("hi"), genLeg.messageTexts(), "the generation leg carries the last message only");
    assertTrue(genLeg.promptTokenIds() != null || genLeg.promptTokenIdsB64() != null, "and the context's ids");
  }

  /** A tokenizer that gives every request {@code ids}, forwarded to the legs when {@code forward}. */
  private static PromptTokenizer fixedIds(int[] ids, boolean forward) {
    return new PromptTokenizer() {
      @Override
      public int[] tokenize(OpenAiRequest request) {
        return ids;
      }

      @Override
      public boolean forwardsIds(OpenAiRequest request) {
        return forward;
      }
    };
  }

  @Test
  void requestIdsAreSnowflakesAboveTheLocalRange() {
    RequestIds ids = new RequestIds(17, 3, () -> 123_456L);
    long a = ids.next();
    long b = ids.next();
    assertNotEquals(a, b);
    assertTrue(a >= RequestIds.MIN_GLOBAL_ID && b >= RequestIds.MIN_GLOBAL_ID);
  }
}
