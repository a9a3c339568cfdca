package dev.affinity.worker;

import dev.affinity.executor.KvRetention;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.worker.TraceContext;
import java.time.Duration;
import java.util.Objects;

/**
 * One leg of a client request, as sent to one worker.
 *
 * @param requestId the disaggregated request id (snowflake), which the worker uses as its engine
 *     request id; re-issued on every retry
 * @param body the request ready to forward: {@code disaggregated_params} (request type, ids, context
 *     phase params) and {@code conversation_params} (the own conversation id) already set
 * @param affinityId the server-private sub-agent affinity id, or null. In-process workers hand it to
 *     the executor; HTTP workers send it only signed ({@code x-trtllm-subagent-affinity-id} + HMAC)
 * @param rankHint the attention-DP rank the router chose, or -1 when the worker decides
 * @param timeout the leg's budget; the worker fails the call with {@link WorkerFailure.Kind#TIMEOUT}
 * @param cacheSalt the KV cache salt admission decided (under tenant isolation the tenant's), or null for the
 *     body's own; in-process workers hand it to the executor
 * @param trace the W3C trace context the worker hears ({@code traceparent}/{@code tracestate} on HTTP legs), or null
 *     for none (docs/tracing.md)
 * @param retention the KV-cache retention of the leg's blocks (TensorRT-LLM's {@code KvCacheRetentionConfig}), or
 *     null for none: in-process workers hand it to the executor, HTTP workers send it to Affinity worker processes
 *     only ({@code x-affinity-kv-retention}), since trtllm-serve's OpenAI protocol has no field for it
 */
public record WorkerRequest(long requestId, OpenAiRequest body, String affinityId, int rankHint, Duration timeout,
    String cacheSalt, TraceContext trace, KvRetention retention) {

  /** A leg without a retention hint. */
  public WorkerRequest(long requestId, OpenAiRequest body, String affinityId, int rankHint, Duration timeout,
      String cacheSalt, TraceContext trace) {
    this(requestId, body, affinityId, rankHint, timeout, cacheSalt, trace, null);
  }

  /** A leg without trace context. */
  public WorkerRequest(long requestId, OpenAiRequest body, String affinityId, int rankHint, Duration timeout,
      String cacheSalt) {
    this(requestId, body, affinityId, rankHint, timeout, cacheSalt, null, null);
  }

  /** A leg whose salt is its body's. */
  public WorkerRequest(long requestId, OpenAiRequest body, String affinityId, int rankHint, Duration timeout) {
    this(requestId, body, affinityId, rankHint, timeout, null, null, null);
  }

  public WorkerRequest {
    Objects.requireNonNull(body, "body");
    Objects.requireNonNull(timeout, "timeout");
  }

  /** The leg: {@code disaggregated_params.request_type}, or context_and_generation without params. */
  public DisaggRequestType leg() {
    return body.disaggregatedParams() == null || body.disaggregatedParams().requestType() == null
        ? DisaggRequestType.CONTEXT_AND_GENERATION
        : body.disaggregatedParams().requestType();
  }

  public boolean streaming() {
    return body.isStreaming();
  }
}
