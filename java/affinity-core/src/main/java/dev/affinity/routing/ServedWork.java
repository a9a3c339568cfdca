package dev.affinity.routing;

import java.util.Arrays;

/**
 * How much of the prefill work queued at each prefix-index location (a worker's rank) is still to be done. A router
 * counts a context request's work at its rank from the moment it routes it until the request is released (its first
 * token): counted whole, a long prefill that is nearly done looks as long as when it started, and the sessions on its
 * rank move away from their cached contexts to avoid a wait that is almost over. A rank serves its queue at the
 * measured pace ({@link RankQueues#secondsPerWork}, seconds per unit of work over every busy rank), so after {@code t}
 * busy seconds {@code t / secondsPerWork} units of it are done; what a release takes off the queue was the work done
 * first (prefill is first come, first served). The estimate never says the queue is empty while work is in it: at
 * least one iteration's share is left ({@code work / ceil(uncached / max_num_tokens)}), the least a request still
 * running has to do. Not thread-safe: the router calls it under its lock.
 */
final class ServedWork {
  /** Work estimated done at each location and not yet released. */
  private double[] done = new double[0];
  /** The queued work each location had when last seen, to tell a release (it fell) from an arrival. */
  private double[] seenWork = new double[0];
  private long[] stamp = new long[0];

  /**
   * The work still to be done of the {@code work} queued at {@code loc} ({@code uncached} tokens, {@code chunk} per
   * iteration), at {@code now}; {@code secondsPerWork} 0 (nothing measured yet) leaves it whole.
   */
  double remaining(int loc, double work, long uncached, int chunk, double secondsPerWork, long now) {
    grow(loc);
    if (seenWork[loc] > 0 && secondsPerWork > 0) {
      // busy since the last look: it went on serving at the measured pace
      done[loc] += Math.max(0, now - stamp[loc]) / 1e9 / secondsPerWork;
    }
    double released = seenWork[loc] - work;
    if (released > 0) {
      // the released requests' work was what was done first
      done[loc] = Math.max(0, done[loc] - released);
    }
    if (work <= 0) {
      done[loc] = 0;
    }
    seenWork[loc] = Math.max(0, work);
    stamp[loc] = now;
    if (work <= 0) {
      return 0;
    }
    double oneIteration = work / LockstepSiblings.iterations(Math.max(0, uncached), chunk);
    done[loc] = Math.min(done[loc], Math.max(0, work - oneIteration));
    return work - done[loc];
  }

  /** Forgets a location (a worker removed, a cache recreated). */
  void forget(int loc) {
    if (loc < done.length) {
      done[loc] = 0;
      seenWork[loc] = 0;
    }
  }

  private void grow(int loc) {
    if (loc >= done.length) {
      int n = Math.max(loc + 1, done.length * 2);
      done = Arrays.copyOf(done, n);
      seenWork = Arrays.copyOf(seenWork, n);
      stamp = Arrays.copyOf(stamp, n);
    }
  }
}
