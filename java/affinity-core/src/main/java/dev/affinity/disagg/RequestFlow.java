package dev.affinity.disagg;

import dev.affinity.agent.AgentPriority;
import dev.affinity.agent.AgentScheduling;
import dev.affinity.agent.AgentSessions;
import dev.affinity.executor.KvRetention;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.TokenIds;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.ContentKey;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.TracedSink;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One admitted request from its first attempt to the last byte: the state its two {@link Leg}s and its
 * {@link Schedule} share (the attempt's request id, the route so far, the context held for the generation
 * leg, whether the client stream has started), the retry decision, and the endings. Every transition runs
 * under {@link #lock()}; the client sink hears exactly one ending.
 */
final class RequestFlow {
  private static final Logger log = LoggerFactory.getLogger(RequestFlow.class);

  private final DisaggService service;
  private final AdmittedRequest admitted;
  private final OpenAiRequest client;
  private final ClientSink sink;
  /** What the legs are built from: the client's request, or after a resume the stream's continuation. */
  private OpenAiRequest request;
  /** The prompt's token ids for routing and the legs (the continuation's after a resume), or null. */
  private int[] promptTokens;
  private Long contentKey;
  private ChatCompletionRequest contentKeyOf;
  /** The relayed stream, kept for a resume on another worker; null for a non-streamed request. */
  private final StreamResume resume;
  /** The request's trace (tracing off: {@link RequestTrace#NONE} or the client's trace context handed on). */
  private final RequestTrace trace;
  private final Object lock = new Object();
  private final Leg context;
  private final Leg generation;
  /** The current attempt's disaggregated request id: re-issued on every retry. */
  private long requestId;
  private RouteInfo route = RouteInfo.of(0);
  private int retries;
  /** A finished context whose KV waits for the generation leg, and the worker that holds it. */
  private DisaggregatedParams heldContext;
  private Worker heldContextWorker;
  private boolean streamStarted;
  /** The worker that served the latest context leg (tokenizes a cut stream's text when the frontend cannot). */
  private Worker lastContextWorker;
  private boolean done;
  private Runnable cancelTimeout = () -> { };
  /** Where the request stands in its agent's program (agent-aware scheduling; NEW when it is off). */
  private AgentSessions.Standing standing = AgentSessions.Standing.NEW;
  /** Whether the answer's stream carried a tool call (a streamed turn that ends in a tool call). */
  private boolean streamedToolCall;

  RequestFlow(DisaggService service, AdmittedRequest admitted, ClientSink sink) {
    this.service = service;
    this.admitted = admitted;
    this.client = admitted.request();
    this.trace = service.tracer().start(admitted);
    this.sink = TracedSink.of(sink, trace);
    this.request = client;
    this.promptTokens = admitted.promptTokens();
    this.resume = client.isStreaming() ? new StreamResume() : null;
    this.context = new Leg(this, Fleet.CONTEXT, service.contextRouter());
    this.generation = new Leg(this, Fleet.GENERATION, service.generationRouter());
  }

  void start() {
    AgentScheduling agents = service.agents();
    if (agents.active()) {
      Resolution r = admitted.resolution();
      standing = agents.arrive(r.conversationId(), r.affinityId());
    }
    synchronized (lock) {
      requestId = service.ids().next();
      route = firstRoute();
      cancelTimeout = service.scheduler().schedule(this::onTimeout, settings().requestTimeout());
    }
    sink.onDisconnect(this::onDisconnect);
    synchronized (lock) {
      if (!done) {
        service.schedule().start(this);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // What legs and schedules read

  Object lock() {
    return lock;
  }

  RequestTrace trace() {
    return trace;
  }

  long requestId() {
    return requestId;
  }

  /** Whether callbacks of {@code attempt} still matter: the request is not over and was not re-issued. */
  boolean isCurrent(long attempt) {
    return !done && attempt == requestId;
  }

  Leg context() {
    return context;
  }

  Leg generation() {
    return generation;
  }

  /** The request the legs are built from: the client's, or the continuation of a resumed stream. */
  OpenAiRequest client() {
    return request;
  }

  DisaggSettings settings() {
    return service.settings();
  }

  boolean streamStarted() {
    return streamStarted;
  }

  /** The prompt's token ids from admission (a resumed stream's: the continuation's), or null. */
  int[] tokens() {
    return promptTokens;
  }

  RoutingRequest routing(Fleet fleet) {
    Resolution r = admitted.resolution();
    RoutingRequest.Builder b = RoutingRequest.builder(requestId, fleet)
        .routingKey(r.routingKey(fleet, settings().scope()))
        .conversationId(r.conversationId())
        .affinityId(r.affinityId())
        .tokens(tokens())
        .cacheSalt(cacheSalt())
        .maxNewTokens(request.maxOutputTokens().orElse(1));
    if (tokens() == null) {
      b.text(request.routingText());
    }
    if (request instanceof ChatCompletionRequest chat) {
      b.contentKey(contentKey(chat));
    }
    return b.build();
  }

  /**
   * Upstream's content key of a chat ({@link ContentKey}), computed once per request body; upstream computes it after
   * the write-back, so the ids count when they replace the messages.
   */
  private Long contentKey(ChatCompletionRequest chat) {
    if (contentKeyOf != chat) {
      contentKey = ContentKey.of(chat, chat.promptTokenIds() != null ? chat.promptTokenIds().toArray()
          : admitted.forwardTokens() ? tokens() : null);
      contentKeyOf = chat;
    }
    return contentKey;
  }

  /** The request's KV cache salt (admission's: the body's, or under tenant isolation the tenant's). */
  String cacheSalt() {
    return admitted.cacheSalt();
  }

  /** The affinity id goes to the context leg, and to the generation leg only with scope both. */
  String affinityFor(Fleet fleet) {
    return fleet == Fleet.CONTEXT || settings().scope() == SubagentScope.BOTH ? admitted.resolution().affinityId() : null;
  }

  /**
   * Each leg gets an equal share of the request's budget, so that a stalled worker times out while there
   * is still time to retry elsewhere.
   */
  Duration legTimeout() {
    return share(settings().requestTimeout(), settings().maxRetries() + 1L);
  }

  /**
   * {@code total.dividedBy(parts)} (rounded toward zero to the nanosecond) without its {@code BigDecimal} arithmetic
   * (once per leg) while the total fits a {@code long} of nanoseconds.
   */
  static Duration share(Duration total, long parts) {
    long seconds = total.getSeconds();
    return seconds > -(1L << 32) && seconds < 1L << 32 ? Duration.ofNanos(total.toNanos() / parts) : total.dividedBy(parts);
  }

  /** The schedule style the legs announce in their {@code disaggregated_params}. */
  DisaggScheduleStyle style() {
    return settings().scheduleStyle() == ScheduleStyle.GENERATION_FIRST
        ? DisaggScheduleStyle.GENERATION_FIRST : DisaggScheduleStyle.CONTEXT_FIRST;
  }

  String conversationId() {
    return admitted.resolution().conversationId();
  }

  /** The client's request with these params, its own conversation id, and the prompt ids when known. */
  OpenAiRequest legBody(OpenAiRequest body, DisaggregatedParams params) {
    return legBody(body, false, params, null);
  }

  /**
   * {@link #legBody(OpenAiRequest, DisaggregatedParams)} in one copy of the request, streaming off when
   * {@code noStreaming}, and the prompt as {@code promptIds} when given (the ids a context leg saw).
   */
  OpenAiRequest legBody(OpenAiRequest body, boolean noStreaming, DisaggregatedParams params, TokenIds promptIds) {
    return legBody(body, noStreaming, params, promptIds, null);
  }

  /** {@link #legBody(OpenAiRequest, boolean, DisaggregatedParams, TokenIds)} with the leg's agent priority, if any. */
  private OpenAiRequest legBody(OpenAiRequest body, boolean noStreaming, DisaggregatedParams params, TokenIds promptIds,
      AgentPriority.Leg prioritized) {
    TokenIds ids = promptIds != null ? promptIds
        : tokens() != null && !request.hasPromptTokenIds() && admitted.forwardTokens() ? TokenIds.of(tokens()) : null;
    return body.forLeg(noStreaming, params,
        conversationId() == null ? null : new ConversationParams(conversationId()), ids,
        prioritized == null ? null : prioritized.priority());
  }

  /**
   * The agent-priority record of a leg about to be sent where {@code sel} points: null when agent priority is off or
   * the client set the request's priority itself (its own wins).
   */
  private AgentPriority.Leg agentLeg(Fleet fleet, Selection sel) {
    return client.priority() != null ? null : service.agents().sendLeg(standing, fleet, sel);
  }

  /** A leg's agent-priority record ends with the leg (called by {@link Leg} under the lock). */
  void agentLegEnded(AgentPriority.Leg prioritized) {
    service.agents().legEnded(prioritized);
  }

  // ---------------------------------------------------------------------------------------------
  // Legs

  /**
   * Sends a (never streamed) context leg; {@code onDone} runs when its worker completes it. The context
   * placement names where its rank comes from unless the executor reported it: the worker's inference
   * (e.g. "kv_events"), or "router" when the worker could not say and the router's choice stands in.
   */
  void sendContext(Selection sel, DisaggregatedParams params, Leg.Events onDone) {
    AgentScheduling agents = service.agents();
    AgentPriority.Leg prioritized = agentLeg(Fleet.CONTEXT, sel);
    KvRetention retention = agents.retentionFor(conversationId(), sel,
        () -> service.contextRouter().cacheCapacityTokens(sel.worker().id(), sel.rank()));
    context.send(sel, legBody(request, true, params, null, prioritized), prioritized, retention, (s, report) -> {
      agents.contextDone(conversationId(), s, report.promptTokens(), report.reusedTokens());
      lastContextWorker = s.worker();
      route = route.withContext(new Placement(s.worker().id(), servedRank(report, s), report.reusedTokens(),
          report.rank() >= 0 ? report.rankSource() : s.rank() >= 0 ? "router" : null));
      onDone.onComplete(s, report);
    });
  }

  /**
   * Sends the leg that answers the client (the request with these params and, when given, the prompt ids the context
   * saw): streamed chunks are relayed as they come.
   */
  void sendGeneration(Selection sel, DisaggregatedParams params, TokenIds promptIds) {
    AgentPriority.Leg prioritized = agentLeg(Fleet.GENERATION, sel);
    OpenAiRequest body = legBody(request, false, params, promptIds, prioritized);
    generation.send(sel, body, prioritized, null, new Leg.Events() {
      @Override
      public void onChunk(Selection s, OpenAiStreamChunk chunk) {
        beforeChunk(s);
        relay(chunk);
      }

      @Override
      public void onEncodedChunk(Selection s, EncodedChunk chunk) {
        beforeChunk(s);
        if (resume != null && resume.resumed()) {
          relay(chunk.parsed());  // a continuation's chunks are rewritten into the client's stream
          return;
        }
        if (resume != null) {
          resume.recordEncoded(chunk);
        }
        if (watchingToolCalls()) {
          streamedToolCall = ToolCalls.in(chunk);
        }
        sink.streamEncoded(chunk);  // relayed as the worker's bytes
      }

      private void beforeChunk(Selection s) {
        heldContext = null;  // the generation leg has the KV now
        if (!streamStarted) {
          streamStarted = true;
          sink.streamStart(route.withGeneration(Placement.of(s.worker().id(), s.rank())));
        }
      }

      @Override
      public void onComplete(Selection s, WorkerReport report) {
        heldContext = null;
        route = route.withGeneration(new Placement(s.worker().id(), servedRank(report, s), -1,
            report.rank() >= 0 ? report.rankSource() : null));
        answer(s);
      }
    });
  }

  /** Sends one chunk to the client: as it is, or rewritten into the stream a resume continues; kept for a resume. */
  private void relay(OpenAiStreamChunk chunk) {
    OpenAiStreamChunk c = resume != null && resume.resumed() ? resume.rewrite(chunk) : chunk;
    if (c == null) {
      return;
    }
    if (watchingToolCalls()) {
      streamedToolCall = ToolCalls.in(c);
    }
    if (resume != null) {
      resume.record(c);
    }
    sink.streamChunk(c);
  }

  private void answer(Selection gen) {
    if (client.isStreaming()) {
      if (!streamStarted) {
        streamStarted = true;
        sink.streamStart(route);
      }
      finish();
      service.agents().turnEnded(conversationId(), streamedToolCall);
      sink.streamEnd(route);
    } else if (generation.response() == null) {
      finishWithError(502, "generation worker " + gen.worker().id() + " returned no response");
    } else {
      EncodedResponse ctx = context.response();
      EncodedResponse r = generation.response().forClient(ctx == null ? null : ctx.usage());
      finish();
      if (service.agents().active()) {  // reading the finish reason may parse the answer
        service.agents().turnEnded(conversationId(), ToolCalls.in(generation.response()));
      }
      sink.respondEncoded(r, route);
    }
  }

  /**
   * Whether the next streamed chunk is scanned for a tool call: only while agent-aware scheduling is on and none was
   * seen yet (a scan costs a pass over the chunk).
   */
  private boolean watchingToolCalls() {
    return !streamedToolCall && service.agents().active();
  }

  /** The rank the executor reports having served on, else the one the router chose. */
  private static int servedRank(WorkerReport report, Selection sel) {
    return report.rank() >= 0 ? report.rank() : sel.rank();
  }

  /** Keeps a finished context until its generation leg takes the KV (or frees it if none will). */
  void holdContext(Worker worker, DisaggregatedParams params) {
    heldContext = params;
    heldContextWorker = worker;
  }

  /**
   * A leg of the current attempt failed: retried from the start on other workers when the failure allows
   * it (connection errors, 5xx, a stalled worker; never 4xx, never after the first streamed byte, at most
   * {@code max_retries} times), else the client hears why.
   */
  void legFailed(Leg leg, Selection sel, WorkerFailure failure) {
    String fleet = leg.fleet().name().toLowerCase();
    log.debug("request {}: {} leg on {} failed: {}", requestId, fleet, sel.worker().id(), failure);
    boolean afterBytes = failure.afterFirstByte() || streamStarted;
    if (failure.retryable() && !afterBytes && retries < settings().maxRetries()) {
      retries++;
      trace.retried(retries, leg.fleet(), sel.worker().id(), failure);
      leg.exclude(sel.worker().id());
      requestId = service.ids().next();  // re-issued so that a worker never sees the id twice
      releaseHeldContext();
      cancelCalls();  // the other leg of the failed attempt (generation-first) is stale now
      route = firstRoute();
      generation.releaseReserved();
      service.schedule().start(this);
      return;
    }
    if (afterBytes) {
      if (!resumeStream(leg, sel, failure)) {
        endCutStream(leg, sel, failure);
      }
      return;
    }
    int status = switch (failure.kind()) {
      case CLIENT_ERROR -> failure.status() >= 400 && failure.status() < 500 ? failure.status() : 400;
      case TIMEOUT -> 504;
      case CANCELLED -> 499;
      default -> 502;
    };
    finishWithError(status, fleet + " worker " + sel.worker().id() + ": " + failure.message()
        + (retries > 0 ? " (after " + retries + (retries == 1 ? " retry)" : " retries)") : ""));
  }

  /**
   * Continues a stream its worker cut on other workers (see {@link StreamResume}): a new attempt whose prompt is the
   * original prompt followed by the tokens the client has, counted as a retry. False when the stream cannot be
   * continued (the caller ends it with an error event); ends it cleanly when the client already has the whole answer.
   */
  private boolean resumeStream(Leg leg, Selection sel, WorkerFailure failure) {
    if (resume == null || !failure.resumable() || retries >= settings().maxRetries()) {
      return false;
    }
    StreamResume.Plan plan = resume.plan(client, originalPromptIds(), null);
    if (plan.kind() == StreamResume.Kind.NEEDS_TOKENS) {
      TextTokenizer tokenizer = service.textTokenizer();
      Worker tokenizingWorker = tokenizer == null ? tokenizingWorker() : null;
      if (tokenizingWorker != null) {
        tokenizeThenResume(tokenizingWorker, plan.text(), leg, sel, failure);
        return true;
      }
      plan = tokenizer != null ? resume.plan(client, null, tokenizer.encode(plan.text()))
          : StreamResume.Plan.impossible("the workers streamed text and neither the frontend nor a context worker"
              + " can tokenize it");
    }
    return follow(plan, leg, sel, failure);
  }

  /**
   * The streamed text goes to a context worker's tokenizer first (the frontend has none); the stream continues when
   * the ids come back, unless the request ended meanwhile (timeout, client gone).
   */
  private void tokenizeThenResume(Worker worker, String text, Leg leg, Selection sel, WorkerFailure failure) {
    long attempt = requestId;
    worker.tokenize(text).whenComplete((ids, error) -> {
      synchronized (lock) {
        if (!isCurrent(attempt)) {
          return;
        }
        StreamResume.Plan plan = error == null && ids != null ? resume.plan(client, null, ids)
            : StreamResume.Plan.impossible("worker " + worker.id() + " could not tokenize the streamed text: " + error);
        if (!follow(plan, leg, sel, failure)) {
          endCutStream(leg, sel, failure);
        }
      }
    });
  }

  /** Who tokenizes a cut stream's text: the worker that served the context leg, else any live context worker. */
  private Worker tokenizingWorker() {
    if (lastContextWorker != null && lastContextWorker.isAlive()) {
      return lastContextWorker;
    }
    return service.contextRouter().workers().stream().filter(Worker::isAlive).findFirst().orElse(null);
  }

  /** The stream cannot go on: the error ends it as its last event (the client has the status line and chunks). */
  private void endCutStream(Leg leg, Selection sel, WorkerFailure failure) {
    finish();
    if (leg.fleet() == Fleet.GENERATION) {
      route = route.withGeneration(Placement.of(sel.worker().id(), sel.rank()));  // the access log names it
    }
    String message = leg.fleet().name().toLowerCase() + " worker " + sel.worker().id() + " failed mid-stream: "
        + failure;
    sink.fail(502, ErrorResponse.of(502, message, null), route);
  }

  /** Carries out a resume plan; false when it cannot continue the stream. */
  private boolean follow(StreamResume.Plan plan, Leg leg, Selection sel, WorkerFailure failure) {
    switch (plan.kind()) {
      case FINISHED -> {
        log.info("request {}: {} worker {} failed after the whole answer was streamed; ending the stream", requestId,
            leg.fleet().name().toLowerCase(), sel.worker().id());
        finish();
        releaseHeldContext();
        sink.streamEnd(route);
        return true;
      }
      case CONTINUE -> {
        log.info("request {}: {} worker {} failed mid-stream ({}); resuming after {} streamed tokens", requestId,
            leg.fleet().name().toLowerCase(), sel.worker().id(), failure, plan.generated());
        retries++;
        trace.retried(retries, leg.fleet(), sel.worker().id(), failure);  // a resume is a retry
        trace.resumed(plan.generated());
        leg.exclude(sel.worker().id());
        requestId = service.ids().next();
        releaseHeldContext();
        cancelCalls();
        generation.releaseReserved();
        request = plan.body();
        promptTokens = plan.prompt();
        resume.start(plan);
        route = firstRoute();
        service.schedule().start(this);
        return true;
      }
      default -> {
        log.info("request {}: stream not resumed after {} worker {} failed: {}", requestId,
            leg.fleet().name().toLowerCase(), sel.worker().id(), plan.reason());
        return false;
      }
    }
  }

  /** The client's prompt ids: admission's, the client's own, or those the context worker reported. */
  private int[] originalPromptIds() {
    EncodedResponse reported = context.response();
    if (admitted.promptTokens() != null && (admitted.forwardTokens() || reported == null
        || reported.promptTokenIds() == null)) {
      return admitted.promptTokens();
    }
    int[] sent = PromptTokenizer.clientIds(client);
    if (sent != null) {
      return sent;
    }
    return reported != null && reported.promptTokenIds() != null ? reported.promptTokenIds().toArray() : null;
  }

  private RouteInfo firstRoute() {
    Resolution r = admitted.resolution();
    SubagentScope scope = settings().scope();
    return RouteInfo.of(requestId)
        .withConversation(new RouteInfo.Conversation(r.conversationId(), r.affinityId()))
        .withKeys(new RouteInfo.RoutingKeys(r.routingKey(Fleet.CONTEXT, scope), r.routingKey(Fleet.GENERATION, scope)))
        .withRetries(retries);
  }

  // ---------------------------------------------------------------------------------------------
  // Endings

  /**
   * The whole answer came from one leg (the context finished the request): sent without its
   * {@code disaggregated_params}, whole or as a stream.
   */
  void deliverWhole(EncodedResponse answer) {
    finish();
    EncodedResponse response = answer.forClient(null);
    if (client.isStreaming()) {
      if (!streamStarted) {
        streamStarted = true;
        sink.streamStart(route);
      }
      for (OpenAiStreamChunk chunk : StreamConversion.toChunks(response.parsed())) {
        relay(chunk);  // a resumed stream's context finished it: its chunks continue the stream
      }
      sink.streamEnd(route);
    } else {
      sink.respondEncoded(response, route);
    }
  }

  void finishWithError(int status, String message) {
    finish();
    releaseHeldContext();  // a context whose generation will not come
    sink.fail(status, ErrorResponse.of(status, message, null), route);  // after streamStart: an error event
  }

  /** Marks the request done: stops the timeout and releases a selection no leg was sent to. */
  private void finish() {
    done = true;
    cancelTimeout.run();
    generation.releaseReserved();
  }

  private void releaseHeldContext() {
    if (heldContext != null && heldContextWorker != null) {
      heldContextWorker.releaseContext(heldContext);
    }
    heldContext = null;
    heldContextWorker = null;
  }

  private void cancelCalls() {
    context.cancel();
    generation.cancel();
  }

  private void onTimeout() {
    synchronized (lock) {
      if (done) {
        return;
      }
      finishWithError(504, "request timed out after " + settings().requestTimeout().toMillis() + " ms");
      cancelCalls();
    }
  }

  private void onDisconnect() {
    synchronized (lock) {
      if (done) {
        return;
      }
      finish();
      cancelCalls();
      releaseHeldContext();
    }
  }
}
