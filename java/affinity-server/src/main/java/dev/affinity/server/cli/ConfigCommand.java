package dev.affinity.server.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code affinity config ...}: configuration tools. */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = "Configuration tools.",
    subcommands = {ConfigCheckCommand.class})
final class ConfigCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
