package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class PrefixIndexTest {

  static long[] keys(int n, long base) {
    long[] k = new long[n];
    for (int i = 0; i < n; i++) {
      k[i] = base + i;
    }
    return k;
  }

  @Test
  void matchDepthIsTheLeadingRunOfHeldBlocksPerLocation() {
    PrefixIndex idx = new PrefixIndex(1000);
    int a = idx.location("a", -1);
    int b0 = idx.location("b", 0);
    int b1 = idx.location("b", 1);
    long[] req = keys(10, 100);
    idx.store(a, req, 0, 6);
    idx.store(b0, req, 0, 10);
    idx.store(b1, req, 1, 10);  // lacks the first block: no prefix at all
    assertArrayEquals(new int[] {6, 10, 0}, idx.matchDepths(req, new int[] {a, b0, b1}));
    idx.remove(b0, new long[] {req[3]});
    assertArrayEquals(new int[] {3}, idx.matchDepths(req, new int[] {b0}));
    assertEquals(a, idx.location("a", -1), "ids are stable");
    assertArrayEquals(new int[] {0, 0}, idx.matchDepths(new long[0], new int[] {a, b0}));
  }

  @Test
  void eachLocationIsBoundedByLruDroppingSuffixesFirst() {
    PrefixIndex idx = new PrefixIndex(8);
    int a = idx.location("a", -1);
    idx.store(a, keys(8, 0));
    idx.store(a, keys(4, 100));  // 4 more: the deepest 4 blocks of the first chain go
    assertEquals(8, idx.size(a));
    assertArrayEquals(new int[] {4}, idx.matchDepths(keys(8, 0), new int[] {a}), "the prefix 0..3 stays");
    assertArrayEquals(new int[] {4}, idx.matchDepths(keys(4, 100), new int[] {a}));
    idx.touch(a, keys(2, 0), 2);  // the first chain's blocks 0 and 1 are now the most recent
    idx.store(a, keys(4, 200));
    assertArrayEquals(new int[] {2}, idx.matchDepths(keys(8, 0), new int[] {a}), "0 and 1 survive, 2 and 3 went");
    assertEquals(8, idx.size());
  }

  @Test
  void clearingAWorkerForgetsAllItsRanks() {
    PrefixIndex idx = new PrefixIndex(100);
    idx.store(idx.location("w", 0), keys(5, 0));
    idx.store(idx.location("w", 1), keys(5, 0));
    idx.store(idx.location("v", -1), keys(5, 0));
    idx.clearWorker("w");
    assertEquals(5, idx.size());
    assertEquals(5, idx.distinctBlocks());
  }

  @Test
  void eventsUpdateTheIndex() {
    PrefixIndex idx = new PrefixIndex(100);
    KvEventApplier ap = new KvEventApplier(idx);
    long[] k = keys(4, 7);
    ap.apply("w", true, List.of(
        new KvEvent(0, KvEventType.CREATED, 1, 0, false, 0, null, null, 64, 0),
        new KvEvent(1, KvEventType.STORED, 1, 0, false, 0, k, null, 0, 0),
        new KvEvent(2, KvEventType.REMOVED, 1, 0, false, 0, new long[] {k[3]}, null, 0, 0),
        new KvEvent(3, KvEventType.UPDATED, 1, 0, false, 0, new long[] {k[0]}, null, 90, 0)));
    assertArrayEquals(new int[] {3, 0}, idx.matchDepths(k, new int[] {idx.location("w", 1), idx.location("w", 0)}));
    ap.apply("w", true, List.of(new KvEvent(4, KvEventType.CREATED, 1, 0, false, 0, null, null, 64, 0)));
    assertEquals(0, idx.size(), "a new cache holds nothing");
    ap.apply("x", false, List.of(new KvEvent(5, KvEventType.STORED, 3, 0, false, 0, k, null, 0, 0)));
    assertArrayEquals(new int[] {4}, idx.matchDepths(k, new int[] {idx.location("x", -1)}), "ranks not visible: one location");
  }

  @Test
  void aCachesCapacityComesFromItsCreatedEventElseFromWhatItHeldWhenItEvicted() {
    PrefixIndex idx = new PrefixIndex(1000);
    KvEventApplier ap = new KvEventApplier(idx);
    int r0 = idx.location("w", 0);
    int r1 = idx.location("w", 1);
    assertEquals(0, idx.capacity(r0), "unknown: never created nor full");
    ap.apply("w", true, List.of(new KvEvent(0, KvEventType.CREATED, 0, 0, false, 0, null, null, 64, 0)));
    assertEquals(64, idx.capacity(r0), "the created event says it");
    // rank 1's created event was missed (the router started later): its first eviction shows how much it holds
    ap.apply("w", true, List.of(new KvEvent(1, KvEventType.STORED, 1, 0, false, 0, keys(10, 100), null, 0, 0)));
    assertEquals(0, idx.capacity(r1), "storing alone says nothing about the size");
    ap.apply("w", true, List.of(new KvEvent(2, KvEventType.REMOVED, 1, 0, false, 0, keys(2, 108), null, 0, 0),
        new KvEvent(3, KvEventType.STORED, 1, 0, false, 0, keys(2, 200), null, 0, 0),
        new KvEvent(4, KvEventType.REMOVED, 1, 0, false, 0, keys(1, 200), null, 0, 0)));
    assertEquals(10, idx.capacity(r1), "the most it held when it evicted");
    ap.apply("w", true, List.of(new KvEvent(5, KvEventType.CREATED, 1, 0, false, 0, null, null, 0, 0)));
    assertEquals(0, idx.capacity(r1), "a new cache of unknown size");
    idx.clearWorker("w");
    assertEquals(0, idx.capacity(r0), "a worker that left");
  }

  @Test
  void concurrentUpdatesAndLookupsStayConsistent() throws Exception {
    PrefixIndex idx = new PrefixIndex(10_000);
    int locations = 16;
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Future<?>> fs = new ArrayList<>();
    for (int t = 0; t < locations; t++) {
      final int loc = idx.location("w" + t, -1);
      final long base = (t + 1) * 1_000_000L;
      fs.add(pool.submit(() -> {
        for (int round = 0; round < 200; round++) {
          idx.store(loc, keys(64, base));
          idx.store(loc, keys(64, 42));  // a prefix every location shares
          idx.remove(loc, keys(32, base + 32));
          idx.matchDepths(keys(64, 42), new int[] {loc});
        }
      }));
    }
    for (Future<?> f : fs) {
      f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();
    int[] all = new int[locations];
    for (int t = 0; t < locations; t++) {
      all[t] = idx.location("w" + t, -1);
      assertArrayEquals(new int[] {32}, idx.matchDepths(keys(64, (t + 1) * 1_000_000L), new int[] {all[t]}));
    }
    int[] shared = idx.matchDepths(keys(64, 42), all);
    for (int d : shared) {
      assertEquals(64, d);
    }
    assertEquals(locations * (64 + 32), idx.size());
  }
}
