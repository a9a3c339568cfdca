package dev.affinity.disagg;

import dev.affinity.agent.AgentPriority;
import dev.affinity.agent.AgentScheduling;
import dev.affinity.agent.AgentSessions;
import dev.affinity.executor.KvRetention;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
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
  /** The first back-off before a retry on the worker that just failed (the fleet's only live one). */
  static final Duration RETRY_BACKOFF = Duration.ofMillis(100);

  private final DisaggService service;
  private final AdmittedRequest admitted;
  private final OpenAiRequest client;
  private final ClientSink sink;
  /** What the legs are built from (the client's request, or after a resume the stream's continuation). */
  private final LegInputs inputs;
  /** The relayed stream, kept for a resume on another worker; null for a non-streamed request. */
  private final StreamResume resume;
  private final FailedLegs failedLegs;
  private final StreamRelay relay;
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

  RequestFlow(DisaggService service, AdmittedRequest admitted, ClientSink sink) {
    this.service = service;
    this.admitted = admitted;
    this.client = admitted.request();
    this.trace = service.tracer().start(admitted);
    this.sink = TracedSink.of(sink, trace);
    this.inputs = new LegInputs(service.settings(), admitted);
    this.resume = client.isStreaming() ? new StreamResume() : null;
    this.failedLegs = new FailedLegs(this, service, admitted, resume);
    this.relay = new StreamRelay(this.sink, resume, service.agents());
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

  // ---- What legs and schedules read ----

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

  DisaggSettings settings() {
    return service.settings();
  }

  boolean streamStarted() {
    return streamStarted;
  }

  /** What the legs are built from. */
  LegInputs inputs() {
    return inputs;
  }

  /** The current attempt's routing request for {@code fleet}. */
  RoutingRequest routing(Fleet fleet) {
    return inputs.routing(requestId, fleet);
  }

  /**
   * {@code total.dividedBy(parts)} (rounded toward zero to the nanosecond) without its {@code BigDecimal} arithmetic
   * (once per leg) while the total fits a {@code long} of nanoseconds.
   */
  static Duration share(Duration total, long parts) {
    long seconds = total.getSeconds();
    return seconds > -(1L << 32) && seconds < 1L << 32 ? Duration.ofNanos(total.toNanos() / parts) : total.dividedBy(parts);
  }

  private String conversationId() {
    return inputs.conversationId();
  }

  /** The leg's body: the request with these params (see {@link LegInputs#legBody}) and the leg's agent priority. */
  private OpenAiRequest legBody(boolean noStreaming, DisaggregatedParams params, TokenIds promptIds,
      AgentPriority.Leg prioritized) {
    return inputs.legBody(noStreaming, params, promptIds, prioritized == null ? null : prioritized.priority());
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

  // ---- Legs ----

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
    context.send(sel, legBody(true, params, null, prioritized), prioritized, retention, (s, report) -> {
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
    OpenAiRequest body = legBody(false, params, promptIds, prioritized);
    generation.send(sel, body, prioritized, null, new Leg.Events() {
      @Override
      public void onEncodedChunk(Selection s, EncodedChunk chunk) {
        beforeChunk(s);
        relay.relay(chunk);  // relayed as the worker's bytes
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

  private void answer(Selection gen) {
    if (client.isStreaming()) {
      if (!streamStarted) {
        streamStarted = true;
        sink.streamStart(route);
      }
      finish();
      service.agents().turnEnded(conversationId(), relay.toolCall());
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

  /** The rank the executor reports having served on, else the one the router chose. */
  private static int servedRank(WorkerReport report, Selection sel) {
    return report.rank() >= 0 ? report.rank() : sel.rank();
  }

  /** Keeps a finished context until its generation leg takes the KV (or frees it if none will). */
  void holdContext(Worker worker, DisaggregatedParams params) {
    heldContext = params;
    heldContextWorker = worker;
  }

  /** A leg of the current attempt failed: retried, resumed, or the client hears why ({@link FailedLegs}). */
  void legFailed(Leg leg, Selection sel, WorkerFailure failure) {
    failedLegs.failed(leg, sel, failure);
  }

  /**
   * A new attempt of the request on other workers than {@code sel}'s, counted as a retry; with {@code resumed} (a
   * cut stream's continuation, see {@link FailedLegs}) the legs are built from the continuation from now on.
   */
  void retry(Leg leg, Selection sel, WorkerFailure failure, StreamResume.Plan resumed) {
    retries++;
    trace.retried(retries, leg.fleet(), sel.worker().id(), failure);  // a resume is a retry
    if (resumed != null) {
      trace.resumed(resumed.generated());
    }
    leg.exclude(sel.worker().id());
    requestId = service.ids().next();  // re-issued so that a worker never sees the id twice
    releaseHeldContext();
    cancelCalls();  // the other leg of the failed attempt (generation-first) is stale now
    generation.releaseReserved();
    if (resumed != null) {
      inputs.resume(resumed);
      resume.start(resumed);
    }
    route = firstRoute();
    if (leg.readmitIfOnlyLiveWorker(sel.worker(), failure)) {
      retryAfterBackoff(leg, sel, failure);
    } else {
      service.schedule().start(this);
    }
  }

  /**
   * The failed worker is the fleet's only live one and its failure was transient (a stall, a 5xx, a reset): the new
   * attempt goes back to it after a back-off instead of failing for want of a worker. Each attempt's leg timeout is its
   * share of the request's budget, so the attempt has its time; the back-off (doubling from {@link #RETRY_BACKOFF},
   * at most a tenth of that share) takes little of it, and the request's own timeout still ends the request.
   */
  private void retryAfterBackoff(Leg leg, Selection sel, WorkerFailure failure) {
    long shift = Math.min(retries - 1, 10);
    Duration backoff = RETRY_BACKOFF.multipliedBy(1L << shift);
    Duration cap = share(inputs.legTimeout(), 10);
    if (backoff.compareTo(cap) > 0) {
      backoff = cap;
    }
    log.info("request {}: {} worker {} failed ({}) and is the only live one; retrying there in {} ms", requestId,
        leg.fleet().name().toLowerCase(), sel.worker().id(), failure, backoff.toMillis());
    long attempt = requestId;
    service.scheduler().schedule(() -> {
      synchronized (lock) {
        if (isCurrent(attempt)) {
          service.schedule().start(this);
        }
      }
    }, backoff);
  }

  int retries() {
    return retries;
  }

  Worker lastContextWorker() {
    return lastContextWorker;
  }

  /** A cut stream whose client already has the whole answer ends cleanly. */
  void endStreamAfterCut() {
    finish();
    releaseHeldContext();
    sink.streamEnd(route);
  }

  /** The stream cannot go on: the error ends it as its last event (the client has the status line and chunks). */
  void endCutStream(Leg leg, Selection sel, WorkerFailure failure) {
    finish();
    if (leg.fleet() == Fleet.GENERATION) {
      route = route.withGeneration(Placement.of(sel.worker().id(), sel.rank()));  // the access log names it
    }
    String message = leg.fleet().name().toLowerCase() + " worker " + sel.worker().id() + " failed mid-stream: "
        + failure;
    sink.fail(502, ErrorResponse.of(502, message, null), route);
  }

  private RouteInfo firstRoute() {
    return inputs.firstRoute(requestId, retries);
  }

  // ---- Endings ----

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
        relay.relay(EncodedChunk.of(chunk));  // a resumed stream's context finished it: its chunks continue the stream
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
