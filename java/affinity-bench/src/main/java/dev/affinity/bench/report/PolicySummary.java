package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * One policy's metrics on one workload, each the mean over its seeds.
 *
 * @param pooledHitRatio  NaN when no run knew its pooled bound (live runs)
 * @param genQueueP95Ms   NaN when no run knew its queue waits (live runs)
 * @param boundTtftP50Ms  the zero-queue bound's p50 (NaN when no run knew it: live runs)
 * @param boundTtftP95Ms  the zero-queue bound's p95 (NaN likewise)
 * @param sessionTimeMeanS mean time from an agent's first call to its last answer, seconds
 * @param p95BySeed        per seed, its run's TTFT p95 and the zero-queue bound's p95 (NaN when unknown), ms
 */
record PolicySummary(String policy, double ttftP50Ms, double ttftP95Ms, double ttftP99Ms, double itlP50Ms,
    double e2eP50Ms, double e2eP95Ms, double hitRatio, double idealHitRatio, double pooledHitRatio, double genQueueP95Ms,
    double ctxImbalance, double genImbalance, double agentsWithinSlo, double agents, double boundTtftP50Ms,
    double boundTtftP95Ms, double sessionTimeMeanS, Map<Long, double[]> p95BySeed) {
  PolicySummary {
    p95BySeed = Map.copyOf(p95BySeed);
  }

  static PolicySummary of(PolicyRuns p) {
    List<RunMetrics> m = p.runs().stream().map(RunResult::metrics).toList();
    List<RunMetrics> queued = m.stream().filter(x -> x.genQueueMs() != null).toList();
    List<RunMetrics> bounded = m.stream().filter(x -> x.boundTtftMs() != null).toList();
    return new PolicySummary(p.policy(), mean(m, x -> x.ttftMs()[0]), mean(m, x -> x.ttftMs()[1]),
        mean(m, x -> x.ttftMs()[2]), mean(m, x -> x.itlMs()[0]), mean(m, x -> x.e2eMs()[0]),
        mean(m, x -> x.e2eMs()[1]), mean(m, RunMetrics::hitRatio), mean(m, RunMetrics::idealHitRatio),
        mean(m, RunMetrics::pooledHitRatio),
        mean(queued, x -> x.genQueueMs()[1]), mean(m, RunMetrics::ctxImbalance), mean(m, RunMetrics::genImbalance),
        mean(m, RunMetrics::agentsWithinSlo), mean(m, RunMetrics::agents), mean(bounded, x -> x.boundTtftMs()[0]),
        mean(bounded, x -> x.boundTtftMs()[1]), mean(m, RunMetrics::sessionTimeMeanS), bySeed(p.runs()));
  }

  /** Each seed's TTFT p95 and bound p95 (a seed run twice: its last run). */
  private static Map<Long, double[]> bySeed(List<RunResult> runs) {
    Map<Long, double[]> out = new HashMap<>();
    for (RunResult r : runs) {
      RunMetrics m = r.metrics();
      out.put(r.seed(), new double[] {m.ttftMs()[1], m.boundTtftMs() == null ? Double.NaN : m.boundTtftMs()[1]});
    }
    return out;
  }

  /** The mean, summed in list order; NaN for an empty list. */
  static double mean(List<RunMetrics> metrics, ToDoubleFunction<RunMetrics> value) {
    if (metrics.isEmpty()) {
      return Double.NaN;
    }
    double sum = 0;
    for (RunMetrics m : metrics) {
      sum += value.applyAsDouble(m);
    }
    return sum / metrics.size();
  }
}
