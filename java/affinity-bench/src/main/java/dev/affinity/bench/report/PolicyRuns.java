package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunResult;
import java.util.List;

/**
 * The runs (seeds) of one policy on one workload.
 *
 * @param policy the policy's name
 * @param index  the policy's position among all the report's policies (picks its colour)
 * @param runs   its runs, in input order
 */
record PolicyRuns(String policy, int index, List<RunResult> runs) {
  PolicyRuns {
    runs = List.copyOf(runs);
  }
}
