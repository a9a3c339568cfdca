package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunResult;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Builds the report's tables: the per-workload summary and the list of runs. */
final class Tables {
  private static final String NA = "n/a";

  private Tables() {}

  /** One row per policy, means over seeds, with each policy's P50 TTFT relative to the best. */
  static Table summary(List<PolicySummary> policies) {
    double best = policies.stream().mapToDouble(PolicySummary::ttftP50Ms).min().orElse(Double.NaN);
    List<List<String>> rows = new ArrayList<>();
    for (PolicySummary p : policies) {
      rows.add(List.of(p.policy(), ms(p.ttftP50Ms()), ms(p.ttftP95Ms()), ms(p.ttftP99Ms()), ms(p.itlP50Ms()),
          ms(p.e2eP50Ms()), ms(p.e2eP95Ms()), ratio(p.hitRatio()), ratio(p.idealHitRatio()),
          p.idealHitRatio() > 0 ? ratio(p.hitRatio() / p.idealHitRatio()) : NA, ratio(p.pooledHitRatio()),
          p.pooledHitRatio() > 0 ? ratio(p.hitRatio() / p.pooledHitRatio()) : NA, ms(p.genQueueP95Ms()),
          imbalance(p.ctxImbalance()), imbalance(p.genImbalance()),
          Math.round(p.agentsWithinSlo()) + " / " + Math.round(p.agents()),
          best > 0 ? Text.fixed(p.ttftP50Ms() / best, 2) + "x" : NA, overBound(p.ttftP50Ms(), p.boundTtftP50Ms()),
          overBound(p.ttftP95Ms(), p.boundTtftP95Ms()), gapClosed(p, policies), Double.isNaN(p.sessionTimeMeanS()) ? NA
              : Text.fixed(p.sessionTimeMeanS(), 1)));
    }
    return new Table(List.of("policy", "TTFT p50 ms", "TTFT p95 ms", "TTFT p99 ms", "ITL p50 ms", "E2E p50 ms",
        "E2E p95 ms", "hit ratio", "ideal", "hit/ideal", "pooled bound", "hit/pooled", "gen queue p95 ms", "ctx imbalance", "gen imbalance",
        "agents within SLO", "TTFT p50 vs best", "p50 / zero-queue bound", "p95 / zero-queue bound",
        "p95 gap closed", "session mean s"),
        rows, 1);
  }

  /** A TTFT percentile as a multiple of the zero-queue bound's same percentile; n/a when the bound is unknown. */
  private static String overBound(double ttft, double bound) {
    return Double.isNaN(bound) || !(bound > 0) ? NA : Text.fixed(ttft / bound, 2) + "x";
  }

  /**
   * The share of the distance from the best other policy's TTFT p95 down to the zero-queue bound's p95 that {@code p}
   * closes: {@code (peer - p) / (peer - bound)}, where the peer is the lowest p95 among the policies of other families
   * ({@link #family}: a policy's variants are not its peers). 100% is the bound itself, 0% the peer, negative worse
   * than the peer; n/a without a bound, a peer, or a peer above the bound. With two seeds or more that both ran, the
   * range of the same share seed by seed follows in brackets ({@code 47% (31 to 62)}): how far one seed's draw moves
   * it, against which a difference between two policies is read.
   */
  static String gapClosed(PolicySummary p, List<PolicySummary> policies) {
    PolicySummary peer = policies.stream().filter(o -> !family(o.policy()).equals(family(p.policy())))
        .min(Comparator.comparingDouble(PolicySummary::ttftP95Ms)).orElse(null);
    double bound = p.boundTtftP95Ms();
    if (peer == null || Double.isNaN(peer.ttftP95Ms()) || Double.isNaN(bound) || !(peer.ttftP95Ms() > bound)) {
      return NA;
    }
    String mean = Text.fixed(100 * (peer.ttftP95Ms() - p.ttftP95Ms()) / (peer.ttftP95Ms() - bound), 0) + "%";
    double low = Double.POSITIVE_INFINITY;
    double high = Double.NEGATIVE_INFINITY;
    int seeds = 0;
    for (var e : p.p95BySeed().entrySet()) {
      double[] other = peer.p95BySeed().get(e.getKey());
      double own = e.getValue()[0];
      double seedBound = e.getValue()[1];
      if (other == null || Double.isNaN(seedBound) || !(other[0] > seedBound)) {
        continue;
      }
      double share = 100 * (other[0] - own) / (other[0] - seedBound);
      low = Math.min(low, share);
      high = Math.max(high, share);
      seeds++;
    }
    return seeds < 2 ? mean : mean + " (" + Text.fixed(low, 0) + " to " + Text.fixed(high, 0) + ")";
  }

  /** A policy's family: its name before any variant's settings ({@code {...}}), suffix ({@code -...}) or {@code +}. */
  static String family(String policy) {
    String base = policy.split("[{]", 2)[0];
    return base.split("[-+]", 2)[0];
  }

  /** One row per run: its wall-clock and simulated time. */
  static Table runs(List<RunResult> runs) {
    List<List<String>> rows = new ArrayList<>();
    for (RunResult r : runs) {
      rows.add(List.of(r.policy(), r.workload(), Long.toString(r.seed()), Integer.toString(r.metrics().requests()),
          Text.fixed(r.wallSeconds(), 2), Text.fixed(r.simulatedSeconds(), 1)));
    }
    return new Table(List.of("policy", "workload", "seed", "requests", "wall s", "simulated s"), rows, 2);
  }

  private static String ms(double v) {
    return Double.isNaN(v) ? NA : Text.fixed(v, 1);
  }

  private static String ratio(double v) {
    return Double.isNaN(v) ? NA : Text.fixed(v, 3);
  }

  private static String imbalance(double v) {
    return Double.isNaN(v) ? NA : Text.fixed(v, 2);
  }
}
