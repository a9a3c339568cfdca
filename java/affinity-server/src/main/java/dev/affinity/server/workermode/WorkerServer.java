package dev.affinity.server.workermode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.executor.ClockMode;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.executor.Executor;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeExecutor;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import dev.affinity.server.codec.Codecs;
import dev.affinity.worker.TokenCodec;
import dev.affinity.server.worker.LegAuth;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import dev.affinity.server.cluster.ClusterStorage;
import dev.affinity.server.cluster.ClusterWorker;
import dev.affinity.server.cluster.EtcdClusterStorage;
import dev.affinity.server.cluster.HttpClusterStorageClient;
import dev.affinity.server.cluster.WorkerRegistration;
import dev.affinity.config.SharedStateSettings;
import dev.affinity.server.shared.WorkerKvPublisher;
import java.util.Optional;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An Affinity worker process: one native executor ({@code sim} backend, the CPU executor) wrapped in a
 * {@link NativeWorker}, served over the same HTTP wire contract and endpoints as a trtllm-serve worker,
 * so that Affinity frontends (and TensorRT-LLM's own) route to it like to any worker (docs/workers.md,
 * "Worker mode"). {@code affinity worker} runs one; tests start them in process on port 0.
 */
public final class WorkerServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerServer.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The native backend a worker process runs. */
  public static final String BACKEND = "sim";
  /** Ranks of the default executor. */
  public static final int DEFAULT_RANKS = 2;

  /** After its key is deleted, a leaving worker answers 503 at least this long, for frontends to see the delete. */
  static final Duration DRAIN_GRACE = Duration.ofSeconds(1);

  private final NativeWorker worker;
  private final PrometheusMeterRegistry registry;
  private final FrontendServer frontend;
  private final WorkerBackend backend;
  private final String host;
  private final Codecs codecs;
  /** Tells context workers in other processes that their contexts were pulled. */
  private final ContextReleaser releaser;
  /** Signs the HTTP cluster storage requests (null without a key). */
  private final InternalAuth auth;
  private volatile WorkerRegistration registration;
  private volatile ClusterStorage clusterStorage;
  private volatile WorkerKvPublisher kvPublisher;

  private WorkerServer(NativeWorker worker, PrometheusMeterRegistry registry, FrontendServer frontend,
      WorkerBackend backend, String host, Codecs codecs, InternalAuth auth, ContextReleaser releaser) {
    this.releaser = releaser;
    this.codecs = codecs;
    this.auth = auth;
    this.worker = worker;
    this.registry = registry;
    this.frontend = frontend;
    this.backend = backend;
    this.host = host;
  }

  /** {@link #start(String, WorkerSettings, FrontendOptions, String, HandoffDomain)} without a hand-off domain. */
  public static WorkerServer start(String executorConfig, WorkerSettings settings, FrontendOptions options,
      String version) throws IOException {
    return start(executorConfig, settings, options, version, null);
  }

  /**
   * Creates the executor and starts serving.
   *
   * @param executorConfig the executor's JSON configuration (docs/cpu-executor.md; "" for the default, a
   *     real-clock CPU executor with {@value #DEFAULT_RANKS} ranks); {@code num_ranks} defaults to
   *     {@value #DEFAULT_RANKS} and {@code instance_name} to the worker's name
   * @param options where to listen; disaggregated_params are always accepted (internal traffic) and the
   *     model list is the settings' model
   * @param version what {@code /version} and {@code /server_info} report
   * @param handoff the hand-off domain of worker servers that share this process (tests), so that a
   *     generation leg frees its context's KV on another of them at once; null for none (a worker
   *     process: contexts of other processes are trusted and freed by their own hold timeout)
   * @throws IllegalArgumentException for a configuration that is not a JSON object, or a virtual clock
   * @throws dev.affinity.executor.ExecutorException for a configuration the executor refuses
   * @throws IOException when the address cannot be bound
   */
  public static WorkerServer start(String executorConfig, WorkerSettings settings, FrontendOptions options,
      String version, HandoffDomain handoff) throws IOException {
    return start(executorConfig, settings, options, version, handoff, Clock.systemUTC());
  }

  /**
   * {@link #start(String, WorkerSettings, FrontendOptions, String, HandoffDomain)} with the clock that the
   * timestamps of {@link LegAuth#HEADER} are checked against (tests).
   */
  public static WorkerServer start(String executorConfig, WorkerSettings settings, FrontendOptions options,
      String version, HandoffDomain handoff, Clock clock) throws IOException {
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(options, "options");
    String config = effectiveConfig(executorConfig, settings.name());
    Codecs codecs = Codecs.open(settings.tokenizer());
    TokenCodec codec = codecs.codec();
    NativeExecutor executor;
    try {
      executor = NativeExecutor.create(BACKEND, config, handoff);
    } catch (RuntimeException e) {
      codecs.close();
      throw e;
    }
    NativeWorker worker = null;
    ContextReleaser releaser = null;
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try {
      if (executor.clockMode() != ClockMode.REAL) {
        throw new IllegalArgumentException("a worker process needs a real clock (clock.mode: real), not "
            + executor.clockMode());
      }
      worker = new NativeWorker(settings.name(), executor, codec, settings.defaultMaxTokens(), handoff);
      InternalHeaders internal = new InternalHeaders(settings.name(), InternalAuth.ofNullable(settings.authKey()).orElse(null),
          executor.numRanks(), settings.requireInternalAuth());
      releaser = new ContextReleaser(InternalAuth.ofNullable(settings.authKey()).orElse(null));
      WorkerHandler handler = new WorkerHandler(worker, internal, settings.requestTimeout(), releaser);
      registerGauges(registry, worker);
      FrontendOptions served = options.withAllowClientDisaggregatedParams(true)
          .withModels(settings.model() == null ? List.of() : List.of(settings.model()))
          .withVersion(version);
      InternalAuth auth = InternalAuth.ofNullable(settings.authKey()).orElse(null);
      LegAuth.Verifier legAuth = auth == null ? null
          : new LegAuth.Verifier(auth, worker.id(), clock, settings.authWindow());
      LegAuth.Verifier releaseAuth = auth == null ? null
          : new LegAuth.Verifier(auth, ContextReleaser.AUDIENCE, clock, settings.authWindow());
      WorkerBackend backend = new WorkerBackend(worker, settings, handler, version, legAuth, releaseAuth);
      FrontendServer frontend = FrontendServer.start(served, backend, registry);
      worker.advertiseContextEndpoint("http://" + advertisedHost(served.host()) + ":" + frontend.port());
      LOG.info("worker {} serving {} ranks ({} tokens per block) on {}:{}", worker.id(), executor.numRanks(),
          executor.tokensPerBlock(), served.host(), frontend.port());
      return new WorkerServer(worker, registry, frontend, backend, served.host(), codecs, auth, releaser);
    } catch (IOException | RuntimeException e) {
      if (worker != null) {
        worker.close();
      } else {
        executor.close();
      }
      if (releaser != null) {
        releaser.close();
      }
      codecs.close();
      registry.close();
      throw e;
    }
  }

  /**
   * The host other processes reach this worker at: the one it listens on, or for a wildcard address this host's
   * name (what a generation worker then calls with a context's release).
   */
  static String advertisedHost(String listening) {
    if (!listening.isEmpty() && !listening.equals("0.0.0.0") && !listening.equals("::") && !listening.equals("[::]")) {
      return listening.contains(":") && !listening.startsWith("[") ? "[" + listening + "]" : listening;
    }
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      return "localhost";
    }
  }

  /** The configuration with the worker-mode defaults filled in. */
  static String effectiveConfig(String executorConfig, String name) {
    JsonNode node;
    try {
      node = executorConfig == null || executorConfig.isBlank() ? JSON.createObjectNode() : JSON.readTree(executorConfig);
    } catch (IOException e) {
      throw new IllegalArgumentException("executor config is not valid JSON: " + e.getMessage(), e);
    }
    if (!(node instanceof ObjectNode obj)) {
      throw new IllegalArgumentException("executor config must be a JSON object, found "
          + (node == null ? "nothing" : node.getNodeType()));
    }
    if (!obj.has("num_ranks")) {
      obj.put("num_ranks", DEFAULT_RANKS);
    }
    if (!obj.has("instance_name")) {
      obj.put("instance_name", name);
    }
    return obj.toString();
  }

  /**
   * Per-rank KV-cache gauges on {@code /metrics}: where a frontend (or a test) sees held and cached KV;
   * and the executor's count of skipped telemetry items.
   */
  private static void registerGauges(PrometheusMeterRegistry registry, NativeWorker worker) {
    Executor executor = worker.executor();
    io.micrometer.core.instrument.FunctionCounter.builder("affinity_worker_rejected_poll_items", executor,
            e -> e.isClosed() ? Double.NaN : e.iterationStats().rejectedPollItems())
        .description("KV events and statistics rows of an unexpected shape that the executor skipped")
        .register(registry);
    for (int r = 0; r < executor.numRanks(); r++) {
      int rank = r;
      gauge(registry, "affinity_worker_kv_used_blocks", "blocks referenced by live or held requests", executor, rank,
          KvCacheStats::usedNumBlocks);
      gauge(registry, "affinity_worker_kv_cached_blocks", "unreferenced, reusable blocks", executor, rank,
          KvCacheStats::cachedNumBlocks);
      gauge(registry, "affinity_worker_kv_free_blocks", "blocks holding nothing", executor, rank,
          KvCacheStats::freeNumBlocks);
      gauge(registry, "affinity_worker_active_requests", "requests admitted on the rank", executor, rank,
          KvCacheStats::activeRequests);
      gauge(registry, "affinity_worker_queued_requests", "requests waiting for the rank", executor, rank,
          KvCacheStats::queuedRequests);
      io.micrometer.core.instrument.FunctionCounter.builder("affinity_worker_context_tokens_computed", executor,
              e -> e.isClosed() ? 0 : Math.max(0, e.kvCacheStats(rank).contextTokensComputed()))
          .description("prompt tokens the rank has prefilled (not reused)").tag("rank", Integer.toString(rank))
          .register(registry);
    }
  }

  private static void gauge(PrometheusMeterRegistry registry, String name, String help, Executor executor,
      int rank, ToDoubleFunction<KvCacheStats> value) {
    Gauge.builder(name, executor, e -> e.isClosed() ? Double.NaN : value.applyAsDouble(e.kvCacheStats(rank)))
        .description(help).tag("rank", Integer.toString(rank)).register(registry);
  }

  /** The bound port. */
  public int port() {
    return frontend.port();
  }

  public FrontendServer frontend() {
    return frontend;
  }

  /** The in-process worker behind the HTTP server. */
  public NativeWorker worker() {
    return worker;
  }

  public Executor executor() {
    return worker.executor();
  }

  /** Blocks until the server is closed. */
  public void awaitClose() throws InterruptedException {
    frontend.awaitClose();
  }

  /**
   * Joins a {@code disagg_cluster} as a stock worker does ({@code --disagg_cluster_uri}): registers
   * {@code {ROLE}-{host}:{port}-...} with the host it listens on as given and its bound port, then keeps the key
   * alive (docs/workers.md). Call once, after start.
   */
  public synchronized void joinCluster(WorkerCluster cluster) {
    if (registration != null) {
      throw new IllegalStateException("already in a cluster: " + registration.key());
    }
    clusterStorage = cluster.isHttp()
        ? new HttpClusterStorageClient(cluster.uri(), auth)
        : new EtcdClusterStorage(cluster.etcdEndpoints());
    registration = new WorkerRegistration(clusterStorage, ClusterWorker.create(cluster.role(), host, port()),
        cluster.name(), cluster.heartbeatIntervalSec(), cluster.inactiveTimeoutSec(), cluster.retry());
    registration.start();
  }

  /**
   * Publishes this worker's KV events to the cluster's NATS JetStream stream ({@code --nats}) instead of buffering them
   * for a frontend's {@code /kv_cache_events} drain, and says so in {@code /server_info}. The publisher key,
   * {@code NAME@HOST:PORT} (the advertised host and the bound port), stays the same across restarts on one address, so a
   * restarted worker's event ids starting over clear what the frontends held of it. Call once, after start.
   *
   * @param clusterName {@code --disagg-cluster-name}: the frontends' {@code disagg_cluster.cluster_name} ("" for static
   *     urls)
   * @throws IOException when NATS cannot be reached or the stream cannot be created
   */
  public synchronized void publishKvEvents(SharedStateSettings nats, String clusterName) throws IOException {
    if (kvPublisher != null) {
      throw new IllegalStateException("already publishing on " + kvPublisher.subject());
    }
    Executor e = worker.executor();
    kvPublisher = WorkerKvPublisher.start(nats, clusterName, Optional.ofNullable(auth),
        worker.id() + "@" + advertisedHost(host) + ":" + port(), e.tokensPerBlock(), e::drainKvEvents);
    backend.publishKvEvents(kvPublisher);
  }

  /** The NATS publisher of this worker's KV events, or null when frontends drain them. */
  public WorkerKvPublisher kvPublisher() {
    return kvPublisher;
  }

  /** Contexts released by generation workers in other processes so far ({@code /release_context}). */
  long releasedContexts() {
    return backend.released();
  }

  /** The cluster registration, or null outside a cluster. */
  public WorkerRegistration registration() {
    return registration;
  }

  /**
   * Leaves without failing a routed request: deletes its cluster key first, then answers new requests 503
   * (a frontend retries them elsewhere) while those in flight finish and the contexts it holds for
   * generation legs are pulled or time out, for at least {@link #DRAIN_GRACE} (so that frontends see the
   * delete) and at most {@code drain}; then closes.
   */
  public void shutdown(Duration drain) {
    WorkerRegistration r = registration;
    if (r != null) {
      r.deregister();
    }
    backend.drain();
    long start = System.nanoTime();
    long deadline = start + drain.toNanos();
    long graceEnd = start + Math.min(DRAIN_GRACE.toNanos(), drain.toNanos());
    while (System.nanoTime() - deadline < 0
        && (frontend.inFlight() > 0 || holdsKv() || System.nanoTime() - graceEnd < 0)) {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    if (frontend.inFlight() > 0) {
      LOG.warn("worker {} closing with {} requests in flight after draining {}", worker.id(), frontend.inFlight(), drain);
    }
    close();
  }

  /** Whether requests or held contexts (a generation leg elsewhere has yet to pull) still use the executor's KV. */
  private boolean holdsKv() {
    Executor e = worker.executor();
    for (int r = 0; r < e.numRanks(); r++) {
      KvCacheStats s = e.kvCacheStats(r);
      if (s.activeRequests() > 0 || s.usedNumBlocks() > 0) {
        return true;
      }
    }
    return false;
  }

  /** Stops serving (connections in flight see a disconnect, which cancels their legs), then frees the executor. */
  @Override
  public void close() {
    WorkerRegistration r = registration;
    if (r != null) {
      r.deregister();
    }
    frontend.close();
    WorkerKvPublisher p = kvPublisher;
    if (p != null) {
      p.close(); // before the executor it takes events from
    }
    worker.close();
    releaser.close();
    codecs.close();
    registry.close();
    ClusterStorage s = clusterStorage;
    if (s != null) {
      s.close();
    }
  }
}
