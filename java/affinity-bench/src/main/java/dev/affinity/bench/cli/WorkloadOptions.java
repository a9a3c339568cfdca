package dev.affinity.bench.cli;

import dev.affinity.bench.compare.WorkloadSpec;
import dev.affinity.bench.workload.ClaudeCodeWorkload;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** Options that choose workloads and seeds. */
final class WorkloadOptions {
  @Option(names = "--workloads", split = ",", defaultValue = "agentic",
      description = "agentic, agentic-fork, mooncake:PATH, trace:PATH, claude-code:DIR[#half=a|b] (comma-separated; default: "
          + "${DEFAULT-VALUE}).")
  List<String> workloads;

  @Option(names = "--seeds", split = ",", defaultValue = "1", description = "Seeds (comma-separated; default: ${DEFAULT-VALUE}).")
  List<Long> seeds;

  @Option(names = "--agents", split = ",", defaultValue = "0",
      description = "Agents of an agentic workload; several (8,16,32) make one workload per count, a load sweep "
          + "(default: the generator's, 32).")
  List<Integer> agents;

  @Option(names = "--limit", defaultValue = "0", description = "Replay only the first N requests of a trace (default: all).")
  int limit;

  @Option(names = "--users", split = ",", defaultValue = "0",
      description = "Users replaying claude-code traces (user u replays trace u mod T); several make one workload per count, "
          + "a load sweep (default: one per trace).")
  List<Integer> users;

  @Option(names = "--user-starts-per-second", defaultValue = "0.1",
      description = "claude-code: Poisson rate of user starts (default: ${DEFAULT-VALUE}).")
  double userStartsPerSecond;

  @Option(names = "--think-cap-s", defaultValue = "60",
      description = "claude-code: cap on each think time, seconds (default: ${DEFAULT-VALUE}).")
  double thinkCapS;

  @Option(names = "--shared-system-prompt",
      description = "claude-code: every session of a kind begins with the same system prompt and tools (the traces do not "
          + "say; off by default).")
  boolean sharedSystemPrompt;

  @Option(names = "--timing", defaultValue = "closed",
      description = "claude-code: closed (each call its think time after the previous response) or open (at the recorded "
          + "times) (default: ${DEFAULT-VALUE}).")
  String timing;

  List<WorkloadSpec> specs() {
    if (!timing.equals("closed") && !timing.equals("open")) {
      throw new IllegalArgumentException("--timing must be closed or open, got " + timing);
    }
    ClaudeCodeWorkload.Options claude = new ClaudeCodeWorkload.Options(0, userStartsPerSecond, thinkCapS,
        sharedSystemPrompt, timing.equals("open"));
    List<WorkloadSpec> out = new ArrayList<>();
    for (String w : workloads) {
      String spec = w.trim();
      if (spec.startsWith("agentic")) {
        for (int n : agents) {
          out.add(new WorkloadSpec(spec, n, limit, claude));
        }
      } else if (spec.startsWith(ClaudeCodeWorkload.NAME + ":")) {
        for (int n : users) {
          out.add(new WorkloadSpec(spec, 0, limit, claude.withUsers(n)));
        }
      } else {
        out.add(new WorkloadSpec(spec, 0, limit, claude));
      }
    }
    return out;
  }
}
