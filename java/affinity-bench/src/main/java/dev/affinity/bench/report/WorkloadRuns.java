package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunResult;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The runs of one workload, grouped by policy.
 *
 * @param workload the workload's name
 * @param fileStem the workload's name made safe (and unique) for file names
 * @param policies its policies, in order of first appearance among all runs
 */
record WorkloadRuns(String workload, String fileStem, List<PolicyRuns> policies) {
  WorkloadRuns {
    policies = List.copyOf(policies);
  }

  /** Groups runs by workload, then policy, both in order of first appearance. */
  static List<WorkloadRuns> group(List<RunResult> runs) {
    List<String> policyOrder = new ArrayList<>();
    Map<String, Map<String, List<RunResult>>> byWorkload = new LinkedHashMap<>();
    for (RunResult r : runs) {
      if (!policyOrder.contains(r.policy())) {
        policyOrder.add(r.policy());
      }
      byWorkload.computeIfAbsent(r.workload(), w -> new LinkedHashMap<>())
          .computeIfAbsent(r.policy(), p -> new ArrayList<>()).add(r);
    }
    List<WorkloadRuns> out = new ArrayList<>();
    Set<String> stems = new HashSet<>();
    for (Map.Entry<String, Map<String, List<RunResult>>> w : byWorkload.entrySet()) {
      List<PolicyRuns> policies = new ArrayList<>();
      for (int i = 0; i < policyOrder.size(); i++) {
        List<RunResult> policyRuns = w.getValue().get(policyOrder.get(i));
        if (policyRuns != null) {
          policies.add(new PolicyRuns(policyOrder.get(i), i, policyRuns));
        }
      }
      out.add(new WorkloadRuns(w.getKey(), uniqueStem(w.getKey(), stems), policies));
    }
    return out;
  }

  private static String uniqueStem(String workload, Set<String> taken) {
    String base = Text.fileStem(workload);
    String stem = base;
    for (int n = 2; !taken.add(stem); n++) {
      stem = base + "-" + n;
    }
    return stem;
  }
}
