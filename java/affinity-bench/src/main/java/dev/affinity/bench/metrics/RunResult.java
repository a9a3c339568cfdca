package dev.affinity.bench.metrics;

import java.util.List;

/**
 * One run of a workload under one policy, simulated or live.
 *
 * @param policy           the policy's name
 * @param workload         the workload's name
 * @param seed             the seed the workload (and its prompt tokens) came from
 * @param metrics          the summary
 * @param records          every request, in send order
 * @param load             load over time (empty for live runs)
 * @param wallSeconds      how long the run took
 * @param simulatedSeconds virtual time from the start to the last answer (0 for live runs)
 * @param bound            the fleet's zero-queue bound on TTFT, or null when unknown (live runs)
 */
public record RunResult(String policy, String workload, long seed, RunMetrics metrics, List<RequestRecord> records,
    LoadSeries load, double wallSeconds, double simulatedSeconds, ZeroQueueBound bound) {
  public RunResult {
    records = List.copyOf(records);
  }

  /** A run whose zero-queue bound is unknown (live runs). */
  public RunResult(String policy, String workload, long seed, RunMetrics metrics, List<RequestRecord> records,
      LoadSeries load, double wallSeconds, double simulatedSeconds) {
    this(policy, workload, seed, metrics, records, load, wallSeconds, simulatedSeconds, null);
  }
}
