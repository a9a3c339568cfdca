package dev.affinity.executor;

/**
 * Where a response's rank ({@link RequestMetrics#rank()}) comes from. {@link #EXECUTOR} unless the
 * executor could not say and its backend inferred the rank: the pytorch backend on TensorRT-LLM
 * releases whose context output has no {@code ctx_dp_rank}. The code is the native facade's
 * {@code affinity::RankSource}.
 */
public enum RankSource {
  /** Reported by the executor itself (or no rank at all). */
  EXECUTOR("executor"),
  /** The rank the request was pinned to: a rank hint that is not relaxed. */
  HINT("hint"),
  /** The rank whose KV events hold the request's prompt blocks. */
  KV_EVENTS("kv_events"),
  /** The executor has a single attention-DP rank. */
  ONLY_RANK("only_rank");

  private final String label;

  RankSource(String label) {
    this.label = label;
  }

  /** The name the route header and the access log use. */
  public String label() {
    return label;
  }

  /** The label of an inferred rank's source; null when the executor reported the rank itself. */
  public String inferredLabel() {
    return this == EXECUTOR ? null : label;
  }

  public int code() {
    return ordinal();
  }

  public static RankSource fromCode(int code) {
    RankSource[] all = values();
    if (code < 0 || code >= all.length) {
      throw new IllegalArgumentException("unknown rank source code " + code);
    }
    return all[code];
  }
}
