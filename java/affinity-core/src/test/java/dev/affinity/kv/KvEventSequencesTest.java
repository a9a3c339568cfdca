package dev.affinity.kv;

import static dev.affinity.kv.KvEventSequences.Verdict.GAP;
import static dev.affinity.kv.KvEventSequences.Verdict.IN_SEQUENCE;
import static dev.affinity.kv.KvEventSequences.Verdict.RESTART;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvEventSequencesTest {
  @Test
  void eachRankIsItsOwnSequenceAndItsFirstIdStartsIt() {
    KvEventSequences s = new KvEventSequences();
    assertEquals(IN_SEQUENCE, s.next("w", 0, 40), "a frontend that starts late takes the sequence where it is");
    assertEquals(IN_SEQUENCE, s.next("w", 1, 0));
    assertEquals(IN_SEQUENCE, s.next("w", 0, 41));
    assertEquals(IN_SEQUENCE, s.next("w", 1, 1));
    assertEquals(IN_SEQUENCE, s.next("v", 0, 7), "another worker");
    assertEquals(IN_SEQUENCE, s.next("w", -1, 42), "no rank given: rank 0");
  }

  @Test
  void aJumpIsAGapAndSaysHowManyWereSkipped() {
    KvEventSequences s = new KvEventSequences();
    s.next("w", 0, 3);
    long[] skipped = new long[1];
    assertEquals(GAP, s.next("w", 0, 8, skipped));
    assertEquals(4, skipped[0], "4..7 lost");
    assertEquals(IN_SEQUENCE, s.next("w", 0, 9), "the sequence goes on from the new id");
  }

  @Test
  void anIdAtOrBelowThePreviousIsARestart() {
    KvEventSequences s = new KvEventSequences();
    s.next("w", 0, 100);
    assertEquals(RESTART, s.next("w", 0, 0));
    assertEquals(IN_SEQUENCE, s.next("w", 0, 1));
    assertEquals(RESTART, s.next("w", 0, 1), "a repeated id");
    s.forget("w");
    assertEquals(IN_SEQUENCE, s.next("w", 0, 0), "a worker that left and came back starts afresh");
  }

  static KvEvent stored(long id, int rank, long... keys) {
    return new KvEvent(id, KvEventType.STORED, rank, 0, false, 0, keys, null, 0, 0);
  }

  static KvEvent removed(long id, int rank, long... keys) {
    return new KvEvent(id, KvEventType.REMOVED, rank, 0, false, 0, keys, null, 0, 0);
  }

  @Test
  void aGapClearsTheRanksLocationAndKeepsItsSize() {
    // upstream's all_cleared: the lost events may have removed blocks the index still holds
    PrefixIndex idx = new PrefixIndex(100);
    KvEventApplier ap = new KvEventApplier(idx);
    int r0 = idx.location("w", 0);
    int r1 = idx.location("w", 1);
    ap.apply("w", true, List.of(new KvEvent(0, KvEventType.CREATED, 0, 0, false, 0, null, null, 64, 0),
        stored(1, 0, 11, 12), stored(0, 1, 21, 22)));
    assertEquals(KvEventApplier.Ingest.CLEAN, ap.apply("w", true, List.of(stored(2, 0, 13))));
    KvEventApplier.Ingest gap = ap.apply("w", true, List.of(stored(6, 0, 31)));  // 3..5 lost on rank 0
    assertEquals(new KvEventApplier.Ingest(1, 3, 0), gap);
    assertArrayEquals(new int[] {0}, idx.matchDepths(new long[] {11, 12, 13}, new int[] {r0}), "rank 0 forgot its blocks");
    assertArrayEquals(new int[] {1}, idx.matchDepths(new long[] {31}, new int[] {r0}), "and holds what came after the gap");
    assertArrayEquals(new int[] {2}, idx.matchDepths(new long[] {21, 22}, new int[] {r1}), "rank 1 is untouched");
    assertEquals(64, idx.capacity(r0), "its size stays known");
  }

  @Test
  void aRestartClearsTheLocationToo() {
    PrefixIndex idx = new PrefixIndex(100);
    KvEventApplier ap = new KvEventApplier(idx);
    ap.apply("w", true, List.of(stored(50, 0, 1, 2, 3)));
    assertEquals(new KvEventApplier.Ingest(0, 0, 1), ap.apply("w", true, List.of(stored(0, 0, 9))));
    int r0 = idx.location("w", 0);
    assertArrayEquals(new int[] {0}, idx.matchDepths(new long[] {1, 2, 3}, new int[] {r0}));
    assertArrayEquals(new int[] {1}, idx.matchDepths(new long[] {9}, new int[] {r0}));
  }

  @Test
  void withoutVisibleRanksAGapOnAnyRankClearsTheWholeWorker() {
    PrefixIndex idx = new PrefixIndex(100);
    KvEventApplier ap = new KvEventApplier(idx);
    ap.apply("w", false, List.of(stored(0, 0, 1, 2), stored(0, 1, 5, 6)));
    ap.apply("w", false, List.of(stored(5, 1, 7)));
    int w = idx.location("w", -1);
    assertArrayEquals(new int[] {0, 0, 1}, new int[] {idx.matchDepths(new long[] {1, 2}, new int[] {w})[0],
        idx.matchDepths(new long[] {5, 6}, new int[] {w})[0], idx.matchDepths(new long[] {7}, new int[] {w})[0]});
  }

  @Test
  void aRemovedEventAfterAGapCannotResurrectAnything() {
    PrefixIndex idx = new PrefixIndex(100);
    KvEventApplier ap = new KvEventApplier(idx);
    ap.apply("w", true, List.of(stored(0, 0, 1, 2)));
    ap.apply("w", true, List.of(removed(9, 0, 2)));
    assertEquals(0, idx.size(idx.location("w", 0)));
  }
}
