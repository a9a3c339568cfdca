package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The line of the tail: a quantile of the recent placements' work. */
class WorkQuantileTest {
  @Test
  void noLineBeforeEnoughSamplesThenTheQuantileOfTheLastOnes() {
    WorkQuantile q = new WorkQuantile(0.95);
    for (int i = 1; i < WorkQuantile.MIN_SAMPLES; i++) {
      q.add(i);
    }
    assertEquals(Double.POSITIVE_INFINITY, q.value(), "63 samples");
    for (int i = WorkQuantile.MIN_SAMPLES; i <= 100; i++) {
      q.add(i);
    }
    // recomputed at the 96th sample (every 32 from the 64th): 1..96, the 92nd
    assertEquals(92, q.value());
    for (int i = 0; i < 2 * WorkQuantile.SAMPLES; i++) {
      q.add(1000 + i % 100);
    }
    assertEquals(1094, q.value(), "only the last 1,024 count: 1000..1099, ~10 times each");
  }

  @Test
  void theQuantileIsInTheUnitInterval() {
    assertThrows(IllegalArgumentException.class, () -> new WorkQuantile(0));
    assertThrows(IllegalArgumentException.class, () -> new WorkQuantile(1.5));
    WorkQuantile max = new WorkQuantile(1);
    for (int i = 0; i < 64; i++) {
      max.add(i);
    }
    assertEquals(63, max.value());
  }
}
