package dev.affinity.server.workermode;

import dev.affinity.conversation.HeaderSource;
import dev.affinity.executor.KvRetention;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.server.worker.WorkerExtensions;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Serves one incoming request leg on the process's worker, the way a trtllm-serve worker does: the
 * request type comes from {@code disaggregated_params}; a context-only answer carries
 * {@code prompt_token_ids} and {@code choices[0].disaggregated_params}; streamed legs are relayed chunk by
 * chunk and end with {@code [DONE]}, or are cut (no {@code [DONE]}) when the leg fails after its first
 * chunk. A client that goes away cancels the leg, which frees its KV.
 *
 * <p>Refused before the executor sees them: generation-first legs (a generation-only leg without
 * {@code encoded_opaque_state}, or a context-only leg with {@code schedule_style} generation-first — the
 * hand-off between processes is context-first only), streamed context-only legs (400), and unsigned or
 * wrongly signed hand-off state when a key is configured (401).
 *
 * <p>A generation-only leg whose context names its worker's endpoint ({@code ctx_info_endpoint}) tells that worker
 * the context is no longer needed as soon as the leg's first output (the KV has been transferred) or failure
 * comes ({@link ContextReleaser}), so a context worker in another process frees the KV at once instead of on its
 * hold timeout.
 */
final class WorkerHandler implements CompletionHandler {
  private final Worker worker;
  private final InternalHeaders internal;
  private final Duration timeout;
  /** Ids of requests without a disagg_request_id: trtllm-serve's local range, below 2^40. */
  private final AtomicLong localIds = new AtomicLong();
  /** Releases pulled contexts on their workers; null: none are released (the hold timeout frees them). */
  private final ContextReleaser releaser;

  WorkerHandler(Worker worker, InternalHeaders internal, Duration timeout, ContextReleaser releaser) {
    this.worker = worker;
    this.internal = internal;
    this.timeout = timeout;
    this.releaser = releaser;
  }

  @Override
  public void handle(AdmittedRequest admitted, ClientSink sink) {
    OpenAiRequest request = admitted.request();
    HeaderSource headers = admitted.headers();
    DisaggregatedParams p = request.disaggregatedParams();
    DisaggRequestType leg = p == null || p.requestType() == null ? DisaggRequestType.CONTEXT_AND_GENERATION
        : p.requestType();
    long id = p != null && p.disaggRequestId() != null ? p.disaggRequestId() : localIds.incrementAndGet();
    String conversation = request.conversationParams() == null ? null : request.conversationParams().conversationId();
    RouteInfo route = RouteInfo.of(id).withConversation(new RouteInfo.Conversation(conversation, null));
    String refused = unsupported(request, p, leg);
    if (refused != null) {
      sink.fail(400, ErrorResponse.of(400, refused, "disaggregated_params"), route);
      return;
    }
    String unauthorized = internal.refusal(request, headers);
    if (unauthorized == null) {
      unauthorized = internal.affinityRefusal(request, headers);
    }
    if (unauthorized != null) {
      sink.fail(401, ErrorResponse.of(401, unauthorized, null), route);
      return;
    }
    KvRetention retention;
    try {
      retention = internal.retention(headers);
    } catch (IllegalArgumentException e) {
      sink.fail(400, ErrorResponse.of(400, WorkerExtensions.KV_RETENTION_HEADER + ": " + e.getMessage(),
          WorkerExtensions.KV_RETENTION_HEADER), route);
      return;
    }
    String affinity = internal.affinityId(request, headers);
    int rankHint = internal.rankHint(headers);
    route = route.withConversation(new RouteInfo.Conversation(conversation, affinity));
    Relay relay = new Relay(sink, leg, request.isStreaming(), route, pulled(leg, p));
    WorkerCall call = worker.send(new WorkerRequest(id, request, affinity, rankHint, timeout,
        internal.cacheSalt(headers), null, retention), relay);
    sink.onDisconnect(call::cancel);
  }

  /**
   * What to run once a generation-only leg no longer needs its context (its first output or its failure): the
   * release of the context on the worker {@code ctx_info_endpoint} names; null when there is nothing to tell.
   */
  private Runnable pulled(DisaggRequestType leg, DisaggregatedParams p) {
    if (releaser == null || leg != DisaggRequestType.GENERATION_ONLY || p.ctxInfoEndpoint() == null
        || p.ctxInfoEndpoint().values().isEmpty() || p.ctxRequestId() == null) {
      return null;
    }
    String endpoint = p.ctxInfoEndpoint().values().get(0);
    long ctxRequestId = p.ctxRequestId();
    return () -> releaser.release(endpoint, ctxRequestId);
  }

  /** Why a leg cannot run on an Affinity worker process, or null. */
  private static String unsupported(OpenAiRequest request, DisaggregatedParams p, DisaggRequestType leg) {
    if (leg == DisaggRequestType.GENERATION_ONLY && p.opaqueState() == null) {
      return "generation_only requests need encoded_opaque_state from a context response: Affinity worker"
          + " processes hand off context-first only (generation-first is not supported across processes)";
    }
    if (leg == DisaggRequestType.CONTEXT_ONLY && p.scheduleStyle() == DisaggScheduleStyle.GENERATION_FIRST) {
      return "context_only requests with schedule_style generation_first are not supported by Affinity worker"
          + " processes (context-first only)";
    }
    if (leg == DisaggRequestType.CONTEXT_ONLY && request.isStreaming()) {
      return "context_only requests cannot be streamed";
    }
    return null;
  }

  /** Relays one leg's result to the connection. Listener calls are serialized by the worker. */
  private final class Relay implements WorkerListener {
    private final ClientSink sink;
    private final DisaggRequestType leg;
    private final boolean streaming;
    private RouteInfo route;
    private boolean started;
    private EncodedResponse response;
    /** Runs once, at the leg's first output or failure (its context is then transferred or abandoned). */
    private Runnable pulled;

    Relay(ClientSink sink, DisaggRequestType leg, boolean streaming, RouteInfo route, Runnable pulled) {
      this.sink = sink;
      this.leg = leg;
      this.streaming = streaming;
      this.route = route;
      this.pulled = pulled;
    }

    private void contextDone() {
      Runnable r = pulled;
      if (r != null) {
        pulled = null;
        r.run();
      }
    }

    @Override
    public synchronized void onEncodedChunk(EncodedChunk chunk) {
      contextDone();
      if (!started) {
        started = true;
        sink.streamStart(route);
      }
      sink.streamEncoded(chunk);
    }

    @Override
    public synchronized void onEncodedResponse(EncodedResponse r) {
      contextDone();
      response = r;
    }

    @Override
    public synchronized void onComplete(WorkerReport report) {
      contextDone();
      route = withReport(report);
      if (streaming) {
        sink.streamEnd(route);
      } else if (response == null) {
        sink.fail(500, ErrorResponse.of(500, "the executor returned no response", null), route);
      } else {
        sink.respondEncoded(response, route);
      }
    }

    @Override
    public synchronized void onError(WorkerFailure failure) {
      contextDone();
      if (started) {
        sink.abort(failure.message(), route);
        return;
      }
      int status = status(failure);
      sink.fail(status, ErrorResponse.of(status, failure.message(), null), route);
    }

    /** What the executor did, for the access log (context legs as ctx, the others as gen). */
    private RouteInfo withReport(WorkerReport report) {
      int reused = report.reusedTokens();
      return switch (leg) {
        case CONTEXT_ONLY -> route.withContext(new Placement(worker.id(), report.rank(), reused));
        case GENERATION_ONLY -> route.withGeneration(Placement.of(worker.id(), report.rank()));
        default -> route.withContext(new Placement(worker.id(), report.rank(), reused))
            .withGeneration(Placement.of(worker.id(), report.rank()));
      };
    }
  }

  /**
   * The status of a failed leg: the executor's 4xx as it is; a hand-off the executor cannot serve (an
   * expired or unknown context) 502, which a frontend retries from the context leg; a timeout 504; a
   * closed or shut-down worker 503.
   */
  static int status(WorkerFailure failure) {
    int s = failure.status();
    return switch (failure.kind()) {
      case CLIENT_ERROR -> s >= 400 && s < 500 ? s : 400;
      case WORKER_ERROR, SERVER_ERROR -> s >= 500 && s < 600 ? s : 500;
      case TIMEOUT -> 504;
      case CONNECT, CANCELLED -> 503;
      default -> 500;
    };
  }
}
