package dev.affinity.server.cli;

import dev.affinity.config.SharedStateSettings;
import dev.affinity.executor.ExecutorException;
import dev.affinity.nativebridge.NativeUnavailableException;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.AccessLog;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.cluster.WorkerRegistration;
import dev.affinity.server.workermode.WorkerCluster;
import dev.affinity.server.workermode.WorkerServer;
import dev.affinity.server.workermode.WorkerSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Worker mode: one CPU executor served over the trtllm-serve worker contract ({@code /v1/completions},
 * {@code /v1/chat/completions}, {@code /health}, {@code /server_info}, {@code /kv_cache_events}), so that
 * an Affinity frontend (or TensorRT-LLM's) on another machine routes to it. See docs/workers.md.
 */
@Command(
    name = "worker",
    mixinStandardHelpOptions = true,
    description = "Serve one CPU executor as a worker process with trtllm-serve's HTTP contract.")
final class WorkerCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--port", required = true, description = "Port to listen on (0 = any free port; the chosen one is printed).")
  int port;

  @Option(names = "--host", defaultValue = "localhost", description = "Address to bind (default: ${DEFAULT-VALUE}; 0.0.0.0 for all).")
  String host;

  /** At most one of the two. */
  static final class ExecutorConfig {
    @Option(names = "--config", paramLabel = "FILE.json", description = "Executor configuration file (docs/cpu-executor.md).")
    Path file;

    @Option(names = "--executor-json", paramLabel = "JSON", description = "Executor configuration as JSON text.")
    String json;
  }

  @ArgGroup(exclusive = true, multiplicity = "0..1")
  ExecutorConfig executor;

  @Option(names = "--model", description = "Model name requests must carry (default: any).")
  String model;

  @Option(names = "--auth-key", defaultValue = "${env:AFFINITY_AUTH_KEY}",
      description = "internal_request_auth_key shared with the frontends (default: $AFFINITY_AUTH_KEY). With it, completions and /kv_cache_events need a valid x-affinity-leg-auth (401 otherwise); without it, requests are accepted unsigned and sub-agent affinity ids are ignored.")
  String authKey;

  @Option(names = SecretFileOptions.AUTH_KEY_FILE, paramLabel = "FILE",
      description = "internal_request_auth_key read from FILE (its text, surrounding whitespace stripped, as serve's --auth-key-file reads it) instead of --auth-key or $AFFINITY_AUTH_KEY, which then must not be set.")
  Path authKeyFile;

  @Option(names = "--tokenizer", defaultValue = WorkerSettings.DEFAULT_TOKENIZER,
      description = "BPE encoding of text prompts (default: ${DEFAULT-VALUE}), or a model's tokenizer directory (tokenizer.json, tokenizer_config.json): prompts, chats and KV events then use the model's own ids.")
  String tokenizer;

  @Option(names = "--name", defaultValue = WorkerSettings.DEFAULT_NAME,
      description = "Worker name for logs and /server_info; the executor's instance_name unless the config sets one (default: ${DEFAULT-VALUE}).")
  String name;

  @Option(names = "--request-timeout", defaultValue = "600", paramLabel = "SECONDS",
      description = "Longest a request may run (default: ${DEFAULT-VALUE}).")
  long requestTimeoutSeconds;

  @Option(names = "--access-log", paramLabel = "-|FILE", description = "JSON access log lines to stdout (-) or a file (default: the SLF4J logger affinity.access).")
  String accessLog;

  @Option(names = "--auth-window-sec", defaultValue = "60", paramLabel = "SECONDS",
      description = "With --auth-key: how far the timestamp of a request's x-affinity-leg-auth may be from this worker's clock, either way (default: ${DEFAULT-VALUE}).")
  long authWindowSec;

  @Option(names = "--require-internal-auth",
      description = "Refuse to start without --auth-key, and answer a sub-agent affinity id with a missing or wrong signature with 401 (default: ignore it).")
  boolean requireInternalAuth;

  @Option(names = {"--server-role", "--server_role"}, paramLabel = "context|generation",
      description = "The fleet this worker serves in a disagg_cluster (required with --disagg-cluster-uri).")
  String serverRole;

  @Option(names = {"--disagg-cluster-uri", "--disagg_cluster_uri"}, paramLabel = "URI",
      description = "Register with a disagg_cluster as a stock worker does: http://FRONTEND:PORT (the frontend's storage) or etcd://HOST:PORT[,etcd://HOST2:PORT2].")
  String clusterUri;

  @Option(names = {"--disagg-cluster-name", "--disagg_cluster_name"}, defaultValue = "",
      description = "The cluster_name that scopes the keys (default: \"\").")
  String clusterName;

  @Option(names = {"--heartbeat-interval-sec", "--heartbeat_interval_sec"}, defaultValue = "5",
      description = "How often the registration is refreshed (default: ${DEFAULT-VALUE}; 0 or not below the inactive timeout: no heartbeat).")
  int heartbeatSec;

  @Option(names = {"--inactive-timeout-sec", "--inactive_timeout_sec"}, defaultValue = "10",
      description = "The registration's TTL: a worker that stops refreshing leaves after it (default: ${DEFAULT-VALUE}).")
  int inactiveSec;

  @Option(names = "--drain-timeout-sec", defaultValue = "30",
      description = "On SIGTERM: how long the worker, its key deleted, answers new requests 503 while those in flight finish (default: ${DEFAULT-VALUE}).")
  int drainSec;

  @Option(names = "--nats", paramLabel = "nats://HOST:PORT[,...]", split = ",",
      description = "Publish this worker's KV events to NATS JetStream, on the stream of --disagg-cluster-name, instead of buffering them for a frontend's /kv_cache_events drain (the frontends' affinity.shared_state; docs/workers.md, \"Several frontends\").")
  List<String> nats;

  @Option(names = "--nats-token-file", paramLabel = "FILE", description = "With --nats: the NATS token, read from FILE (its text, whitespace stripped).")
  Path natsTokenFile;

  @Option(names = "--nats-creds-file", paramLabel = "FILE", description = "With --nats: a NATS credentials file (JWT and NKey seed).")
  Path natsCredsFile;

  @Option(names = "--nats-tls-ca-file", paramLabel = "FILE", description = "With --nats: the CA certificate (PEM) of the NATS servers' certificates (implies TLS).")
  Path natsTlsCaFile;

  @Option(names = "--io-threads", defaultValue = "0", paramLabel = "N",
      description = "Event-loop threads for connections (default: ${DEFAULT-VALUE}, one per available processor).")
  int ioThreads;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String config;
    WorkerSettings settings;
    FrontendOptions options;
    WorkerCluster cluster = null;
    SharedStateSettings natsSettings;
    try {
      config = executorConfig();
      settings = WorkerSettings.defaults().withName(name).withModel(model).withAuthKey(authKey()).withTokenizer(tokenizer)
          .withRequestTimeout(Duration.ofSeconds(requestTimeoutSeconds)).withRequireInternalAuth(requireInternalAuth)
          .withAuthWindow(Duration.ofSeconds(authWindowSec));
      if (clusterUri != null) {
        if (serverRole == null) {
          throw new IllegalArgumentException("--disagg-cluster-uri needs --server-role context|generation");
        }
        cluster = new WorkerCluster(clusterUri, clusterName, ServerRole.parse(serverRole), heartbeatSec, inactiveSec,
            WorkerRegistration.RETRY);
      } else if (serverRole != null) {
        ServerRole.parse(serverRole); // checked; a role matters only in a cluster
      }
      if (ioThreads < 0) {
        throw new IllegalArgumentException("--io-threads must not be negative: " + ioThreads);
      }
      if (drainSec < 0) {
        throw new IllegalArgumentException("--drain-timeout-sec must not be negative: " + drainSec);
      }
      natsSettings = natsSettings();
      options = FrontendOptions.defaults().withHost(host).withPort(port).withIoThreads(ioThreads)
          .withAccessLog(accessLog == null ? AccessLog.slf4j() : AccessLog.forSetting(Optional.of(accessLog)));
    } catch (IOException | IllegalArgumentException e) {
      err.println("affinity worker: " + e.getMessage());
      return 1;
    }
    WorkerServer server;
    try {
      server = WorkerServer.start(config, settings, options, AffinityServer.VERSION);
    } catch (ExecutorException | IllegalArgumentException | IOException | NativeUnavailableException e) {
      err.println("affinity worker: " + e.getMessage());
      return 1;
    }
    // SIGTERM / Ctrl-C: leave the cluster first, finish what is in flight, then close
    Runtime.getRuntime().addShutdownHook(new Thread(() -> server.shutdown(Duration.ofSeconds(drainSec)),
        "affinity-worker-shutdown"));
    String shownHost = host.equals("0.0.0.0") ? "localhost" : host;
    out.println("Affinity worker " + settings.name() + " listening on http://" + shownHost + ":" + server.port() + " ("
        + server.executor().numRanks() + " ranks, " + server.executor().tokensPerBlock() + " tokens per block, "
        + (settings.authKey() == null ? "no auth key" : "auth key set") + ")");
    if (natsSettings != null) {
      try {
        server.publishKvEvents(natsSettings, clusterName);
      } catch (IOException e) {
        server.close();
        err.println("affinity worker: " + e.getMessage());
        return 1;
      }
      out.println("Publishing KV events on " + server.kvPublisher().subject() + " as " + server.kvPublisher().publisherKey());
    }
    if (cluster != null) {
      server.joinCluster(cluster);
      out.println("Registering as " + server.registration().key() + " with " + cluster.uri());
    }
    out.flush();
    server.awaitClose();
    return 0;
  }

  /**
   * The key of {@code --auth-key} (or $AFFINITY_AUTH_KEY), or of {@code --auth-key-file}, read as serve reads its
   * file ({@link SecretFileOptions}); both at once is an error.
   */
  String authKey() {
    if (authKeyFile == null) {
      return authKey;
    }
    if (authKey != null) {
      throw new IllegalArgumentException("--auth-key-file " + authKeyFile + " and --auth-key (or $AFFINITY_AUTH_KEY) are "
          + "both set: give the key one way");
    }
    return SecretFileOptions.authKey(authKeyFile);
  }

  /** The NATS settings of {@code --nats} and its options, or null without it; the options alone are an error. */
  SharedStateSettings natsSettings() {
    if (nats == null || nats.isEmpty()) {
      if (natsTokenFile != null || natsCredsFile != null || natsTlsCaFile != null) {
        throw new IllegalArgumentException("--nats-token-file, --nats-creds-file and --nats-tls-ca-file need --nats");
      }
      return null;
    }
    for (String url : nats) {
      String why = SharedStateSettings.serverProblem(url.strip());
      if (why != null) {
        throw new IllegalArgumentException("--nats " + url + ": expected nats://HOST:PORT or tls://HOST:PORT" + why);
      }
    }
    if (natsTokenFile != null && natsCredsFile != null) {
      throw new IllegalArgumentException("--nats-token-file and --nats-creds-file are both set: authenticate one way");
    }
    Optional<String> token = Optional.ofNullable(natsTokenFile)
        .map(f -> SecretFileOptions.secret("--nats-token-file", f, "the NATS token"));
    for (Path f : new Path[] {natsCredsFile, natsTlsCaFile}) {
      if (f != null && !Files.isReadable(f)) {
        throw new IllegalArgumentException((f == natsCredsFile ? "--nats-creds-file " : "--nats-tls-ca-file ") + f
            + ": not a readable file");
      }
    }
    return new SharedStateSettings(nats, token, Optional.ofNullable(natsTokenFile).map(f -> f.toAbsolutePath().toString()),
        Optional.empty(), Optional.empty(), Optional.empty(),
        Optional.ofNullable(natsCredsFile).map(f -> f.toAbsolutePath().toString()),
        Optional.ofNullable(natsTlsCaFile).map(f -> f.toAbsolutePath().toString()),
        SharedStateSettings.DEFAULT_EVENT_RETENTION_SECONDS, SharedStateSettings.DEFAULT_DRAIN_LEASE_SECONDS);
  }

  private String executorConfig() throws IOException {
    if (executor == null) {
      return "";
    }
    if (executor.file != null) {
      return Files.readString(executor.file, StandardCharsets.UTF_8);
    }
    return executor.json;
  }
}
