package dev.affinity.server.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Affinity's command-line tool: one command, with subcommands. {@code scripts/affinity} launches it.
 */
@Command(
    name = "affinity",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = "Routing layer for disaggregated LLM serving (TensorRT-LLM compatible).",
    subcommands = {CommandLine.HelpCommand.class, ConfigCommand.class, KvHashCommand.class, NativeInfoCommand.class, ServeCommand.class, SimCommand.class,
        TokenizeCommand.class, WorkerCommand.class})
public final class AffinityCli implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The command line with every subcommand, writing to the given streams (tests use this). */
  public static CommandLine commandLine() {
    return new CommandLine(new AffinityCli()).setCaseInsensitiveEnumValuesAllowed(true);
  }

  public static void main(String[] args) {
    LeakDetection.configure();
    System.exit(commandLine().execute(args));
  }
}
