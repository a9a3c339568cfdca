package dev.affinity.server.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.ConfigSecrets;
import dev.affinity.config.ConfigWarning;
import dev.affinity.config.LoadedConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.config.StartupChecks;
import dev.affinity.config.WorkerPool;
import dev.affinity.executor.ExecutorException;
import dev.affinity.nativebridge.NativeBridge;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.routing.RouterFactory;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Validates a configuration like {@code nginx -t}: prints every error and warning (the same
 * messages as at startup) and exits non-zero on errors. Embedded workers' executor settings are
 * checked by the native layer itself when it loads.
 */
@Command(
    name = "check",
    mixinStandardHelpOptions = true,
    description = "Validate a disaggregated config file: print every error and warning; exit 1 on errors.")
final class ConfigCheckCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "The YAML file to check.")
  Path file;

  @Mixin
  SecretFileOptions secrets;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!Files.isRegularFile(file)) {
      err.println(file + ": no such file");
      return 1;
    }
    ConfigSecrets given;
    try {
      given = secrets.read();
    } catch (IllegalArgumentException e) {
      err.println(e.getMessage());
      return 1;
    }
    LoadedConfig loaded;
    try {
      loaded = ConfigLoader.load(file, given);
    } catch (ConfigException e) {
      for (ConfigProblem p : e.problems()) {
        err.println(p.format());
      }
      err.println(file + ": " + e.problems().size() + (e.problems().size() == 1 ? " error" : " errors"));
      return 1;
    } catch (IOException e) {
      err.println(file + ": cannot read: " + e.getMessage());
      return 1;
    }
    List<String> errors = new ArrayList<>();
    // everything serve would refuse at start-up: the routers are built here too
    new RouterFactory().check(loaded.config()).forEach(p -> errors.add(p.format()));
    StartupChecks.of(loaded.config()).forEach(p -> errors.add(p.format()));
    for (ServerSection s : List.of(loaded.config().context(), loaded.config().generation())) {
      s.embedded().ifPresent(pool -> checkExecutor(s, pool, errors));
    }
    for (ConfigWarning w : loaded.warnings()) {
      err.println(w.format());
    }
    errors.forEach(err::println);
    if (!errors.isEmpty()) {
      err.println(file + ": " + errors.size() + (errors.size() == 1 ? " error" : " errors"));
      return 1;
    }
    out.println(file + ": ok" + (loaded.warnings().isEmpty() ? "" : " (" + loaded.warnings().size()
        + (loaded.warnings().size() == 1 ? " warning)" : " warnings)")));
    return 0;
  }

  private static void checkExecutor(ServerSection s, WorkerPool pool, List<String> errors) {
    String where = pool.location() + ": affinity.workers." + (s.name().startsWith("context") ? "context" : "generation");
    if (!NativeBridge.isAvailable()) {
      errors.add(where + ": cannot check the executor settings: native library unavailable ("
          + NativeBridge.unavailabilityCause() + ")");
      return;
    }
    try {
      // parsed by the native layer (no executor built: a pytorch pool would load its model)
      NativeExecutor.checkConfig(pool.backend(), JSON.writeValueAsString(pool.executorConfig()));
    } catch (ExecutorException | IOException e) {
      errors.add(where + ": " + e.getMessage());
    }
  }
}
