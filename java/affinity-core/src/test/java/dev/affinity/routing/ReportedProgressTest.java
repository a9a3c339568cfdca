package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** A rank's reported count of computed prompt tokens, attributed to the prefills routed there first come first. */
class ReportedProgressTest {
  /** Work as uncached tokens plus f = 0.001 of the attention over the depth. */
  private static final ReportedProgress.WorkOf WORK = (p, n) -> n + 1e-3 * ((double) (p + n) * (p + n) - (double) p * p);

  @Test
  void computedTokensGoToThePrefillsInTheOrderTheyWereRouted() {
    ReportedProgress progress = new ReportedProgress();
    progress.routed(3, 1, 0, 100, 5_000);  // the rank had computed 5,000 tokens for others before
    progress.routed(3, 2, 40, 50, 5_010);  // 10 of prefill 1 computed by then
    ReportedProgress.Remaining r = progress.remaining(3, 5_120, WORK);
    // 120 tokens computed since prefill 1 was routed: its 100, then 20 of prefill 2
    assertEquals(30, r.uncached());
    assertEquals(WORK.of(60, 30), r.work(), 1e-9, "the rest of prefill 2 from the depth its chunks reached");
    assertEquals(150, r.routedUncached());
    assertEquals(WORK.of(0, 100) + WORK.of(40, 50), r.routedWork(), 1e-9);
  }

  @Test
  void aRankThatComputesNothingLeavesItsQueueWhole() {
    ReportedProgress progress = new ReportedProgress();
    progress.routed(0, 7, 0, 600_000, 0);
    // the prefill waits for free KV blocks: the count stands still however long it waits
    for (int look = 0; look < 3; look++) {
      assertEquals(600_000, progress.remaining(0, 0, WORK).uncached());
    }
    assertEquals(WORK.of(0, 600_000), progress.remaining(0, 0, WORK).work(), 1e-6);
  }

  @Test
  void tokensBeyondTheRoutedPrefillsAreAnotherFrontendsAndAreNotCounted() {
    ReportedProgress progress = new ReportedProgress();
    progress.routed(1, 1, 0, 100, 0);
    assertEquals(0, progress.remaining(1, 1_000, WORK).uncached());
    // a later prefill does not inherit what was computed before it came
    progress.routed(1, 2, 0, 100, 1_000);
    assertEquals(100, progress.remaining(1, 1_000, WORK).uncached());
    assertEquals(70, progress.remaining(1, 1_030, WORK).uncached());
  }

  @Test
  void aReleasedPrefillLeavesTheQueueAndAnUnknownCountChangesNothing() {
    ReportedProgress progress = new ReportedProgress();
    progress.routed(2, 1, 0, 100, 0);
    progress.routed(2, 2, 0, 100, 0);
    progress.released(2, 1, 100);
    assertEquals(100, progress.remaining(2, 100, WORK).uncached());
    assertEquals(100, progress.remaining(2, -1, WORK).uncached(), "-1: the rank did not report");
    progress.released(2, 2, 150);
    assertEquals(new ReportedProgress.Remaining(0, 0, 0, 0), progress.remaining(2, 150, WORK));
    // locations are apart
    progress.routed(4, 9, 0, 10, 0);
    assertEquals(0, progress.remaining(2, 999, WORK).uncached());
    assertEquals(10, progress.remaining(4, 0, WORK).uncached());
  }

  @Test
  void aCountThatFallsStartsAgainFromTheNewValue() {
    ReportedProgress progress = new ReportedProgress();
    progress.routed(0, 1, 0, 1_000, 50_000);
    assertEquals(900, progress.remaining(0, 50_100, WORK).uncached());
    // the worker restarted: its count began again; nothing is taken off, and later tokens count from there
    assertEquals(900, progress.remaining(0, 20, WORK).uncached());
    assertEquals(850, progress.remaining(0, 70, WORK).uncached());
    progress.forget(0);
    assertEquals(0, progress.remaining(0, 70, WORK).uncached());
  }

  /** Property: against a model that serves prefills one after the other, whatever the looks in between. */
  @Test
  void matchesFirstComeFirstServedUnderRandomLooks() {
    SplittableRandom rnd = new SplittableRandom(47);
    for (int trial = 0; trial < 200; trial++) {
      ReportedProgress progress = new ReportedProgress();
      long count = rnd.nextLong(1_000);
      long[] uncached = new long[1 + rnd.nextInt(6)];
      long[] prefix = new long[uncached.length];
      for (int i = 0; i < uncached.length; i++) {
        uncached[i] = 1 + rnd.nextInt(5_000);
        prefix[i] = rnd.nextInt(3) * 1_000L;
        progress.routed(5, i, prefix[i], uncached[i], count);
      }
      long total = 0;
      for (long u : uncached) {
        total += u;
      }
      long served = 0;
      while (served < total + 500) {
        served += rnd.nextInt(2_000);
        ReportedProgress.Remaining r = progress.remaining(5, count + served, WORK);
        long left = served;
        double work = 0;
        long tokens = 0;
        for (int i = 0; i < uncached.length; i++) {
          long done = Math.min(left, uncached[i]);
          left -= done;
          work += WORK.of(prefix[i] + done, uncached[i] - done);
          tokens += uncached[i] - done;
        }
        assertEquals(tokens, r.uncached());
        assertEquals(work, r.work(), 1e-6 * Math.max(1, work));
      }
    }
  }
}
