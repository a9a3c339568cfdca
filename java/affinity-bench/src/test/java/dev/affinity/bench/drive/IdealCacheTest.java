package dev.affinity.bench.drive;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.bench.trace.TraceRequest;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdealCacheTest {
  @Test
  void reusesTheLeadingBlocksSeenBeforeInWholeKvBlocksLeavingOneTokenToCompute() {
    IdealCache ideal = new IdealCache(32);
    assertEquals(0, ideal.reuse(new TraceRequest(0, null, null, 200, 1, 64, List.of(1L, 2L, 3L, 4L))), "nothing seen yet");
    // Shares blocks 1 and 2 (128 tokens), then differs.
    assertEquals(128, ideal.reuse(new TraceRequest(0, null, null, 300, 1, 64, List.of(1L, 2L, 9L, 10L, 11L))));
    // Every block seen, prompt 200 tokens: at most 199 reusable, rounded down to 32-token blocks = 192.
    assertEquals(192, ideal.reuse(new TraceRequest(0, null, null, 200, 1, 64, List.of(1L, 2L, 3L, 4L))));
    // A seen block after an unseen one does not count: reuse is a prefix.
    assertEquals(0, ideal.reuse(new TraceRequest(0, null, null, 128, 1, 64, List.of(99L, 2L))));
  }
}
