package dev.affinity.bench.metrics;

import java.util.List;

/**
 * Load over time: at each sample time, the requests running or queued on every attention-DP rank
 * of every instance.
 *
 * @param instances  instance names, in order ({@code ctx-0}, ..., {@code gen-0}, ...)
 * @param contextInstances how many of {@code instances} (the first ones) are context instances
 * @param timesUs    sample times
 * @param rankLoad   {@code rankLoad[sample][instance][rank]}
 */
public record LoadSeries(List<String> instances, int contextInstances, long[] timesUs, int[][][] rankLoad) {
  public LoadSeries {
    instances = List.copyOf(instances);
  }

  /** Requests on an instance (all its ranks) at a sample. */
  public int instanceLoad(int sample, int instance) {
    int n = 0;
    for (int v : rankLoad[sample][instance]) {
      n += v;
    }
    return n;
  }

  /**
   * Mean over samples of max/mean load across the instances of a fleet (1 = even), skipping samples
   * where the fleet is idle; 1 when it never was busy; NaN without samples (live runs).
   */
  public double instanceImbalance(boolean context) {
    return meanOverSamples(s -> instanceImbalanceAt(s, context));
  }

  /** Mean over samples of {@link #rankImbalanceAt}; 1 when the fleet never was busy; NaN without samples. */
  public double rankImbalance(boolean context) {
    return meanOverSamples(s -> rankImbalanceAt(s, context));
  }

  /** Max/mean load across a fleet's instances at one sample; NaN when the fleet is idle then. */
  public double instanceImbalanceAt(int sample, boolean context) {
    int from = from(context);
    return maxOverMean(to(context) - from, i -> instanceLoad(sample, from + i));
  }

  /**
   * Mean over a fleet's busy instances of max/mean load across the instance's ranks, at one sample;
   * NaN when no instance of the fleet is busy then.
   */
  public double rankImbalanceAt(int sample, boolean context) {
    double sum = 0;
    int n = 0;
    for (int i = from(context); i < to(context); i++) {
      int[] ranks = rankLoad[sample][i];
      double r = maxOverMean(ranks.length, k -> ranks[k]);
      if (!Double.isNaN(r)) {
        sum += r;
        n++;
      }
    }
    return n == 0 ? Double.NaN : sum / n;
  }

  /** Max over mean of {@code count} loads; NaN when they are all 0. */
  private static double maxOverMean(int count, java.util.function.IntUnaryOperator load) {
    int max = 0;
    long total = 0;
    for (int i = 0; i < count; i++) {
      int v = load.applyAsInt(i);
      max = Math.max(max, v);
      total += v;
    }
    return total == 0 ? Double.NaN : max / ((double) total / count);
  }

  private int from(boolean context) {
    return context ? 0 : contextInstances;
  }

  private int to(boolean context) {
    return context ? contextInstances : instances.size();
  }

  private double meanOverSamples(java.util.function.IntToDoubleFunction at) {
    double sum = 0;
    int n = 0;
    for (int s = 0; s < timesUs.length; s++) {
      double v = at.applyAsDouble(s);
      if (!Double.isNaN(v)) {
        sum += v;
        n++;
      }
    }
    if (timesUs.length == 0) {
      return Double.NaN;
    }
    return n == 0 ? 1.0 : sum / n;
  }

  public static LoadSeries empty() {
    return new LoadSeries(List.of(), 0, new long[0], new int[0][][]);
  }
}
