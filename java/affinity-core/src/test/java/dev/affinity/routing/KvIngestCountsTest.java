package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class KvIngestCountsTest {
  static KvEvent event(long id, int rank) {
    return new KvEvent(id, KvEventType.STORED, rank, 0, false, 0, new long[] {id}, new int[0], 0, 0);
  }

  static List<KvEvent> events(int rank, long... ids) {
    List<KvEvent> out = new ArrayList<>();
    for (long id : ids) {
      out.add(event(id, rank));
    }
    return out;
  }

  @Test
  void oneSequencePerWorkerAcrossRanksIsInOrder() {
    KvIngestCounts c = new KvIngestCounts();
    c.record("w", List.of(event(0, 0), event(1, 1), event(2, 0), event(3, 1), event(4, 1), event(5, 0)), 10);
    assertEquals(new RouterStats.KvIngest(6, 1, 0, 10), c.snapshot());
  }

  @Test
  void oneSequencePerRankIsInOrderToo() {
    KvIngestCounts c = new KvIngestCounts();
    c.record("w", events(0, 0, 1, 2), 1);
    c.record("w", events(1, 0, 1, 2, 3, 4), 1);
    c.record("w", events(0, 3, 4), 1);
    assertEquals(0, c.snapshot().dropped());
    assertEquals(10, c.snapshot().applied());
    assertEquals(3, c.snapshot().batches());
  }

  @Test
  void aJumpPastBothSequencesCountsTheIdsSkipped() {
    KvIngestCounts c = new KvIngestCounts();
    c.record("w", events(0, 0, 1, 2), 1);
    c.record("w", events(0, 7, 8), 1);  // 3..6 lost
    assertEquals(4, c.snapshot().dropped());
    c.record("v", events(0, 5, 6), 1);  // another worker's first events: nothing known missing
    assertEquals(4, c.snapshot().dropped());
  }

  @Test
  void aRestartedWorkerStartsItsSequencesAgain() {
    KvIngestCounts c = new KvIngestCounts();
    c.record("w", events(0, 100, 101), 1);
    c.record("w", events(0, 0, 1, 2), 1);
    assertEquals(0, c.snapshot().dropped());
    c.forget("w");
    c.record("w", events(0, 50), 1);
    assertEquals(0, c.snapshot().dropped());
  }
}
