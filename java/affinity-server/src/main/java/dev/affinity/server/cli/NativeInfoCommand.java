package dev.affinity.server.cli;

import dev.affinity.nativebridge.NativeBridge;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.gpu.GpuInventory;
import dev.affinity.nativebridge.python.PyTorchBackend;
import dev.affinity.nativebridge.python.PythonEnvironment;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** Reports whether the native layer loads, its backends, and the configuration a backend resolves. */
@Command(
    name = "native-info",
    mixinStandardHelpOptions = true,
    description = "Show whether the native executor library loads, its backends, the GPUs, and a resolved executor config.")
final class NativeInfoCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--backend", defaultValue = "sim", description = "Backend whose default configuration to show (default: ${DEFAULT-VALUE}).")
  String backend;

  @Option(names = "--config", description = "Executor configuration (JSON text, or @FILE) to resolve instead of the defaults.")
  String config;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (!NativeBridge.isAvailable()) {
      spec.commandLine().getErr().println("native library unavailable: " + NativeBridge.unavailabilityCause());
      return 1;
    }
    out.println("native: " + NativeBridge.version());
    out.println("backends: " + NativeBridge.availableBackends());
    out.println("pytorch backend: " + PyTorchBackend.unavailability(null).map(why -> "unavailable: " + why)
        .orElse("available (python from $" + PythonEnvironment.PYTHON_ENV + " or python3)"));
    out.println("gpus: " + GpuInventory.detect().describe());
    try (NativeExecutor ex = NativeExecutor.create(backend, ExecutorConfigs.read(config))) {
      out.println("resolved " + backend + " config: " + ex.describe());
    }
    return 0;
  }
}
