package dev.affinity.disagg;

import dev.affinity.admission.ClientRequestGuard;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.config.ScheduleStyle;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationResolver;
import dev.affinity.conversation.HeaderSource;
import dev.affinity.conversation.InvalidHeaderException;
import dev.affinity.conversation.Resolution;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ConversationParams;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.NoWorkerAvailableException;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.timer.Scheduler;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.util.HashSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Disaggregated orchestration (reference trtllm-disagg.md §2): resolves the conversation, routes the
 * context leg and the generation leg with their fleets' routing keys, carries the context response's
 * {@code disaggregated_params} into the generation request, and relays the answer to the client.
 *
 * <ul>
 *   <li>Context-first (default) and generation-first scheduling apply the same affinity rules; with
 *       conditional disaggregation a generation worker that holds enough of the prompt serves it alone.
 *   <li>Retries: up to {@code max_retries} on connection errors and 5xx, never on 4xx and never after
 *       the first streamed byte; each retry re-issues the request id and goes to another worker (a
 *       deliberate difference from upstream, which retries the same server). A failed generation leg
 *       restarts from the context leg, since its KV hand-off may already be spent.
 *   <li>Every router selection is released exactly once — on success, error, timeout, cancellation
 *       and client disconnect — and a context whose generation never comes is freed.
 *   <li>The clock and scheduler are dependencies, so the fleet simulator runs this very code in
 *       virtual time.
 * </ul>
 */
public final class DisaggService implements CompletionHandler {
  private static final Logger log = LoggerFactory.getLogger(DisaggService.class);

  private final DisaggSettings settings;
  private final Router ctxRouter;
  private final Router genRouter;
  private final ConversationResolver resolver;
  private final ClientRequestGuard guard;
  private final RequestIds ids;
  private final Scheduler scheduler;
  private final PromptTokenizer tokenizer;

  public DisaggService(DisaggSettings settings, Router ctxRouter, Router genRouter, ConversationResolver resolver,
      ClientRequestGuard guard, RequestIds ids, Scheduler scheduler, PromptTokenizer tokenizer) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.ctxRouter = Objects.requireNonNull(ctxRouter, "ctxRouter");
    this.genRouter = Objects.requireNonNull(genRouter, "genRouter");
    this.resolver = Objects.requireNonNull(resolver, "resolver");
    this.guard = Objects.requireNonNull(guard, "guard");
    this.ids = Objects.requireNonNull(ids, "ids");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
  }

  public Router contextRouter() {
    return ctxRouter;
  }

  public Router generationRouter() {
    return genRouter;
  }

  @Override
  public void handle(OpenAiRequest request, HeaderSource headers, ClientSink sink) {
    new Exchange(request, sink).start(headers);
  }

  /** One client request from arrival to the last byte. Transitions run under its lock. */
  private final class Exchange {
    private final OpenAiRequest client;
    private final ClientSink sink;
    private final Object lock = new Object();
    private Resolution resolution = Resolution.NONE;
    private int[] tokens;
    private long requestId;
    private RouteInfo route;
    private int retries;
    private final Set<String> ctxExcluded = new HashSet<>();
    private final Set<String> genExcluded = new HashSet<>();
    private Selection ctxSel;
    private Selection genSel;
    /** Conditional disaggregation's generation worker, chosen before the context leg. */
    private Selection reservedGen;
    private WorkerCall ctxCall;
    private WorkerCall genCall;
    private OpenAiResponse ctxResponse;
    private OpenAiResponse genResponse;
    private DisaggregatedParams heldContext;
    private Worker heldContextWorker;
    private boolean streamStarted;
    private boolean done;
    private Runnable cancelTimeout = () -> { };

    Exchange(OpenAiRequest client, ClientSink sink) {
      this.client = client;
      this.sink = sink;
    }

    void start(HeaderSource headers) {
      route = RouteInfo.empty(0);
      try {
        String bodyId;
        if (client instanceof ChatCompletionRequest chat) {
          guard.check(chat);
          bodyId = ClientRequestGuard.bodyConversationId(chat);
        } else {
          CompletionRequest completion = (CompletionRequest) client;
          guard.check(completion);
          bodyId = ClientRequestGuard.bodyConversationId(completion);
        }
        resolution = resolver.resolve(bodyId, headers);
      } catch (ProtocolException e) {
        sink.fail(e.status(), e.toErrorResponse(), route);
        return;
      } catch (InvalidHeaderException e) {
        sink.fail(400, ErrorResponse.of(400, e.getMessage(), e.header()), route);
        return;
      }
      tokens = tokenizer.tokenize(client);
      synchronized (lock) {
        requestId = ids.next();
        route = RouteInfo.empty(requestId).withConversation(resolution.conversationId(), resolution.affinityId())
            .withKeys(resolution.routingKey(Fleet.CONTEXT, settings.scope()), resolution.routingKey(Fleet.GENERATION, settings.scope()));
        cancelTimeout = scheduler.schedule(this::onTimeout, settings.requestTimeout());
      }
      sink.onDisconnect(this::onDisconnect);
      synchronized (lock) {
        if (done) {
          return;
        }
        if (settings.conditional()) {
          conditionalStart();
        } else if (settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST) {
          generationFirst();
        } else {
          contextLeg();
        }
      }
    }

    // -------------------------------------------------------------------------------------------
    // Building blocks

    private RoutingRequest routing(Fleet fleet) {
      RoutingRequest.Builder b = RoutingRequest.builder(requestId, fleet)
          .routingKey(resolution.routingKey(fleet, settings.scope()))
          .conversationId(resolution.conversationId())
          .affinityId(resolution.affinityId())
          .tokens(tokens)
          .maxNewTokens(client.maxOutputTokens().orElse(1));
      if (tokens == null) {
        b.text(promptText());
      }
      return b.build();
    }

    private String promptText() {
      if (client instanceof ChatCompletionRequest chat) {
        StringBuilder sb = new StringBuilder();
        chat.messages().forEach(m -> sb.append(m.role()).append(':').append(m.contentText()).append('\n'));
        return sb.toString();
      }
      return ((CompletionRequest) client).promptText().orElse("");
    }

    private ConversationParams conversationParams() {
      return resolution.conversationId() == null ? null : new ConversationParams(resolution.conversationId());
    }

    private OpenAiRequest withTokens(OpenAiRequest body) {
      boolean hasIds = client instanceof CompletionRequest c ? c.promptTokenIds().isPresent()
          : ((ChatCompletionRequest) client).promptTokenIds() != null;
      return tokens != null && !hasIds ? body.withPromptTokenIds(TokenIds.of(tokens)) : body;
    }

    /**
     * Each leg gets an equal share of the request's budget, so that a stalled worker times out while
     * there is still time to retry elsewhere.
     */
    private java.time.Duration legTimeout() {
      return settings.requestTimeout().dividedBy(settings.maxRetries() + 1L);
    }

    private DisaggScheduleStyle style() {
      return settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST
          ? DisaggScheduleStyle.GENERATION_FIRST : DisaggScheduleStyle.CONTEXT_FIRST;
    }

    private Selection select(Router router, Fleet fleet, Set<String> excluded) {
      try {
        return router.select(routing(fleet), excluded);
      } catch (NoWorkerAvailableException e) {
        finishWithError(503, e.getMessage());
        return null;
      }
    }

    /** The affinity id goes to the context leg, and to the generation leg only with scope both. */
    private String affinityFor(Fleet fleet) {
      return fleet == Fleet.CONTEXT || settings.scope() == SubagentScope.BOTH ? resolution.affinityId() : null;
    }

    // -------------------------------------------------------------------------------------------
    // Context-first

    private void contextLeg() {
      Selection sel = select(ctxRouter, Fleet.CONTEXT, ctxExcluded);
      if (sel == null) {
        return;
      }
      ctxSel = sel;
      ctxResponse = null;
      DisaggregatedParams params = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
          .disaggRequestId(requestId).scheduleStyle(style()).conversationId(resolution.conversationId()).build();
      sendContext(sel, params, this::onContextDone);
    }

    /** What a context leg of the current attempt does once its worker reports completion (under the lock). */
    private interface ContextDone {
      void done(Selection sel);
    }

    /** Sends the (never streamed) context leg; its response is kept for {@code onDone}. */
    private void sendContext(Selection sel, DisaggregatedParams params, ContextDone onDone) {
      OpenAiRequest body = withTokens(client.withoutStreaming().withDisaggregatedParams(params)
          .withConversationParams(conversationParams()));
      WorkerRequest wr = new WorkerRequest(requestId, body, affinityFor(Fleet.CONTEXT), sel.rank(), legTimeout());
      long attempt = requestId;
      ctxCall = sel.worker().send(wr, new WorkerListener() {
        @Override
        public void onResponse(OpenAiResponse response) {
          synchronized (lock) {
            if (attempt == requestId) {
              ctxResponse = response;
            }
          }
        }

        @Override
        public void onComplete(WorkerReport report) {
          synchronized (lock) {
            sel.release(Outcome.SUCCESS);
            if (done || attempt != requestId) {
              return;
            }
            ctxCall = null;
            route = route.withContext(sel.worker().id(), servedRank(report, sel), report.reusedTokens());
            onDone.done(sel);
          }
        }

        @Override
        public void onError(WorkerFailure failure) {
          onLegFailed(sel, attempt, failure, Fleet.CONTEXT);
        }
      });
    }

    private void onContextDone(Selection sel) {
      if (ctxResponse == null) {
        finishWithError(502, "context worker " + sel.worker().id() + " returned no response");
        return;
      }
      if (finishedInContext(ctxResponse) || ctxResponse.firstDisaggregatedParams().isEmpty()) {
        // Finished in the context phase (e.g. EOS on the first token): the answer is complete.
        deliverWhole(ctxResponse.withoutDisaggregatedParams());
        return;
      }
      DisaggregatedParams ctxParams = ctxResponse.firstDisaggregatedParams().get();
      heldContext = ctxParams;
      heldContextWorker = sel.worker();
      if (reservedGen != null) {
        Selection g = reservedGen;
        reservedGen = null;
        generationLeg(g, ctxParams);
      } else {
        Selection g = select(genRouter, Fleet.GENERATION, genExcluded);
        if (g != null) {
          generationLeg(g, ctxParams);
        }
      }
    }

    /** Whether a response ended in the context phase: a finish reason other than length or not_finished. */
    private static boolean finishedInContext(OpenAiResponse response) {
      Optional<String> finish = response.firstFinishReason();
      return finish.isPresent() && !finish.get().equals("length") && !finish.get().equals("not_finished");
    }

    /** The rank the executor reports having served on, else the one the router chose. */
    private static int servedRank(WorkerReport report, Selection sel) {
      return report.rank() >= 0 ? report.rank() : sel.rank();
    }

    private void generationLeg(Selection sel, DisaggregatedParams ctxParams) {
      genSel = sel;
      DisaggregatedParams params = ctxParams.toBuilder().requestType(DisaggRequestType.GENERATION_ONLY)
          .scheduleStyle(style()).conversationId(resolution.conversationId()).ctxUsage(ctxResponse.usage())
          .disaggRequestId(requestId).build();
      OpenAiRequest body = client.withDisaggregatedParams(params).withConversationParams(conversationParams());
      if (ctxResponse.promptTokenIds() != null) {
        body = body.withPromptTokenIds(ctxResponse.promptTokenIds());
      } else {
        body = withTokens(body);
      }
      sendGeneration(sel, body);
    }

    private void sendGeneration(Selection sel, OpenAiRequest body) {
      WorkerRequest wr = new WorkerRequest(requestId, body, affinityFor(Fleet.GENERATION), sel.rank(), legTimeout());
      long attempt = requestId;
      genResponse = null;
      genCall = sel.worker().send(wr, new WorkerListener() {
        @Override
        public void onChunk(OpenAiStreamChunk chunk) {
          synchronized (lock) {
            if (done || attempt != requestId) {
              return;
            }
            heldContext = null;  // the generation leg has the KV now
            if (!streamStarted) {
              streamStarted = true;
              sink.streamStart(route.withGeneration(sel.worker().id(), sel.rank()));
            }
            sink.streamChunk(chunk);
          }
        }

        @Override
        public void onResponse(OpenAiResponse response) {
          synchronized (lock) {
            if (attempt == requestId) {
              genResponse = response;
            }
          }
        }

        @Override
        public void onComplete(WorkerReport report) {
          synchronized (lock) {
            sel.release(Outcome.SUCCESS);
            if (done || attempt != requestId) {
              return;
            }
            heldContext = null;
            genCall = null;
            route = route.withGeneration(sel.worker().id(), servedRank(report, sel));
            if (client.isStreaming()) {
              if (!streamStarted) {
                streamStarted = true;
                sink.streamStart(route);
              }
              finish();
              sink.streamEnd(route);
            } else if (genResponse == null) {
              finishWithError(502, "generation worker " + sel.worker().id() + " returned no response");
            } else {
              OpenAiResponse r = genResponse.withoutDisaggregatedParams();
              if (ctxResponse != null && ctxResponse.usage() != null) {
                r = r.withUsageFromContext(ctxResponse.usage());
              }
              finish();
              sink.respond(r, route);
            }
          }
        }

        @Override
        public void onError(WorkerFailure failure) {
          onLegFailed(sel, attempt, failure, Fleet.GENERATION);
        }
      });
    }

    private void onLegFailed(Selection sel, long attempt, WorkerFailure failure, Fleet fleet) {
      synchronized (lock) {
        sel.release(failure.kind() == WorkerFailure.Kind.CANCELLED ? Outcome.CANCELLED : Outcome.FAILURE);
        if (done || attempt != requestId) {
          return;
        }
        log.debug("request {}: {} leg on {} failed: {}", requestId, fleet, sel.worker().id(), failure);
        boolean afterBytes = failure.afterFirstByte() || streamStarted;
        if (failure.retryable() && !afterBytes && retries < settings.maxRetries()) {
          retries++;
          (fleet == Fleet.CONTEXT ? ctxExcluded : genExcluded).add(sel.worker().id());
          requestId = ids.next();  // re-issued so that the worker never sees the id twice
          releaseHeldContext();
          cancelCalls();  // the other leg of the failed attempt (generation-first); it is now stale
          route = new RouteInfo(requestId, null, -1, null, -1, resolution.conversationId(), resolution.affinityId(), -1, retries,
              resolution.routingKey(Fleet.CONTEXT, settings.scope()), resolution.routingKey(Fleet.GENERATION, settings.scope()));
          releaseReserved();
          if (settings.conditional()) {
            conditionalStart();
          } else if (settings.scheduleStyle() == ScheduleStyle.GENERATION_FIRST) {
            generationFirst();
          } else {
            contextLeg();
          }
          return;
        }
        if (afterBytes) {
          finish();
          sink.abort(fleet.name().toLowerCase() + " worker " + sel.worker().id() + " failed mid-stream: " + failure, route);
          return;
        }
        int status = switch (failure.kind()) {
          case CLIENT_ERROR -> failure.status() >= 400 && failure.status() < 500 ? failure.status() : 400;
          case TIMEOUT -> 504;
          case CANCELLED -> 499;
          default -> 502;
        };
        finishWithError(status, fleet.name().toLowerCase() + " worker " + sel.worker().id() + ": " + failure.message()
            + (retries > 0 ? " (after " + retries + (retries == 1 ? " retry)" : " retries)") : ""));
      }
    }

    // -------------------------------------------------------------------------------------------
    // Generation-first and conditional disaggregation

    private void generationFirst() {
      Selection c = select(ctxRouter, Fleet.CONTEXT, ctxExcluded);
      if (c == null) {
        return;
      }
      Selection g = select(genRouter, Fleet.GENERATION, genExcluded);
      if (g == null) {
        c.release(Outcome.CANCELLED);
        return;
      }
      ctxSel = c;
      genSel = g;
      long attempt = requestId;
      DisaggregatedParams genParams = DisaggregatedParams.builder(DisaggRequestType.GENERATION_ONLY)
          .ctxRequestId(requestId).disaggRequestId(requestId).scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST)
          .conversationId(resolution.conversationId()).build();
      // The generation leg goes first (it waits for the KV); then the context leg.
      sendGeneration(g, withTokens(client.withDisaggregatedParams(genParams).withConversationParams(conversationParams())));
      if (attempt != requestId) {
        // The generation leg failed at once and the request was re-issued: this attempt's context leg is moot.
        c.release(Outcome.CANCELLED);
        return;
      }
      DisaggregatedParams ctxParams = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY)
          .disaggRequestId(requestId).scheduleStyle(DisaggScheduleStyle.GENERATION_FIRST)
          .conversationId(resolution.conversationId()).build();
      sendContext(c, ctxParams, this::onGenerationFirstContextDone);
    }

    private void onGenerationFirstContextDone(Selection c) {
      if (ctxResponse != null && finishedInContext(ctxResponse) && !streamStarted) {
        // Finished in the context phase: the waiting generation leg is not needed.
        WorkerCall gc = genCall;
        genCall = null;
        deliverWhole(ctxResponse.withoutDisaggregatedParams());
        if (gc != null) {
          gc.cancel();
        }
      }
    }

    private void conditionalStart() {
      Selection g = select(genRouter, Fleet.GENERATION, genExcluded);
      if (g == null) {
        return;
      }
      int uncached = (tokens != null ? tokens.length : routing(Fleet.GENERATION).numTokens()) - g.matchedTokens();
      boolean needCtx = g.matchedTokens() == 0 || uncached > settings.maxLocalPrefillLength();
      if (needCtx) {
        reservedGen = g;
        contextLeg();
        return;
      }
      // The generation worker holds enough of the prompt: it serves the whole request.
      genSel = g;
      OpenAiRequest body = withTokens(client.withDisaggregatedParams(null).withConversationParams(conversationParams()));
      sendGeneration(g, body);
    }

    // -------------------------------------------------------------------------------------------
    // Endings

    private void deliverWhole(OpenAiResponse response) {
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

    private void finishWithError(int status, String message) {
      finish();
      releaseHeldContext();  // a context whose generation will not come
      if (streamStarted) {
        sink.abort(message, route);
      } else {
        sink.fail(status, ErrorResponse.of(status, message, null), route);
      }
    }

    /** Marks the exchange done: stops the timeout and releases a selection no leg was sent to. */
    private void finish() {
      done = true;
      cancelTimeout.run();
      releaseReserved();
    }

    private void releaseReserved() {
      if (reservedGen != null) {
        reservedGen.release(Outcome.CANCELLED);
        reservedGen = null;
      }
    }

    private void releaseHeldContext() {
      if (heldContext != null && heldContextWorker != null) {
        heldContextWorker.releaseContext(heldContext);
      }
      heldContext = null;
      heldContextWorker = null;
    }

    private void cancelCalls() {
      WorkerCall c = ctxCall;
      WorkerCall g = genCall;
      ctxCall = null;
      genCall = null;
      if (c != null) {
        c.cancel();
      }
      if (g != null) {
        g.cancel();
      }
    }

    private void onTimeout() {
      synchronized (lock) {
        if (done) {
          return;
        }
        finishWithError(504, "request timed out after " + settings.requestTimeout().toMillis() + " ms");
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
}
