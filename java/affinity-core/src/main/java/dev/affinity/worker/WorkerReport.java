package dev.affinity.worker;

/**
 * What a worker did for one call, as far as it can tell (-1 where unknown): the attention-DP rank
 * that served it, prompt tokens reused from its KV cache, prompt tokens, and the executor's time to
 * first token in microseconds. The route header and access log report these, not the router's plan.
 * {@code rankSource} names where the rank comes from when the executor did not report it itself
 * (e.g. "hint", "kv_events"); null when it did, or when the rank is unknown.
 */
public record WorkerReport(int rank, int reusedTokens, int promptTokens, long ttftMicros, String rankSource) {
  public static final WorkerReport UNKNOWN = new WorkerReport(-1, -1, -1, -1);

  /** A report whose rank, if any, the executor reported itself. */
  public WorkerReport(int rank, int reusedTokens, int promptTokens, long ttftMicros) {
    this(rank, reusedTokens, promptTokens, ttftMicros, null);
  }
}
