package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The work still to do at a rank: served at the measured pace, released first come first served, never empty. */
class ServedWorkTest {
  private static final long S = 1_000_000_000L;
  /** 10 ms per unit of work: 100 units a second. */
  private static final double PACE = 0.01;

  @Test
  void nothingMeasuredLeavesTheQueueWhole() {
    ServedWork w = new ServedWork();
    assertEquals(1000, w.remaining(0, 1000, 10_000, 1000, 0, 0), 1e-9);
    assertEquals(1000, w.remaining(0, 1000, 10_000, 1000, 0, 5 * S), 1e-9);
  }

  @Test
  void aBusyRankServesItsQueueAtTheMeasuredPace() {
    ServedWork w = new ServedWork();
    assertEquals(1000, w.remaining(0, 1000, 10_000, 1000, PACE, 0), 1e-9, "just routed");
    assertEquals(700, w.remaining(0, 1000, 10_000, 1000, PACE, 3 * S), 1e-9, "300 units in 3 s");
    assertEquals(1000, w.remaining(1, 1000, 10_000, 1000, PACE, 3 * S), 1e-9, "another rank: its own clock");
    assertEquals(500, w.remaining(0, 1000, 10_000, 1000, PACE, 5 * S), 1e-9);
  }

  @Test
  void workStillQueuedIsNeverLessThanOneIteration() {
    ServedWork w = new ServedWork();
    w.remaining(0, 1000, 10_000, 1000, PACE, 0);
    // 10 iterations of 100 units: after 100 s the estimate says done, but nothing was released
    assertEquals(100, w.remaining(0, 1000, 10_000, 1000, PACE, 100 * S), 1e-9);
    assertEquals(1000, w.remaining(0, 1000, 500, 1000, PACE, 200 * S), 1e-9, "one iteration: all of it");
  }

  @Test
  void aReleaseTakesItsWorkOffWhatWasServedFirst() {
    ServedWork w = new ServedWork();
    w.remaining(0, 400, 4000, 1000, PACE, 0);
    w.remaining(0, 1000, 10_000, 1000, PACE, 0);  // a second request of 600 arrives at once
    assertEquals(500, w.remaining(0, 1000, 10_000, 1000, PACE, 5 * S), 1e-9);
    // the first one (400) is released: 100 of the second's were served too
    assertEquals(500, w.remaining(0, 600, 6000, 1000, PACE, 5 * S), 1e-9);
    // and it goes on with the second
    assertEquals(300, w.remaining(0, 600, 6000, 1000, PACE, 7 * S), 1e-9);
  }

  @Test
  void anIdleRankStartsAgainFromNothing() {
    ServedWork w = new ServedWork();
    w.remaining(0, 1000, 10_000, 1000, PACE, 0);
    assertEquals(0, w.remaining(0, 0, 0, 1000, PACE, 4 * S), 1e-9);
    // idle for 50 s: none of that counts for the next request
    w.remaining(0, 800, 8000, 1000, PACE, 54 * S);
    assertEquals(700, w.remaining(0, 800, 8000, 1000, PACE, 55 * S), 1e-9);
  }

  @Test
  void aForgottenLocationStartsAgain() {
    ServedWork w = new ServedWork();
    w.remaining(0, 1000, 10_000, 1000, PACE, 0);
    w.remaining(0, 1000, 10_000, 1000, PACE, 5 * S);
    w.forget(0);
    assertEquals(1000, w.remaining(0, 1000, 10_000, 1000, PACE, 6 * S), 1e-9);
  }
}
