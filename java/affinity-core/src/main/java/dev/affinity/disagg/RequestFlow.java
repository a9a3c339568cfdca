package dev.affinity.disagg;

import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;
import dev.affinity.tracing.TracedSink;
import dev.affinity.worker.EncodedChunk;
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
  private boolean done;
  private Runnable cancelTimeout = () -> { };

  RequestFlow(DisaggService service, AdmittedRequest admitted, ClientSink sink) {
    this.service = service;
    this.admitted = admitted;
    this.client = admitted.request();
    this.trace = service.tracer().start(admitted);
    this.sink = TracedSink.of(sink, trace);
    this.context = new Leg(this, Fleet.CONTEXT, service.contextRouter());
    this.generation = new Leg(this, Fleet.GENERATION, service.generationRouter());
  }

  void start() {
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

  OpenAiRequest client() {
    return client;
  }

  DisaggSettings settings() {
    return service.settings();
  }

  boolean streamStarted() {
    return streamStarted;
  }

  /** The prompt's token ids from admission, or null. */
  int[] tokens() {
    return admitted.promptTokens();
  }

  RoutingRequest routing(Fleet fleet) {
    Resolution r = admitted.resolution();
    RoutingRequest.Builder b = RoutingRequest.builder(requestId, fleet)
        .routingKey(r.routingKey(fleet, settings().scope()))
        .conversationId(r.conversationId())
        .affinityId(r.affinityId())
        .tokens(tokens())
        .cacheSalt(cacheSalt())
        .maxNewTokens(client.maxOutputTokens().orElse(1));
    if (tokens() == null) {
      b.text(client.routingText());
    }
    return b.build();
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
    return settings().requestTimeout().dividedBy(settings().maxRetries() + 1L);
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
    OpenAiRequest b = body.withDisaggregatedParams(params)
        .withConversationParams(conversationId() == null ? null : new ConversationParams(conversationId()));
    return tokens() != null && !client.hasPromptTokenIds() ? b.withPromptTokenIds(TokenIds.of(tokens())) : b;
  }

  // ---------------------------------------------------------------------------------------------
  // Legs

  /**
   * Sends a (never streamed) context leg; {@code onDone} runs when its worker completes it. The context
   * placement names where its rank comes from unless the executor reported it: the worker's inference
   * (e.g. "kv_events"), or "router" when the worker could not say and the router's choice stands in.
   */
  void sendContext(Selection sel, DisaggregatedParams params, Leg.Events onDone) {
    context.send(sel, legBody(client.withoutStreaming(), params), (s, report) -> {
      route = route.withContext(new Placement(s.worker().id(), servedRank(report, s), report.reusedTokens(),
          report.rank() >= 0 ? report.rankSource() : s.rank() >= 0 ? "router" : null));
      onDone.onComplete(s, report);
    });
  }

  /** Sends the leg that answers the client: streamed chunks are relayed as they come. */
  void sendGeneration(Selection sel, OpenAiRequest body) {
    generation.send(sel, body, new Leg.Events() {
      @Override
      public void onChunk(Selection s, OpenAiStreamChunk chunk) {
        beforeChunk(s);
        sink.streamChunk(chunk);
      }

      @Override
      public void onEncodedChunk(Selection s, EncodedChunk chunk) {
        beforeChunk(s);
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

  private void answer(Selection gen) {
    if (client.isStreaming()) {
      if (!streamStarted) {
        streamStarted = true;
        sink.streamStart(route);
      }
      finish();
      sink.streamEnd(route);
    } else if (generation.response() == null) {
      finishWithError(502, "generation worker " + gen.worker().id() + " returned no response");
    } else {
      OpenAiResponse r = generation.response().withoutDisaggregatedParams();
      OpenAiResponse ctx = context.response();
      if (ctx != null && ctx.usage() != null) {
        r = r.withUsageFromContext(ctx.usage());
      }
      finish();
      sink.respond(r, route);
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
      finish();
      if (leg.fleet() == Fleet.GENERATION) {
        route = route.withGeneration(Placement.of(sel.worker().id(), sel.rank()));  // the access log names it
      }
      // The client has the status line and some chunks: the error ends the stream as an event.
      String message = fleet + " worker " + sel.worker().id() + " failed mid-stream: " + failure;
      sink.fail(502, ErrorResponse.of(502, message, null), route);
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

  /** The whole answer came from one leg (the context finished the request): sent as is, or as a stream. */
  void deliverWhole(OpenAiResponse response) {
    finish();
    if (client.isStreaming()) {
      sink.streamStart(route);
      for (OpenAiStreamChunk chunk : StreamConversion.toChunks(response)) {
        sink.streamChunk(chunk);
      }
      sink.streamEnd(route);
    } else {
      sink.respond(response, route);
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
