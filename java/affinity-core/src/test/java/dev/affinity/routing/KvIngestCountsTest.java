package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.kv.KvEventApplier;
import org.junit.jupiter.api.Test;

class KvIngestCountsTest {
  @Test
  void countsEventsBatchesTimeAndWhatTheIdsSaid() {
    KvIngestCounts c = new KvIngestCounts();
    c.record(6, KvEventApplier.Ingest.CLEAN, 10);
    assertEquals(new RouterStats.KvIngest(6, 1, 0, 10, 0, 0), c.snapshot());
    c.record(3, new KvEventApplier.Ingest(2, 7, 1), 5);
    assertEquals(new RouterStats.KvIngest(9, 2, 7, 15, 2, 1), c.snapshot());
  }
}
