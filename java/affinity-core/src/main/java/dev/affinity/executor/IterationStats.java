package dev.affinity.executor;

/**
 * Executor-wide counters and the shape of its last iteration (times in the executor's clock, us).
 * {@code rejectedPollItems} counts telemetry items of an unexpected shape (KV events, statistics rows)
 * that the executor's backend skipped (the pytorch backend; 0 elsewhere).
 */
public record IterationStats(
    long iterations,
    long lastIterationStartUs,
    long lastIterationDurationUs,
    int lastContextRequests,
    int lastGenerationRequests,
    long lastContextTokens,
    int activeRequests,
    int pendingRequests,
    int heldContexts,
    long completedRequests,
    long totalPromptTokens,
    long totalReusedTokens,
    long totalGeneratedTokens,
    long busyUs,
    long rejectedPollItems) {

  /** Prompt tokens served from cache over all prompt tokens of completed requests. */
  public double prefixHitRatio() {
    return totalPromptTokens == 0 ? 0.0 : (double) totalReusedTokens / totalPromptTokens;
  }
}
