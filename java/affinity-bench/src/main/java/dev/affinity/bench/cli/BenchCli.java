package dev.affinity.bench.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code affinity bench}: policy evaluation. {@code compare} simulates a matrix of policies x
 * workloads x seeds in virtual time and writes a report; {@code live} plays the same workloads against
 * a running frontend; {@code workload} writes a workload as an Affinity JSONL trace.
 */
@Command(
    name = "affinity bench",
    mixinStandardHelpOptions = true,
    versionProvider = BenchCli.Version.class,
    description = "Compare routing policies on agentic workloads and traces (simulated or live).",
    subcommands = {CompareCommand.class, LiveCommand.class, WorkloadCommand.class,
        dev.affinity.bench.live.ChatHitRatio.class, dev.affinity.bench.live.SharedKvLag.class, CommandLine.HelpCommand.class})
public final class BenchCli {

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  public static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new BenchCli());
    cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
      if (e instanceof IllegalArgumentException || e instanceof java.io.IOException
          || e instanceof java.util.concurrent.TimeoutException || e instanceof dev.affinity.config.ConfigException
          || e instanceof dev.affinity.bench.trace.TraceFormatException || e instanceof dev.affinity.executor.ExecutorException) {
        cmd.getErr().println("error: " + e.getMessage());
        return 2;
      }
      throw e;
    });
    return cli;
  }

  /** The version of the server module it ships with. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"affinity bench " + dev.affinity.server.fleet.AffinityServer.VERSION};
    }
  }
}
