package dev.affinity.bench.drive;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.bench.trace.TraceRequest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pooled bound: one LRU cache of the fleet's context KV capacity, in arrival order. */
class PooledCacheTest {
  private static TraceRequest req(int tokens, Long... ids) {
    return new TraceRequest(0, null, null, tokens, 1, 10, List.of(ids));
  }

  @Test
  void reuseIsTheLeadingCachedBlocksInWholeKvBlocksLeavingOneToken() {
    PooledCache c = new PooledCache(1000, 4);
    assertEquals(0, c.reuse(req(30, 1L, 2L, 3L)));
    assertEquals(28, c.reuse(req(30, 1L, 2L, 3L)), "30 tokens cached, one left to compute: 29, cut to 7 KV blocks");
    assertEquals(20, c.reuse(req(40, 1L, 2L, 9L, 10L)), "two leading blocks of 10");
    assertEquals(0, c.reuse(req(20, 5L, 2L)), "a chain that does not start cached reuses nothing");
  }

  @Test
  void theLeastRecentlyUsedGoFirstAndAPromptsEndBeforeItsBeginning() {
    PooledCache c = new PooledCache(40, 1);
    c.reuse(req(30, 1L, 2L, 3L));       // 30 tokens held
    c.reuse(req(20, 7L, 8L));           // 50 > 40: evicts the deepest, least recent block first (3)
    assertEquals(19, c.reuse(req(20, 7L, 8L)));
    assertEquals(20, c.reuse(req(30, 1L, 2L, 3L)), "1 and 2 are still there, 3 is gone");
  }

  @Test
  void anUnknownCapacityGivesNoBound() {
    assertEquals(-1, PooledCache.unknown().reuse(req(30, 1L, 2L, 3L)));
  }
}
