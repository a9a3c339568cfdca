package dev.affinity.bench.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Load sweeps, the AA-AgentPerf way of reading agents within an SLO: workloads named
 * {@code <base>-<agents>} ({@code agentic-8}, {@code agentic-16}, ...) with at least two counts form
 * a sweep. Per policy it shows the agents within the SLO at each count (means over seeds) and the
 * largest count it sustains: at least {@value #SUSTAINED_SHARE} of the agents within the SLO.
 */
final class Sweeps {
  static final double SUSTAINED_SHARE = 0.9;
  static final String EXPLANATION = "Agents within the SLO at each load (means over seeds); sustained: the largest "
      + "load at which at least 90% of the agents were within it.";
  private static final Pattern NAME = Pattern.compile("^(.*)-(\\d+)$");

  private Sweeps() {}

  /** One sweep: its base workload name and its table. */
  record Sweep(String base, Table table) {}

  static List<Sweep> of(List<WorkloadRuns> workloads) {
    Map<String, TreeMap<Integer, WorkloadRuns>> byBase = new LinkedHashMap<>();
    for (WorkloadRuns w : workloads) {
      Matcher m = NAME.matcher(w.workload());
      if (m.matches()) {
        byBase.computeIfAbsent(m.group(1), b -> new TreeMap<>()).put(Integer.parseInt(m.group(2)), w);
      }
    }
    List<Sweep> out = new ArrayList<>();
    byBase.forEach((base, counts) -> {
      if (counts.size() >= 2) {
        out.add(new Sweep(base, table(counts)));
      }
    });
    return out;
  }

  private static Table table(TreeMap<Integer, WorkloadRuns> counts) {
    List<String> header = new ArrayList<>();
    header.add("policy");
    counts.keySet().forEach(n -> header.add(n + " agents"));
    header.add("sustained");
    List<String> policies = new ArrayList<>();
    counts.values().forEach(w -> w.policies().forEach(p -> {
      if (!policies.contains(p.policy())) {
        policies.add(p.policy());
      }
    }));
    List<List<String>> rows = new ArrayList<>();
    for (String policy : policies) {
      List<String> row = new ArrayList<>();
      row.add(policy);
      Integer sustained = null;
      for (Map.Entry<Integer, WorkloadRuns> e : counts.entrySet()) {
        PolicyRuns runs = e.getValue().policies().stream().filter(p -> p.policy().equals(policy)).findFirst().orElse(null);
        if (runs == null) {
          row.add("n/a");
          continue;
        }
        PolicySummary s = PolicySummary.of(runs);
        row.add(Math.round(s.agentsWithinSlo()) + " / " + Math.round(s.agents()));
        if (s.agents() > 0 && s.agentsWithinSlo() / s.agents() >= SUSTAINED_SHARE) {
          sustained = e.getKey();
        }
      }
      row.add(sustained == null ? "none" : String.valueOf(sustained));
      rows.add(row);
    }
    return new Table(header, rows, 1);
  }
}
