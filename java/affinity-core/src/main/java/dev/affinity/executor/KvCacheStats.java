package dev.affinity.executor;

/**
 * KV-cache statistics of one attention-DP rank. {@code usedNumBlocks} are referenced by live
 * requests (or held for a context handoff); {@code cachedNumBlocks} are unreferenced but reusable;
 * {@code freeNumBlocks} hold nothing. The alloc / reuse / miss / evict counters are cumulative, and so is
 * {@code contextTokensComputed}: the prompt tokens the rank has prefilled (not reused) in the iterations that ended, the
 * sum of TensorRT-LLM's per-iteration {@code inflightBatchingStats.numCtxTokens}; -1 where the backend does not report
 * it.
 */
public record KvCacheStats(
    int rank,
    long maxNumBlocks,
    long freeNumBlocks,
    long usedNumBlocks,
    long cachedNumBlocks,
    long tokensPerBlock,
    long allocTotalBlocks,
    long allocNewBlocks,
    long reusedBlocks,
    long missedBlocks,
    long evictedBlocks,
    long activeRequests,
    long queuedRequests,
    double cacheHitRate,
    long contextTokensComputed) {

  /** Fraction of the rank's blocks referenced by live requests. */
  public double usage() {
    return maxNumBlocks == 0 ? 0.0 : (double) usedNumBlocks / maxNumBlocks;
  }
}
