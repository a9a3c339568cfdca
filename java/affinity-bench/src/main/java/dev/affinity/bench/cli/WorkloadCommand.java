package dev.affinity.bench.cli;

import dev.affinity.bench.compare.WorkloadSpec;
import dev.affinity.bench.trace.AffinityTrace;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.ClaudeCodeWorkload;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code affinity bench workload}: writes a workload as an Affinity JSONL trace (open loop). */
@Command(
    name = "workload",
    mixinStandardHelpOptions = true,
    description = "Write a workload (agentic agents flattened to an open-loop trace, or a converted trace) in Affinity's "
        + "JSONL trace format (docs/traces.md).")
final class WorkloadCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Parameters(index = "0", description = "agentic, agentic-fork, mooncake:PATH, trace:PATH or claude-code:DIR[#half=a|b]")
  String workload;

  @Option(names = "--out", required = true, description = "The JSONL file to write.")
  Path out;

  @Option(names = "--seed", defaultValue = "1", description = "Seed (default: ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--agents", defaultValue = "0", description = "Agents of an agentic workload (default: the generator's).")
  int agents;

  @Option(names = "--users", defaultValue = "0", description = "Users replaying claude-code traces (default: one per trace).")
  int users;

  @Override
  public Integer call() throws Exception {
    List<TraceRequest> trace = new WorkloadSpec(workload, agents, 0, users == 0 ? ClaudeCodeWorkload.Options.defaults()
        : ClaudeCodeWorkload.Options.defaults().withUsers(users)).asTrace(seed);
    AffinityTrace.write(trace, out);
    spec.commandLine().getOut().println("wrote " + trace.size() + " requests to " + out);
    return 0;
  }
}
