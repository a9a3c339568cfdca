package dev.affinity.bench.cli;

import dev.affinity.bench.compare.WorkloadSpec;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** Options that choose workloads and seeds. */
final class WorkloadOptions {
  @Option(names = "--workloads", split = ",", defaultValue = "agentic",
      description = "agentic, agentic-fork, mooncake:PATH, trace:PATH (comma-separated; default: ${DEFAULT-VALUE}).")
  List<String> workloads;

  @Option(names = "--seeds", split = ",", defaultValue = "1", description = "Seeds (comma-separated; default: ${DEFAULT-VALUE}).")
  List<Long> seeds;

  @Option(names = "--agents", split = ",", defaultValue = "0",
      description = "Agents of an agentic workload; several (8,16,32) make one workload per count, a load sweep "
          + "(default: the generator's, 32).")
  List<Integer> agents;

  @Option(names = "--limit", defaultValue = "0", description = "Replay only the first N requests of a trace (default: all).")
  int limit;

  List<WorkloadSpec> specs() {
    List<WorkloadSpec> out = new ArrayList<>();
    for (String w : workloads) {
      boolean agentic = w.trim().startsWith("agentic");
      for (int n : agentic ? agents : List.of(0)) {
        out.add(new WorkloadSpec(w.trim(), n, limit));
      }
    }
    return out;
  }
}
