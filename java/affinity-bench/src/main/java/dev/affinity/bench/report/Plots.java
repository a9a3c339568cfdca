package dev.affinity.bench.report;

import dev.affinity.bench.metrics.LoadSeries;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Draws a workload's plots: the TTFT CDF, hit ratios next to the ideal, and load imbalance over time
 * across context instances and across the ranks inside them.
 */
final class Plots {
  /** The most points drawn per CDF line. */
  private static final int CDF_POINTS = 200;
  /** How many equal time buckets the load imbalance plot averages over. */
  static final int LOAD_BUCKETS = 60;

  private Plots() {}

  /** The workload's plots; the load plot only when some policy has load samples. */
  static List<Plot> of(WorkloadRuns w, List<PolicySummary> summaries) {
    List<Plot> plots = new ArrayList<>();
    plots.add(ttftCdf(w));
    plots.add(hitRatio(w, summaries));
    loadImbalance(w).ifPresent(plots::add);
    rankImbalance(w).ifPresent(plots::add);
    return plots;
  }

  /** Per policy, the CDF of the TTFT of every successful request over all seeds, on a log scale. */
  static Plot ttftCdf(WorkloadRuns w) {
    List<double[]> ttfts = new ArrayList<>();
    double lo = Double.POSITIVE_INFINITY;
    double hi = 0;
    for (PolicyRuns p : w.policies()) {
      double[] ms = p.runs().stream().flatMap(r -> r.records().stream())
          .filter(r -> r.ok() && r.ttftUs() >= 0).mapToDouble(r -> r.ttftUs() / 1000.0).sorted().toArray();
      ttfts.add(ms);
      for (double v : ms) {
        if (v > 0) {
          lo = Math.min(lo, v);
        }
        hi = Math.max(hi, v);
      }
    }
    if (lo > hi) {
      lo = 1;
      hi = 10;
    }
    Svg svg = new Svg("TTFT CDF: " + w.workload(), Axis.log("TTFT (ms, log scale)", lo, hi),
        Axis.linear("fraction of requests", 0, 1));
    for (int i = 0; i < ttfts.size(); i++) {
      double[] ms = ttfts.get(i);
      int n = ms.length;
      int points = Math.min(n, CDF_POINTS);
      double[] xs = new double[points];
      double[] ys = new double[points];
      for (int k = 0; k < points; k++) {
        int idx = points == 1 ? n - 1 : (int) ((long) k * (n - 1) / (points - 1));
        xs[k] = ms[idx];
        ys[k] = (idx + 1) / (double) n;
      }
      svg.polyline(xs, ys, Svg.colour(w.policies().get(i).index()));
    }
    return new Plot("TTFT CDF", "ttft-cdf-" + w.fileStem() + ".svg", legend(svg, w, false).finish());
  }

  /**
   * Per policy, a bar of the mean hit ratio over seeds, with the mean ideal hit ratio marked on it
   * (black) and the pooled bound (grey) when known.
   */
  static Plot hitRatio(WorkloadRuns w, List<PolicySummary> summaries) {
    Svg svg = new Svg("Prefix cache hit ratio: " + w.workload(),
        Axis.categories("policy", w.policies().stream().map(PolicyRuns::policy).toList()),
        Axis.linear("hit ratio (dashed: ideal; grey: pooled bound)", 0, 1));
    for (int i = 0; i < summaries.size(); i++) {
      PolicySummary s = summaries.get(i);
      svg.bar(i, s.hitRatio(), Svg.colour(w.policies().get(i).index()), Text.fixed(s.hitRatio(), 3));
      svg.marker(i, s.idealHitRatio(), "#000000");
      if (!Double.isNaN(s.pooledHitRatio())) {
        svg.marker(i, s.pooledHitRatio(), "#999999");
      }
    }
    return new Plot("Hit ratio", "hit-ratio-" + w.fileStem() + ".svg", legend(svg, w, true).finish());
  }

  /**
   * Per policy (its first seed), max/mean load across the context instances, smoothed: the run's time
   * range is split into {@link #LOAD_BUCKETS} equal buckets and each point is the mean of that ratio
   * over the bucket's busy samples (total context load &gt; 0); buckets without busy samples break the
   * line. Empty when no policy has load samples (live runs).
   */
  static Optional<Plot> loadImbalance(WorkloadRuns w) {
    return imbalance(w, "Context load imbalance: ", "max/mean context load", "Load imbalance", "load-",
        (load, s) -> load.instanceImbalanceAt(s, true));
  }

  /** The same for the attention-DP ranks inside each context instance (mean over busy instances). */
  static Optional<Plot> rankImbalance(WorkloadRuns w) {
    return imbalance(w, "Context rank imbalance: ", "max/mean rank load in an instance", "Rank imbalance", "rank-load-",
        (load, s) -> load.rankImbalanceAt(s, true));
  }

  /** An imbalance ratio of one sample (NaN when idle). */
  private interface SampleRatio {
    double at(LoadSeries load, int sample);
  }

  private static Optional<Plot> imbalance(WorkloadRuns w, String title, String yLabel, String plotName, String filePrefix,
      SampleRatio ratio) {
    List<PolicyRuns> drawn = new ArrayList<>();
    double maxT = 0;
    for (PolicyRuns p : w.policies()) {
      LoadSeries load = p.runs().get(0).load();
      if (load.timesUs().length == 0 || load.contextInstances() == 0) {
        continue;
      }
      drawn.add(p);
      for (long t : load.timesUs()) {
        maxT = Math.max(maxT, t / 1e6);
      }
    }
    if (drawn.isEmpty()) {
      return Optional.empty();
    }
    double bucket = maxT > 0 ? maxT / LOAD_BUCKETS : 1;
    List<double[][]> lines = new ArrayList<>();
    double maxY = 1;
    for (PolicyRuns p : drawn) {
      double[][] line = bucketed(p.runs().get(0).load(), bucket, ratio);
      lines.add(line);
      for (double v : line[1]) {
        if (!Double.isNaN(v)) {
          maxY = Math.max(maxY, v);
        }
      }
    }
    String seconds = new BigDecimal(bucket).round(new MathContext(3, RoundingMode.HALF_EVEN)).stripTrailingZeros()
        .toPlainString();
    Svg svg = new Svg(title + w.workload(), Axis.linear("time (s)", 0, maxT),
        Axis.linear(yLabel + " (mean per bucket of " + seconds + " s)", 1, maxY * 1.05));
    for (int i = 0; i < drawn.size(); i++) {
      String colour = Svg.colour(drawn.get(i).index());
      double[] xs = lines.get(i)[0];
      double[] ys = lines.get(i)[1];
      // One line per run of consecutive non-empty buckets.
      for (int from = 0; from < xs.length; ) {
        if (Double.isNaN(ys[from])) {
          from++;
          continue;
        }
        int to = from;
        while (to < xs.length && !Double.isNaN(ys[to])) {
          to++;
        }
        svg.polyline(Arrays.copyOfRange(xs, from, to), Arrays.copyOfRange(ys, from, to), colour);
        from = to;
      }
    }
    svg.legend(drawn.stream().map(PolicyRuns::policy).toList(),
        drawn.stream().map(p -> Svg.colour(p.index())).toList());
    return Optional.of(new Plot(plotName, filePrefix + w.fileStem() + ".svg", svg.finish()));
  }

  /**
   * {bucket centres (s), mean ratio over the bucket's busy samples, NaN where it has none}, for
   * buckets of {@code bucket} seconds from time 0 up to the last sample (at most
   * {@link #LOAD_BUCKETS}; the last sample falls into the last bucket).
   */
  private static double[][] bucketed(LoadSeries load, double bucket, SampleRatio ratio) {
    double[] sum = new double[LOAD_BUCKETS];
    int[] count = new int[LOAD_BUCKETS];
    int used = 0;
    for (int s = 0; s < load.timesUs().length; s++) {
      double r = ratio.at(load, s);
      if (!Double.isNaN(r)) {
        int b = (int) Math.min(LOAD_BUCKETS - 1, Math.max(0, Math.floor(load.timesUs()[s] / 1e6 / bucket)));
        sum[b] += r;
        count[b]++;
        used = Math.max(used, b + 1);
      }
    }
    double[] t = new double[used];
    double[] mean = new double[used];
    for (int b = 0; b < used; b++) {
      t[b] = (b + 0.5) * bucket;
      mean[b] = count[b] == 0 ? Double.NaN : sum[b] / count[b];
    }
    return new double[][] {t, mean};
  }

  private static Svg legend(Svg svg, WorkloadRuns w, boolean withIdeal) {
    List<String> names = new ArrayList<>(w.policies().stream().map(PolicyRuns::policy).toList());
    List<String> colours = new ArrayList<>(w.policies().stream().map(p -> Svg.colour(p.index())).toList());
    if (withIdeal) {
      names.add("ideal (infinite cache)");
      colours.add("#000000");
    }
    return svg.legend(names, colours);
  }
}
