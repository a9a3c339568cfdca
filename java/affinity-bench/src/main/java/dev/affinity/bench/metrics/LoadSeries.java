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
   * where the fleet is idle; 1 when it never was busy.
   */
  public double instanceImbalance(boolean context) {
    int from = context ? 0 : contextInstances;
    int to = context ? contextInstances : instances.size();
    double sum = 0;
    int n = 0;
    for (int s = 0; s < timesUs.length; s++) {
      int max = 0;
      long total = 0;
      for (int i = from; i < to; i++) {
        int v = instanceLoad(s, i);
        max = Math.max(max, v);
        total += v;
      }
      if (total > 0) {
        sum += max / ((double) total / (to - from));
        n++;
      }
    }
    return n == 0 ? 1.0 : sum / n;
  }

  /** Mean over busy samples and instances of a fleet of max/mean load across an instance's ranks. */
  public double rankImbalance(boolean context) {
    int from = context ? 0 : contextInstances;
    int to = context ? contextInstances : instances.size();
    double sum = 0;
    int n = 0;
    for (int s = 0; s < timesUs.length; s++) {
      for (int i = from; i < to; i++) {
        int[] ranks = rankLoad[s][i];
        int max = 0;
        long total = 0;
        for (int v : ranks) {
          max = Math.max(max, v);
          total += v;
        }
        if (total > 0) {
          sum += max / ((double) total / ranks.length);
          n++;
        }
      }
    }
    return n == 0 ? 1.0 : sum / n;
  }

  public static LoadSeries empty() {
    return new LoadSeries(List.of(), 0, new long[0], new int[0][][]);
  }
}
