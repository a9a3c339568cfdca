package dev.affinity.server.cli;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.ConfigSecrets;
import dev.affinity.config.ConfigWarning;
import dev.affinity.config.LoadedConfig;
import dev.affinity.config.StartupChecks;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.fleet.WarmUp;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import dev.affinity.routing.RouterFactory;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Runs the frontend. Without {@code --config}: the embedded default (docs/examples/sim-workers.yaml):
 * two context instances and one generation instance of the CPU executor, 2 attention-DP ranks each,
 * in process; sub-agent affinity on (X-Dynamo-Parent-Session-ID, scope context); the route header on.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = "Run the OpenAI-compatible frontend (default: embedded CPU-executor workers on localhost:8000).")
final class ServeCommand implements Callable<Integer> {
  static final String DEFAULT_CONFIG = "/dev/affinity/server/sim-workers.yaml";

  /**
   * On SIGTERM: how long the frontend, no longer accepting connections, lets the requests in flight (streams
   * included) finish before it closes them. A supervisor's grace period (Kubernetes'
   * {@code terminationGracePeriodSeconds}) must be longer, or streams are cut by its SIGKILL instead.
   */
  static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(30);

  @Spec
  CommandSpec spec;

  @Option(names = "--config", paramLabel = "FILE", description = "Disaggregated YAML (TensorRT-LLM format + affinity: block).")
  Path config;

  @Option(names = "--host", description = "Override the config's hostname.")
  String host;

  @Option(names = "--port", description = "Override the config's port (0 = any free port).")
  Integer port;

  @Mixin
  SecretFileOptions secrets;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    LoadedConfig loaded;
    ConfigSecrets given;
    try {
      given = secrets.read();
    } catch (IllegalArgumentException e) {
      err.println("affinity serve: " + e.getMessage());
      return 1;
    }
    try {
      loaded = config != null ? ConfigLoader.load(config, given)
          : ConfigLoader.parse(defaultConfig(), "embedded default (sim-workers.yaml)", given);
    } catch (ConfigException e) {
      e.problems().stream().map(ConfigProblem::format).forEach(err::println);
      return 1;
    } catch (IOException e) {
      err.println(config + ": cannot read: " + e.getMessage());
      return 1;
    }
    // everything config check refuses, before the warm-up
    List<ConfigProblem> startupProblems = new ArrayList<>(new RouterFactory().check(loaded.config()));
    startupProblems.addAll(StartupChecks.of(loaded.config()));
    if (!startupProblems.isEmpty()) {
      startupProblems.stream().map(ConfigProblem::format).forEach(err::println);
      return 1;
    }
    loaded.warnings().stream().map(ConfigWarning::format).forEach(err::println);
    FrontendOptions options = FrontendOptions.fromConfig(loaded.config(), AffinityServer.VERSION);
    if (host != null) {
      options = options.withHost(host);
    }
    if (port != null) {
      options = options.withPort(port);
    }
    // without the native layer there is no warm-up, and AffinityServer.start names what an embedded fleet misses
    if (WarmUp.willRun(loaded.config())) {
      err.println("affinity serve: warming up with " + loaded.config().affinity().warmUpRequests()
          + " requests through a copy of the request path before listening (affinity.warm_up_requests; 0 turns it"
          + " off)...");
      err.flush();
    }
    // the warm-up's copies and the frontend run on the same event loops: what the JIT compiled on their stacks stays
    EventLoopGroup io = FrontendServer.ioGroup(options.ioThreads());
    WarmUp.Result warm = WarmUp.run(loaded.config(), io);  // before listening: /health turns ready on a warm JVM
    if (warm.answered() > 0) {
      err.println("affinity serve: warmed up with " + (warm.answered() + warm.abandoned()) + " requests in "
          + String.format(java.util.Locale.ROOT, "%.1f", warm.took().toNanos() / 1e9) + " s"
          + (warm.failed() > 0 ? " (" + warm.failed() + " failed)" : "") + " (affinity.warm_up_requests)");
      err.flush();
    }
    AffinityServer server;
    try {
      server = AffinityServer.start(loaded.config(), options, io);
    } catch (ConfigException e) {
      e.problems().stream().map(ConfigProblem::format).forEach(err::println);
      io.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return 1;
    } catch (IOException | IllegalArgumentException | dev.affinity.executor.ExecutorException
        | dev.affinity.nativebridge.NativeUnavailableException e) {
      err.println("affinity serve: " + e.getMessage());
      io.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return 1;
    }
    // SIGTERM / Ctrl-C: stop accepting, let in-flight streams finish (up to DRAIN_TIMEOUT), then close.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.shutdown(DRAIN_TIMEOUT);
      io.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }, "affinity-shutdown"));
    String url = "http://" + (options.host().equals("0.0.0.0") ? "localhost" : options.host()) + ":" + server.port();
    String model = loaded.config().affinity().modelOrDefault();
    out.println("Affinity " + AffinityServer.VERSION + " listening on " + url + " (" + server.workers().size() + " workers)");
    out.println("Try:");
    out.println("  curl -s " + url + "/v1/chat/completions -H 'Content-Type: application/json' -H 'X-Session-ID: agent-1' \\");
    out.println("    -d '{\"model\": \"" + model + "\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 32}' -i");
    out.println("  curl -sN " + url + "/v1/chat/completions -H 'Content-Type: application/json' -H 'X-Session-ID: sub-1' \\");
    out.println("    -H 'X-Dynamo-Parent-Session-ID: agent-1' -d '{\"model\": \"" + model
        + "\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 32, \"stream\": true}'");
    out.flush();
    server.awaitClose();
    return 0;
  }

  static String defaultConfig() throws IOException {
    try (InputStream in = ServeCommand.class.getResourceAsStream(DEFAULT_CONFIG)) {
      if (in == null) {
        throw new IOException("the embedded default configuration is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
