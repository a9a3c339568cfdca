package dev.affinity.bench.drive;

import dev.affinity.bench.trace.TraceRequest;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The pooled bound: one LRU cache as large as the fleet's whole context KV capacity, shared by every
 * request. No placement of requests on separate instances can reuse more than a cache this size would
 * (up to LRU not being the optimal eviction), so it is a bound a router can approach, unlike the
 * infinite-cache ideal ({@link IdealCache}). A request's reuse is counted like the ideal's: the
 * leading blocks the cache holds, cut to leave one token to compute, in whole KV blocks; then its
 * blocks become the most recently used, the first block most recent of all, so that a prompt's end is
 * evicted before its beginning (as the executors evict). Blocks are charged their tokens.
 */
public final class PooledCache {
  private final long capacityTokens;
  private final int kvTokensPerBlock;
  private final LinkedHashMap<Long, Integer> lru = new LinkedHashMap<>(1 << 16, 0.75f, true);
  private long usedTokens;

  /**
   * @param capacityTokens   the cache's size in tokens (the fleet's context KV capacity); 0 when
   *                         unknown (live runs): every reuse is then -1
   * @param kvTokensPerBlock the executors' KV block size: only whole blocks are reusable
   */
  public PooledCache(long capacityTokens, int kvTokensPerBlock) {
    if (capacityTokens < 0 || kvTokensPerBlock <= 0) {
      throw new IllegalArgumentException("capacityTokens must be >= 0 and kvTokensPerBlock > 0, got " + capacityTokens
          + ", " + kvTokensPerBlock);
    }
    this.capacityTokens = capacityTokens;
    this.kvTokensPerBlock = kvTokensPerBlock;
  }

  /** A cache of unknown size: no bound is computed. */
  public static PooledCache unknown() {
    return new PooledCache(0, 1);
  }

  /** The reuse of {@code r} given every request seen so far (-1 when the size is unknown); then caches it. */
  public synchronized int reuse(TraceRequest r) {
    if (capacityTokens == 0) {
      return -1;
    }
    List<Long> ids = r.hashIds();
    int bs = r.blockSize();
    int leading = 0;
    while (leading < ids.size() && lru.containsKey(ids.get(leading))) {
      leading++;
    }
    for (int i = ids.size() - 1; i >= 0; i--) {
      int tokens = (int) Math.min(bs, r.inputLength() - (long) i * bs);
      Integer old = lru.put(ids.get(i), tokens);
      usedTokens += tokens - (old == null ? 0 : old);
    }
    Iterator<Map.Entry<Long, Integer>> eldest = lru.entrySet().iterator();
    while (usedTokens > capacityTokens && eldest.hasNext()) {
      usedTokens -= eldest.next().getValue();
      eldest.remove();
    }
    long tokens = Math.min((long) leading * bs, r.inputLength() - 1L);
    tokens -= tokens % kvTokensPerBlock;
    return (int) Math.max(0, tokens);
  }
}
