package dev.affinity.executor;

import java.util.Arrays;
import java.util.Objects;

/**
 * One request for an executor. Everything routing decided travels here: the own conversation id,
 * the sub-agent affinity id, and the attention-DP rank hint (-1 for none) with its relax flag.
 * {@code cacheSalt == null} means no salt; an empty salt is a salt. {@code contextPhase} is required
 * for {@link RequestType#GENERATION_ONLY}. {@code priority} is TensorRT-LLM's request priority in [0, 1] (0.5 by
 * default; the executor's waiting queue honours it with {@code waiting_queue_policy: priority}); {@code retention}
 * its {@code KvCacheRetentionConfig}, or null for none. Build with {@link #builder(int[], int)}.
 */
public record ExecutorRequest(
    long clientRequestId,
    int[] inputTokens,
    int maxNewTokens,
    RequestType type,
    boolean streaming,
    int endId,
    int[] stopTokenIds,
    long seed,
    String conversationId,
    String subagentAffinityId,
    int adpRankHint,
    boolean adpRelax,
    float priority,
    String cacheSalt,
    ContextPhaseParams contextPhase,
    KvRetention retention) {

  /** Value of {@code endId} / {@code adpRankHint} meaning "none". */
  public static final int NONE = -1;

  public ExecutorRequest {
    Objects.requireNonNull(inputTokens, "inputTokens");
    Objects.requireNonNull(type, "type");
    stopTokenIds = stopTokenIds == null ? new int[0] : stopTokenIds;
  }

  public static Builder builder(int[] inputTokens, int maxNewTokens) {
    return new Builder(inputTokens, maxNewTokens);
  }

  /** A builder initialised from this request. */
  public Builder toBuilder() {
    return new Builder(inputTokens, maxNewTokens)
        .clientRequestId(clientRequestId)
        .type(type)
        .streaming(streaming)
        .endId(endId)
        .stopTokenIds(stopTokenIds)
        .seed(seed)
        .conversationId(conversationId)
        .subagentAffinityId(subagentAffinityId)
        .adpRankHint(adpRankHint, adpRelax)
        .priority(priority)
        .cacheSalt(cacheSalt)
        .contextPhase(contextPhase)
        .retention(retention);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ExecutorRequest r
        && r.clientRequestId == clientRequestId
        && Arrays.equals(r.inputTokens, inputTokens)
        && r.maxNewTokens == maxNewTokens
        && r.type == type
        && r.streaming == streaming
        && r.endId == endId
        && Arrays.equals(r.stopTokenIds, stopTokenIds)
        && r.seed == seed
        && Objects.equals(r.conversationId, conversationId)
        && Objects.equals(r.subagentAffinityId, subagentAffinityId)
        && r.adpRankHint == adpRankHint
        && r.adpRelax == adpRelax
        && Float.compare(r.priority, priority) == 0
        && Objects.equals(r.cacheSalt, cacheSalt)
        && Objects.equals(r.contextPhase, contextPhase)
        && Objects.equals(r.retention, retention);
  }

  @Override
  public int hashCode() {
    return Objects.hash(clientRequestId, Arrays.hashCode(inputTokens), maxNewTokens, type, conversationId,
        subagentAffinityId, adpRankHint);
  }

  @Override
  public String toString() {
    return "ExecutorRequest[clientRequestId=" + clientRequestId + ", type=" + type + ", inputTokens="
        + inputTokens.length + ", maxNewTokens=" + maxNewTokens + ", conversationId=" + conversationId
        + ", subagentAffinityId=" + subagentAffinityId + ", adpRankHint=" + adpRankHint
        + (adpRankHint >= 0 ? (adpRelax ? " (relaxed)" : " (strict)") : "") + "]";
  }

  /** Mutable builder; {@link #build()} produces the immutable request. */
  public static final class Builder {
    private long clientRequestId;
    private final int[] inputTokens;
    private final int maxNewTokens;
    private RequestType type = RequestType.CONTEXT_AND_GENERATION;
    private boolean streaming;
    private int endId = NONE;
    private int[] stopTokenIds = new int[0];
    private long seed;
    private String conversationId;
    private String subagentAffinityId;
    private int adpRankHint = NONE;
    private boolean adpRelax = true;
    private float priority = 0.5f;
    private String cacheSalt;
    private ContextPhaseParams contextPhase;
    private KvRetention retention;

    private Builder(int[] inputTokens, int maxNewTokens) {
      this.inputTokens = Objects.requireNonNull(inputTokens, "inputTokens");
      this.maxNewTokens = maxNewTokens;
    }

    public Builder clientRequestId(long v) {
      clientRequestId = v;
      return this;
    }

    public Builder type(RequestType v) {
      type = Objects.requireNonNull(v);
      return this;
    }

    public Builder streaming(boolean v) {
      streaming = v;
      return this;
    }

    public Builder endId(int v) {
      endId = v;
      return this;
    }

    public Builder stopTokenIds(int... v) {
      stopTokenIds = v == null ? new int[0] : v;
      return this;
    }

    public Builder seed(long v) {
      seed = v;
      return this;
    }

    public Builder conversationId(String v) {
      conversationId = v;
      return this;
    }

    public Builder subagentAffinityId(String v) {
      subagentAffinityId = v;
      return this;
    }

    /** rank = -1 clears the hint; relax = false asks for the rank strictly (placed first). */
    public Builder adpRankHint(int rank, boolean relax) {
      adpRankHint = rank;
      adpRelax = relax;
      return this;
    }

    public Builder priority(float v) {
      priority = v;
      return this;
    }

    public Builder cacheSalt(String v) {
      cacheSalt = v;
      return this;
    }

    /** Sets the context phase params and makes the request generation-only. */
    public Builder contextPhase(ContextPhaseParams v) {
      contextPhase = v;
      if (v != null) {
        type = RequestType.GENERATION_ONLY;
      }
      return this;
    }

    /** The request's KV-cache retention; null: none (TensorRT-LLM's defaults). */
    public Builder retention(KvRetention v) {
      retention = v;
      return this;
    }

    public ExecutorRequest build() {
      return new ExecutorRequest(clientRequestId, inputTokens, maxNewTokens, type, streaming, endId, stopTokenIds,
          seed, conversationId, subagentAffinityId, adpRankHint, adpRelax, priority, cacheSalt, contextPhase, retention);
    }
  }
}
