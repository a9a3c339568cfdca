package dev.affinity.executor;

/**
 * Per-request metrics as the executor measured them, in its clock (microseconds; -1 where not
 * reached). {@code reusedTokens} are prompt tokens served from the KV cache; {@code rank} is the
 * attention-DP rank that actually served the request (-1 if none) and {@code rankSource} where that
 * rank comes from (null reads as {@link RankSource#EXECUTOR}).
 */
public record RequestMetrics(
    long arrivalUs,
    long scheduledUs,
    long firstTokenUs,
    long finishUs,
    int promptTokens,
    int reusedTokens,
    int rank,
    int outputTokens,
    long transferUs,
    RankSource rankSource) {

  public RequestMetrics {
    rankSource = rankSource == null ? RankSource.EXECUTOR : rankSource;
  }

  /** Metrics whose rank, if any, the executor reported itself. */
  public RequestMetrics(long arrivalUs, long scheduledUs, long firstTokenUs, long finishUs, int promptTokens,
      int reusedTokens, int rank, int outputTokens, long transferUs) {
    this(arrivalUs, scheduledUs, firstTokenUs, finishUs, promptTokens, reusedTokens, rank, outputTokens, transferUs,
        RankSource.EXECUTOR);
  }

  /** Time to first token, or -1 if no token was produced. */
  public long ttftUs() {
    return firstTokenUs < 0 || arrivalUs < 0 ? -1 : firstTokenUs - arrivalUs;
  }
}
