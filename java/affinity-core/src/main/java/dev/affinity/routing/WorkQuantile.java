package dev.affinity.routing;

import java.util.Arrays;

/**
 * A quantile of the prefill work of the last {@link #SAMPLES} placements: the line, in the router's units, past which
 * a call is in the tail of the TTFT distribution before it waits at all (each placement's work is its zero-queue
 * prefill, docs/timing-model.md). Recomputed every {@link #EVERY} samples. Not thread-safe (the router's lock).
 */
final class WorkQuantile {
  static final int SAMPLES = 1024;
  static final int EVERY = 32;
  /** Samples before there is a line: fewer say little of a tail. */
  static final int MIN_SAMPLES = 64;

  private final double q;
  private final double[] ring = new double[SAMPLES];
  private int size;
  private int next;
  private int sinceSorted;
  private double value = Double.POSITIVE_INFINITY;

  /** {@code q} in (0, 1]. */
  WorkQuantile(double q) {
    if (!(q > 0 && q <= 1)) {
      throw new IllegalArgumentException("quantile must be in (0, 1], got " + q);
    }
    this.q = q;
  }

  void add(double work) {
    ring[next] = work;
    next = (next + 1) % SAMPLES;
    size = Math.min(size + 1, SAMPLES);
    if (++sinceSorted >= EVERY && size >= MIN_SAMPLES) {
      double[] sorted = Arrays.copyOf(ring, size);
      Arrays.sort(sorted);
      value = sorted[Math.min(size - 1, (int) Math.ceil(q * size) - 1)];
      sinceSorted = 0;
    }
  }

  /** The quantile, or +infinity before {@link #MIN_SAMPLES} samples. */
  double value() {
    return value;
  }
}
