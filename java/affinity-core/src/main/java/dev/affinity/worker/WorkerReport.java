package dev.affinity.worker;

/**
 * What a worker did for one call, as far as it can tell (-1 where unknown): the attention-DP rank
 * that served it, prompt tokens reused from its KV cache, prompt tokens, and the executor's time to
 * first token in microseconds. The route header and access log report these, not the router's plan.
 */
public record WorkerReport(int rank, int reusedTokens, int promptTokens, long ttftMicros) {
  public static final WorkerReport UNKNOWN = new WorkerReport(-1, -1, -1, -1);
}
