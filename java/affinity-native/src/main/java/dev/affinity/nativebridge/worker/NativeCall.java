package dev.affinity.nativebridge.worker;

import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.RequestType;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggScheduleStyle;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import dev.affinity.worker.WorkerRequest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One call of a {@link NativeWorker}: the leg as an executor request, its timeout, the executor's
 * responses relayed to the listener as OpenAI objects ({@link OpenAiTranslator}), and exactly one
 * end: complete, failed or cancelled.
 */
final class NativeCall {
  /** TensorRT-LLM's default request priority ({@code tensorrt_llm/executor/request.py} DEFAULT_REQUEST_PRIORITY). */
  static final float DEFAULT_PRIORITY = 0.5f;
  private final NativeWorker worker;
  private final WorkerRequest request;
  private final WorkerListener listener;
  private final OpenAiRequest body;
  private final OpenAiTranslator translator;
  private final AtomicBoolean ended = new AtomicBoolean();
  /** Set before {@link #ended} when the executor's final answer ends the call (nothing to cancel then). */
  private volatile boolean answered;
  private final AtomicLong executorId = new AtomicLong(-1);
  private volatile Runnable onCancel = () -> { };
  private volatile Runnable timeout;
  private int[] prompt;

  NativeCall(NativeWorker worker, WorkerRequest request, WorkerListener listener) {
    this.worker = worker;
    this.request = request;
    this.listener = listener;
    this.body = request.body();
    this.translator = new OpenAiTranslator(request.requestId(), body, worker.codec(), worker.contextEndpoint());
  }

  /** Runs on cancel, before the call fails (e.g. stops waiting for a context). */
  void onCancel(Runnable action) {
    onCancel = action;
  }

  /** Starts the leg that the request's {@code disaggregated_params} (null: none) describe. */
  void start(DisaggregatedParams params) {
    DisaggRequestType leg = params == null || params.requestType() == null ? DisaggRequestType.CONTEXT_AND_GENERATION
        : params.requestType();
    ContextPhaseParams cp;
    try {
      cp = leg == DisaggRequestType.GENERATION_ONLY ? contextPhaseOf(params) : null;
    } catch (IllegalArgumentException e) {
      fail(new WorkerFailure(WorkerFailure.Kind.CLIENT_ERROR, 400, e.getMessage(), false));
      return;
    }
    start(leg, cp);
  }

  /** Starts a generation leg whose context a worker of the same hand-off domain published. */
  void startGeneration(ContextPhaseParams context) {
    start(DisaggRequestType.GENERATION_ONLY, context);
  }

  private static ContextPhaseParams contextPhaseOf(DisaggregatedParams params) {
    if (params.ctxRequestId() == null || params.opaqueState() == null) {
      throw new IllegalArgumentException("disaggregated_params of a generation_only request need ctx_request_id and "
          + "encoded_opaque_state");
    }
    int[] first = params.firstGenTokens() == null ? new int[0] : params.firstGenTokens().toArray();
    byte[] opaque;
    try {
      opaque = params.opaqueState().bytes();  // a context of this process: its bytes, no base64
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("disaggregated_params.encoded_opaque_state is not base64");
    }
    return new ContextPhaseParams(params.ctxRequestId(), params.ctxDpRank() == null ? -1 : params.ctxDpRank(), first,
        opaque);
  }

  private void start(DisaggRequestType leg, ContextPhaseParams context) {
    ExecutorRequest er;
    try {
      er = executorRequest(leg, context);
    } catch (IllegalArgumentException e) {
      fail(new WorkerFailure(WorkerFailure.Kind.CLIENT_ERROR, 400, e.getMessage(), false));
      return;
    }
    timeout = worker.timers().schedule(() -> {
      if (!ended.get()) {
        fail(new WorkerFailure(WorkerFailure.Kind.TIMEOUT, 0, "no answer within " + request.timeout().toMillis() + " ms",
            false));
        cancelInExecutor();
      }
    }, request.timeout().compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : request.timeout());
    try {
      executorId.set(worker.dispatcher().submit(er, this::onExecutorResponse));
    } catch (RuntimeException e) {
      fail(new WorkerFailure(WorkerFailure.Kind.CONNECT, 0, "worker " + worker.id() + ": " + e.getMessage(), false));
    }
    if (ended.get() && !answered) {
      // Cancelled or failed while being submitted. A call the executor already answered is left
      // alone: cancelling a finished context_only request would free the KV its generation leg pulls.
      cancelInExecutor();
    }
  }

  private ExecutorRequest executorRequest(DisaggRequestType leg, ContextPhaseParams context) {
    refuseWhatExecutorsCannotServe(body);
    prompt = worker.promptTokens(body);
    int maxTokens = body.maxOutputTokens().orElse(worker.defaultMaxTokens());
    ExecutorRequest.Builder b = ExecutorRequest.builder(prompt, maxTokens)
        .clientRequestId(request.requestId())
        .streaming(body.isStreaming())
        .seed(body.seed() != null ? body.seed() : 0)
        .conversationId(body.conversationParams() == null ? null : body.conversationParams().conversationId())
        .subagentAffinityId(request.affinityId())
        .cacheSalt(request.cacheSalt() != null ? request.cacheSalt() : body.cacheSalt())
        .adpRankHint(request.rankHint(), true)
        .priority(body.priority() != null ? body.priority().floatValue() : DEFAULT_PRIORITY)
        .retention(request.retention());
    switch (leg) {
      case CONTEXT_ONLY -> b.type(RequestType.CONTEXT_ONLY);
      case GENERATION_ONLY -> b.contextPhase(context);
      default -> b.type(RequestType.CONTEXT_AND_GENERATION);
    }
    return b.build();
  }

  /**
   * In-process executors generate one sequence per request and no log probabilities: a request asking
   * for more choices or for logprobs is refused (400) rather than answered without them.
   */
  static void refuseWhatExecutorsCannotServe(OpenAiRequest body) {
    Integer n = body.sampling().n();
    if (n != null && n > 1) {
      throw new IllegalArgumentException("n: in-process workers generate one choice per request; n = " + n
          + " is not served");
    }
    boolean logprobs = body instanceof CompletionRequest c ? c.logprobs() != null
        : Boolean.TRUE.equals(((ChatCompletionRequest) body).logprobs());
    if (logprobs) {
      throw new IllegalArgumentException("logprobs: in-process workers do not return log probabilities");
    }
  }

  private void onExecutorResponse(ExecutorResponse r) {
    if (ended.get()) {
      return;
    }
    if (r.finishReason() == FinishReason.CANCELLED) {
      fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, r.errorMessage(), translator.streamStarted()));
      return;
    }
    if (r.isError()) {
      fail(failureOf(worker.id(), r, translator.streamStarted()));
      return;
    }
    translator.accept(r);
    if (body.isStreaming()) {
      listener.onEncodedChunk(dev.affinity.worker.EncodedChunk.of(translator.chunk(r)));
    }
    if (!r.isFinal()) {
      return;
    }
    if (!body.isStreaming()) {
      publishContext(r);
      listener.onEncodedResponse(dev.affinity.worker.EncodedResponse.of(translator.whole(r, prompt)));
    }
    answered = true;
    if (ended.compareAndSet(false, true)) {
      cancelTimer();
      listener.onComplete(new WorkerReport(r.metrics().rank(), r.metrics().reusedTokens(), r.metrics().promptTokens(),
          r.metrics().ttftUs(), r.metrics().rankSource().inferredLabel()));
    }
  }

  /**
   * The failure an executor error is, by its kind: the request's own fault (bad, or too large for
   * the executor) is a client error (400); a context that cannot be taken over, a failed backend
   * and an unclassified error are the worker's (502).
   */
  static WorkerFailure failureOf(String workerId, ExecutorResponse r, boolean afterFirstByte) {
    String message = "worker " + workerId + ": " + r.errorMessage();
    return switch (r.errorKind()) {
      case BAD_REQUEST, CAPACITY -> new WorkerFailure(WorkerFailure.Kind.CLIENT_ERROR, 400, message, afterFirstByte);
      case CONTEXT_NOT_FOUND, BACKEND_FAILURE, CANCELLED, NONE ->
          new WorkerFailure(WorkerFailure.Kind.WORKER_ERROR, 502, message, afterFirstByte);
    };
  }

  /** A finished context leg of a generation-first request: its generation leg may wait in this process. */
  private void publishContext(ExecutorResponse r) {
    DisaggregatedParams in = body.disaggregatedParams();
    HandoffDomain handoff = worker.handoff();
    if (r.contextPhase() != null && handoff != null && in != null
        && in.scheduleStyle() == DisaggScheduleStyle.GENERATION_FIRST) {
      handoff.publishContext(request.requestId(), r.contextPhase());
    }
  }

  void fail(WorkerFailure failure) {
    if (ended.compareAndSet(false, true)) {
      cancelTimer();
      listener.onError(failure);
    }
  }

  private void cancelTimer() {
    Runnable t = timeout;
    if (t != null) {
      t.run();
    }
  }

  private void cancelInExecutor() {
    long eid = executorId.get();
    if (eid > 0) {
      worker.executor().cancel(eid);
    }
  }

  void cancel() {
    onCancel.run();
    long eid = executorId.get();
    fail(new WorkerFailure(WorkerFailure.Kind.CANCELLED, 0, "cancelled", translator.streamStarted()));
    if (eid > 0 && !answered) {  // an answered context leg's held KV is freed by releaseContext or its pull
      worker.executor().cancel(eid);
    }
  }
}
