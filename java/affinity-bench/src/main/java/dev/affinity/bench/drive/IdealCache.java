package dev.affinity.bench.drive;

import dev.affinity.bench.trace.TraceRequest;
import java.util.HashSet;
import java.util.Set;

/**
 * The infinite-cache ideal: one cache shared by every instance that never evicts. A request's
 * ideal reuse is the leading blocks whose (prefix-chained) ids an earlier request already had, cut
 * to leave at least one token to compute and rounded down to whole KV blocks of the executors.
 */
public final class IdealCache {
  private final Set<Long> seen = new HashSet<>();
  private final int kvTokensPerBlock;

  /** @param kvTokensPerBlock the executors' KV block size: only whole blocks are reusable */
  public IdealCache(int kvTokensPerBlock) {
    if (kvTokensPerBlock <= 0) {
      throw new IllegalArgumentException("kvTokensPerBlock must be > 0, got " + kvTokensPerBlock);
    }
    this.kvTokensPerBlock = kvTokensPerBlock;
  }

  /** The ideal reuse of {@code r} given every request seen so far; then remembers {@code r}'s blocks. */
  public synchronized int reuse(TraceRequest r) {
    int bs = r.blockSize();
    int leading = 0;
    while (leading < r.hashIds().size() && seen.contains(r.hashIds().get(leading))) {
      leading++;
    }
    seen.addAll(r.hashIds());
    long tokens = Math.min((long) leading * bs, r.inputLength() - 1L);
    tokens -= tokens % kvTokensPerBlock;
    return (int) Math.max(0, tokens);
  }
}
