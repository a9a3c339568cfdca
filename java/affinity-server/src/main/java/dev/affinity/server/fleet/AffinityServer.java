package dev.affinity.server.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.CodecPromptTokenizer;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.QueueLimit;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.config.SubagentScope;
import dev.affinity.config.TokenizerSource;
import dev.affinity.conversation.LocalParentLinks;
import dev.affinity.conversation.ParentLinks;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.RequestIds;
import dev.affinity.disagg.TextTokenizer;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeRequirement;
import dev.affinity.nativebridge.NativeUnavailableException;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.PinKeeping;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import dev.affinity.server.cluster.ClockSync;
import dev.affinity.server.cluster.ClusterMembership;
import dev.affinity.server.cluster.ClusterStorage;
import dev.affinity.server.cluster.ClusterStorageEndpoints;
import dev.affinity.server.cluster.ClusterWorker;
import dev.affinity.server.cluster.EtcdClusterStorage;
import dev.affinity.server.cluster.InMemoryClusterStorage;
import dev.affinity.server.cluster.PinSharingRouter;
import dev.affinity.server.cluster.ServerRole;
import dev.affinity.server.cluster.SharedParentLinks;
import dev.affinity.server.cluster.SharedPins;
import dev.affinity.server.cluster.StorageAuth;
import dev.affinity.server.http.ExtraEndpoint;
import dev.affinity.server.http.FrontendBackend;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import dev.affinity.server.tracing.Tracing;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.session.PinAndLinkRelease;
import dev.affinity.session.SessionLifecycleHandler;
import dev.affinity.session.SessionRegistry;
import dev.affinity.timer.RealScheduler;
import dev.affinity.tokenizer.ModelPromptTokenizer;
import dev.affinity.tokenizer.ModelTokenizer;
import dev.affinity.tokenizer.PromptRenderer;
import dev.affinity.worker.Worker;
import dev.affinity.server.metrics.LegMetrics;
import dev.affinity.server.metrics.PerfMetricsLog;
import dev.affinity.server.metrics.RouterMeters;
import dev.affinity.server.metrics.TimedPromptTokenizer;
import dev.affinity.tracing.RequestTracer;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The main job: a frontend over two fleets of workers, assembled from a configuration — workers
 * (in-process or remote), one router per fleet fed by the workers' KV events, the disaggregated
 * orchestration, and the Netty frontend. Client connections and the connections to remote workers share
 * one set of event loops, so a request and its legs run on one thread.
 */
public final class AffinityServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AffinityServer.class);
  public static final String VERSION = dev.affinity.server.AffinityVersion.current();

  private final DisaggConfig config;
  private final List<Worker> workers = new ArrayList<>();
  private final RealScheduler scheduler = new RealScheduler();
  private final java.util.concurrent.ScheduledExecutorService background =
      java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "affinity-workers");
        t.setDaemon(true);
        return t;
      });
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  /** The in-process context hand-off of the embedded workers (nothing native until one is created). */
  private final HandoffDomain handoff = new HandoffDomain();
  /** The model tokenizer the frontend routes with (affinity.tokenizer or a router's tokenizer_dir), or null. */
  private Codecs modelCodecs;
  private PromptRenderer renderer;
  /** Event loops of the frontend's client connections and of the remote workers' connections. */
  private EventLoopGroup io;
  private final dev.affinity.protocol.ProtocolCodec codec = new dev.affinity.protocol.ProtocolCodec();
  private final WorkerModels models = new WorkerModels();
  /** Meters registered per worker, removed when a cluster worker leaves. */
  private final List<RouterMeters> routerMeters = new ArrayList<>();
  private PerfMetricsLog perfLog;
  private final Map<Worker, List<io.micrometer.core.instrument.Meter>> workerMeters = new java.util.concurrent.ConcurrentHashMap<>();
  private Router ctxRouter;
  private Router genRouter;
  private DisaggService service;
  private FrontendServer frontend;
  /** With a disagg_cluster: the storage (the frontend's own, or etcd) and the membership it feeds. */
  private ClusterStorage storage;
  private ClusterMembership membership;
  private final List<SharedPins> sharedPins = new ArrayList<>();
  /** Etcd writes of parent links and pin releases, and idle-session expiry: off the event loops. */
  private final java.util.concurrent.ScheduledExecutorService sessionWork =
      java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "affinity-sessions");
        t.setDaemon(true);
        return t;
      });
  private ParentLinks parentLinks;
  private SharedParentLinks sharedLinks;
  private SessionRegistry sessions;
  private CompletionHandler handler;

  /** OpenTelemetry tracing (otlp_config): closed last, after the requests it traced. */
  private final Tracing tracing;

  private AffinityServer(DisaggConfig config, Tracing tracing) {
    this.config = config;
    this.tracing = tracing;
  }

  /**
   * Builds everything and starts listening; on failure, what was built is closed again. Requests are traced as
   * {@code otlp_config} and the {@code OTEL_EXPORTER_OTLP_*} variables say (docs/tracing.md).
   */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options) throws IOException {
    return start(config, options, tracingOf(config));
  }

  /** As {@link #start(DisaggConfig, FrontendOptions)} with this tracing, which the server now owns and closes. */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options, Tracing tracing) throws IOException {
    AffinityServer s = new AffinityServer(config, java.util.Objects.requireNonNull(tracing, "tracing"));
    try {
      requireNative(config, NativeRequirement.system());
      s.build(options);
      return s;
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /**
   * Throws {@link NativeUnavailableException} (one line naming the fleet and what is missing) when a fleet of
   * {@code config} has embedded workers and {@code nativeLibrary} says the library is absent. A config whose workers
   * are all URLs never asks: the router-only build serves it.
   */
  public static void requireNative(DisaggConfig config, NativeRequirement nativeLibrary) {
    for (ServerSection section : List.of(config.context(), config.generation())) {
      if (section.isEmbedded()) {
        nativeLibrary.require(section.name() + " (embedded workers, backend " + section.embedded().get().backend() + ")");
      }
    }
  }

  /** As upstream, a tracing set-up that fails is logged and the server runs without exporting. */
  private static Tracing tracingOf(DisaggConfig config) {
    try {
      return Tracing.fromConfig(config, System.getenv());
    } catch (IllegalArgumentException e) {
      log.error("tracing is off: {}", e.getMessage());
      return Tracing.off();
    }
  }

  private void build(FrontendOptions options) throws IOException {
    io = FrontendServer.ioGroup(options.ioThreads());
    java.util.Optional<TokenizerSource> source = TokenizerSource.of(config);
    if (source.isPresent()) {
      try {
        modelCodecs = Codecs.of(ModelTokenizer.load(source.get().directory()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(source.get().origin() + ": " + e.getMessage(), e);
      }
      renderer = modelCodecs.renderer();
      log.info("routing on the model's token ids: tokenizer {} (from {})", source.get().directory(), source.get().origin());
    }  // else ConfigWarnings says so at start-up when a KV-event router stands before remote workers
    Map<Fleet, List<NativeWorker>> embedded = new java.util.EnumMap<>(Fleet.class);
    for (Fleet fleet : Fleet.values()) {
      ServerSection section = section(fleet);
      if (section.isEmbedded()) {
        List<NativeWorker> created = modelCodecs != null
            ? EmbeddedWorkers.create(section, modelCodecs.codec(), 128, handoff)
            : EmbeddedWorkers.create(section, config.affinity().tokenizer(), 128, handoff);
        embedded.put(fleet, created);
        created.forEach(w -> models.put(w.id(), List.of(WorkerModels.modelOf(section.embedded().get()))));
        synchronized (workers) {
          workers.addAll(created);
        }
      }
    }
    PromptTokenizer tokenizer = renderer != null ? new ModelPromptTokenizer(renderer, this::workersRenderAlike)
        : embedded.values().stream().flatMap(List::stream).findFirst()
            .<PromptTokenizer>map(w -> new CodecPromptTokenizer(w::promptTokens, w.codec()))
            .orElse(PromptTokenizer.CLIENT_IDS);
    if (tokenizer != PromptTokenizer.CLIENT_IDS) {
      tokenizer = new TimedPromptTokenizer(tokenizer, registry);
    }
    if (config.disaggCluster().isPresent()) {
      DisaggConfig.DisaggClusterConfig cluster = config.disaggCluster().get();
      storage = cluster.isHttp() ? new InMemoryClusterStorage() : new EtcdClusterStorage(cluster.etcdEndpoints());
    }
    parentLinks = createParentLinks();
    TextTokenizer textTokenizer = modelCodecs != null ? modelCodecs.codec()::encode
        : embedded.values().stream().flatMap(List::stream).findFirst().<TextTokenizer>map(w -> w::encodeText).orElse(null);
    perfLog = new PerfMetricsLog(config.perfMetricsMaxRequests(), System::nanoTime);
    Orchestration orchestration = Orchestration.build(config, new LoopScheduler(scheduler), System::nanoTime, new RequestIds(config.nodeId()),
        this::sharePins, RequestTracer.both(RequestTracer.both(tracing.tracer(), new LegMetrics(registry)), perfLog),
        textTokenizer);
    ctxRouter = orchestration.contextRouter();
    genRouter = orchestration.generationRouter();
    service = orchestration.service();
    for (Fleet fleet : Fleet.values()) {
      if (embedded.containsKey(fleet)) {
        for (Worker w : embedded.get(fleet)) {
          orchestration.attach(w, fleet);
          registerWorkerGauges(w);
        }
      } else {
        RemoteWorkers.connect(section(fleet), config, codec, orchestration.router(fleet), io, background, w -> {
          models.fetch(w.id(), ((HttpWorker) w).settings().baseUrl());
          synchronized (workers) {
            workers.add(w);
          }
          registerWorkerGauges(w);
        });
      }
    }
    if (config.disaggCluster().isPresent()) {
      membership = new ClusterMembership(config.disaggCluster().get(), storage, new ClusterFleets(), background,
          RemoteWorkers.RETRY);
    }
    for (Router r : List.of(ctxRouter, genRouter)) {
      routerMeters.add(new RouterMeters(registry, r, r == ctxRouter ? "context" : "generation"));
    }
    startSessions();
    frontend = FrontendServer.start(options, new Backend(tokenizer, PromptLimits.of(config, embedded),
        PromptLimits.queueLimit(config, embedded)), registry, io);
    if (membership != null) {
      membership.start(); // after the frontend listens: the HTTP storage is served there
    }
  }

  /**
   * The sub-agent parent links: shared through etcd with an etcd cluster (as pins are), else this frontend's own;
   * either way bounded and forgotten {@code affinity.session_idle_ttl_seconds} after they were last seen.
   */
  private ParentLinks createParentLinks() {
    long ttl = Math.max(1, (long) Math.ceil(config.affinity().sessionIdleTtlSeconds()));
    if (storage instanceof EtcdClusterStorage etcd) {
      sharedLinks = new SharedParentLinks(etcd, config.disaggCluster().get().clusterName(), LocalParentLinks.DEFAULT_MAX_LINKS,
          ttl, System::nanoTime, sessionWork).start();
      log.info("sub-agent parent links are shared through etcd under {}", sharedLinks.prefix());
      return sharedLinks;
    }
    return new LocalParentLinks(LocalParentLinks.DEFAULT_MAX_LINKS, ttl * 1_000_000_000L, System::nanoTime);
  }

  /**
   * An ended or expired session's KV on the workers that keep some per conversation (embedded CPU executors with
   * {@code block_reuse.policy: per_conversation}: {@link Worker#endSession}); remote workers keep theirs until
   * their own eviction.
   */
  private void endOnWorkers(String sessionId) {
    List<Worker> snapshot;
    synchronized (workers) {
      snapshot = List.copyOf(workers);
    }
    for (Worker w : snapshot) {
      try {
        w.endSession(sessionId);
      } catch (RuntimeException e) {
        log.debug("worker {}: ending session {} failed: {}", w.id(), sessionId, e.toString());
      }
    }
  }

  /**
   * Session lifecycle: the sessions of the requests served, ended by the session-final header or expired when
   * idle, releasing the pins of the pin-keeping routers and the parent links; their metrics.
   */
  private void startSessions() {
    List<PinKeeping> keeping = new ArrayList<>();
    for (Router r : List.of(ctxRouter, genRouter)) {
      if (r instanceof PinKeeping p) {
        keeping.add(p);
      }
    }
    long ttlNanos = (long) (config.affinity().sessionIdleTtlSeconds() * 1e9);
    sessions = new SessionRegistry(ttlNanos, SessionRegistry.DEFAULT_MAX_SESSIONS, System::nanoTime,
        new PinAndLinkRelease(keeping, parentLinks).andThen(this::endOnWorkers));
    handler = new SessionLifecycleHandler(service, sessions, config.affinity().sessionFinalHeader());
    long periodMillis = Math.max(1000, Math.min(60_000, ttlNanos / 4_000_000));
    sessionWork.scheduleWithFixedDelay(() -> {
      int n = sessions.expireIdle();
      if (n > 0) {
        log.debug("{} idle sessions expired", n);
      }
    }, periodMillis, periodMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
    Gauge.builder("affinity_sessions_live", sessions, SessionRegistry::live)
        .description("sessions (conversation ids) seen and neither ended nor expired").register(registry);
    FunctionCounter.builder("affinity_session_expirations", sessions, SessionRegistry::expirations)
        .description("sessions expired after affinity.session_idle_ttl_seconds without a request").register(registry);
    FunctionCounter.builder("affinity_sessions_ended", sessions, SessionRegistry::ended)
        .description("sessions their clients ended (affinity.session_final_header: true)").register(registry);
    for (Router r : List.of(ctxRouter, genRouter)) {
      if (r instanceof PinKeeping p) {
        Gauge.builder("affinity_session_pins", p, PinKeeping::pinCount).description("routing keys pinned")
            .tag("fleet", r == ctxRouter ? "context" : "generation").register(registry);
      }
    }
    Gauge.builder("affinity_parent_links", parentLinks, ParentLinks::size)
        .description("sub-agent parent links known").register(registry);
  }

  /**
   * With an etcd cluster, the pins of the context router (and of the generation router with scope both) are
   * shared with the other frontends of the cluster, when the router keeps pins (conversation, affinity).
   */
  private Router sharePins(Fleet fleet, Router router) {
    if (!(storage instanceof EtcdClusterStorage etcd) || !PinSharingRouter.supports(router)
        || (fleet == Fleet.GENERATION && config.subagentScope() != SubagentScope.BOTH)) {
      return router;
    }
    SharedPins pins = new SharedPins(etcd, config.disaggCluster().get().clusterName(), fleet).start();
    sharedPins.add(pins);
    log.info("{} pins are shared through etcd under {}", fleet.name().toLowerCase(), pins.prefix());
    return new PinSharingRouter(router, pins, address -> membership != null && membership.isRegistered(address),
        sessionWork);
  }

  /** Cluster workers join and leave the fleets' routers as their keys come and go. */
  private final class ClusterFleets implements ClusterMembership.Fleets {
    private final ClockSync clock = new ClockSync(java.time.Duration.ofSeconds(5));

    @Override
    public Object join(ClusterWorker w) throws Exception {
      HttpWorkerSettings settings = RemoteWorkers.settings(w.address(), config);
      clock.align(settings.baseUrl().toString());
      RemoteWorkers.Joined joined = RemoteWorkers.join(settings, codec, routerOf(w.role()), io, background);
      HttpWorker hw = joined.worker();
      if (w.role() == ServerRole.CONTEXT) {
        models.fetch(hw.id(), settings.baseUrl());
      }
      synchronized (workers) {
        workers.add(hw);
      }
      registerWorkerGauges(hw);
      return joined;
    }

    @Override
    public void leave(ClusterWorker w, Object joined) {
      RemoteWorkers.Joined j = (RemoteWorkers.Joined) joined;
      HttpWorker hw = j.worker();
      models.remove(hw.id());
      List<io.micrometer.core.instrument.Meter> meters = workerMeters.remove(hw);
      if (meters != null) {
        meters.forEach(registry::remove);
      }
      RemoteWorkers.retire(j, routerOf(w.role()), background,
          java.time.Duration.ofMillis((long) (config.affinity().requestTimeoutSeconds() * 1000)), () -> {
            synchronized (workers) {
              workers.remove(hw);
            }
          });
    }
  }

  private Router routerOf(ServerRole role) {
    return role == ServerRole.CONTEXT ? ctxRouter : genRouter;
  }

  /** Per-worker gauges: requests in flight, and for in-process workers the prefix-hit ratio. */
  private void registerWorkerGauges(Worker w) {
    List<io.micrometer.core.instrument.Meter> meters = new ArrayList<>();
    if (w instanceof NativeWorker n) {
      meters.add(Gauge.builder("affinity_worker_in_flight", n, x -> x.isAlive() ? x.executor().iterationStats().activeRequests() : 0)
          .description("Requests the worker has admitted and not finished").tag("worker", w.id()).register(registry));
      meters.add(Gauge.builder("affinity_worker_prefix_hit_ratio", n, x -> x.isAlive() ? x.executor().iterationStats().prefixHitRatio() : 0)
          .description("Share of the prompt tokens the in-process worker served from its KV cache")
          .tag("worker", w.id()).register(registry));
      meters.add(FunctionCounter.builder("affinity_worker_rejected_poll_items", n,
              x -> x.isAlive() ? x.executor().iterationStats().rejectedPollItems() : 0)
          .description("KV events and statistics rows of an unexpected shape that the executor skipped")
          .tag("worker", w.id()).register(registry));
    } else if (w instanceof HttpWorker h) {
      meters.add(Gauge.builder("affinity_worker_in_flight", h, x -> x.inFlight())
          .description("Requests the frontend has in flight at the remote worker").tag("worker", w.id()).register(registry));
    }
    workerMeters.put(w, meters);
  }

  /**
   * Whether every worker renders chats as the frontend's model tokenizer does, so a chat's ids may replace its
   * messages on the legs: embedded workers share the tokenizer; a remote worker must report the same
   * {@code render_fingerprint} digest in its {@code /server_info} (Affinity workers on the same tokenizer do; stock
   * workers use upstream's recipe, so chats reach them as text).
   */
  private boolean workersRenderAlike() {
    String mine = renderer.fingerprint();
    synchronized (workers) {
      if (workers.isEmpty()) {
        return false;
      }
      for (Worker w : workers) {
        if (w instanceof HttpWorker h) {
          com.fasterxml.jackson.databind.JsonNode info = h.serverInfo();
          if (info == null || !mine.equals(info.path("render_fingerprint").path("digest").asText(null))) {
            return false;
          }
        } else if (!(w instanceof NativeWorker n) || n.codec() != modelCodecs.codec()) {
          return false;
        }
      }
    }
    return true;
  }

  private ServerSection section(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? config.context() : config.generation();
  }

  /** What the frontend serves. */
  private final class Backend implements FrontendBackend {
    private final PromptTokenizer tokenizer;
    private final PromptLimit promptLimit;
    private final QueueLimit queueLimit;

    Backend(PromptTokenizer tokenizer, PromptLimit promptLimit, QueueLimit queueLimit) {
      this.tokenizer = tokenizer;
      this.promptLimit = promptLimit;
      this.queueLimit = queueLimit;
    }

    @Override
    public QueueLimit queueLimit() {
      return queueLimit;
    }

    @Override
    public PromptLimit promptLimit() {
      return promptLimit;
    }

    @Override
    public CompletionHandler handler() {
      return handler;
    }

    @Override
    public java.util.Optional<ParentLinks> parentLinks() {
      return java.util.Optional.of(parentLinks);
    }

    @Override
    public PromptTokenizer tokenizer() {
      return tokenizer;
    }

    @Override
    public JsonNode perfMetrics() {
      return perfLog.drain();
    }

    @Override
    public void beforeScrape() {
      routerMeters.forEach(RouterMeters::refresh);
    }

    /**
     * Embedded workers: counted with their tokenizer. Remote workers: the Anthropic body is forwarded to the live
     * context worker with the fewest requests in flight (as upstream, outside the router's accounting).
     */
    @Override
    public java.util.concurrent.CompletionStage<Integer> countTokens(dev.affinity.protocol.ChatCompletionRequest request,
        byte[] anthropicBody) {
      int[] ids = tokenizer.tokenize(request);
      if (ids != null) {
        return java.util.concurrent.CompletableFuture.completedFuture(ids.length);
      }
      return ctxRouter.workers().stream().filter(Worker::isAlive)
          .filter(w -> w instanceof dev.affinity.server.worker.HttpWorker)
          .map(w -> (dev.affinity.server.worker.HttpWorker) w)
          .min(java.util.Comparator.comparingInt(dev.affinity.server.worker.HttpWorker::inFlight))
          .<java.util.concurrent.CompletionStage<Integer>>map(w -> w.countTokens(anthropicBody))
          .orElseGet(() -> java.util.concurrent.CompletableFuture.failedFuture(dev.affinity.protocol.ProtocolException
              .of(503, "no context worker is ready to count tokens", null)));
    }

    @Override
    public List<String> models() {
      if (config.affinity().model().isPresent()) {
        return List.of(config.affinity().model().get());
      }
      return models.of(ctxRouter.workers().stream().filter(Worker::isAlive).map(Worker::id).toList());
    }

    @Override
    public boolean checksModel() {
      return config.affinity().model().isPresent();
    }

    @Override
    public Map<String, ExtraEndpoint> extraEndpoints() {
      if (!(storage instanceof InMemoryClusterStorage mem)) {
        return Map.of();
      }
      StorageAuth.Verifier auth = InternalAuth.ofNullable(config.internalRequestAuthKey().orElse(null))
          .map(k -> new StorageAuth.Verifier(k, Clock.systemUTC(), LegAuth.DEFAULT_WINDOW)).orElse(null);
      return new ClusterStorageEndpoints(mem, auth).endpoints();
    }

    /**
     * With a disagg_cluster: {@code minimal_instances} of each role are in their routers (upstream's
     * readiness). Otherwise a live worker in each fleet that has instances (none needed for a fleet of 0).
     */
    @Override
    public boolean ready() {
      if (membership != null) {
        // upstream's is_ready_with_router: the workers prepared in each router against minimal_instances
        DisaggConfig.DisaggClusterConfig c = config.disaggCluster().get();
        return ctxRouter.workers().size() >= c.minimalContextInstances()
            && genRouter.workers().size() >= c.minimalGenerationInstances();
      }
      return fleetReady(ctxRouter, config.context()) && fleetReady(genRouter, config.generation());
    }

    private boolean fleetReady(Router r, ServerSection section) {
      if (section.numInstances() == 0) {
        return true;
      }
      for (Worker w : r.workers()) { // asked once per request: a loop, not a stream
        if (w.isAlive()) {
          return true;
        }
      }
      return false;
    }

    /**
     * Upstream's shape ({@code is_ready}, {@code server_lists}, and with a cluster {@code current_workers} and
     * {@code minimal_instances}) plus each fleet's router and workers.
     */
    @Override
    public JsonNode clusterInfo() {
      ObjectNode root = JsonNodeFactory.instance.objectNode();
      root.put("is_ready", ready());
      ObjectNode lists = root.putObject("server_lists");
      ctxRouter.workers().forEach(w -> lists.withArray("context").add(w.id()));
      genRouter.workers().forEach(w -> lists.withArray("generation").add(w.id()));
      lists.withArray("context");
      lists.withArray("generation");
      if (membership != null) {
        membership.describe(root);
      }
      for (Map.Entry<String, Router> e : Map.of("context_servers", ctxRouter, "generation_servers", genRouter).entrySet()) {
        ObjectNode fleet = root.putObject(e.getKey());
        RouterStats st = e.getValue().stats();
        fleet.put("router", st.type());
        var list = fleet.putArray("workers");
        for (Worker w : e.getValue().workers()) {
          list.addObject().put("id", w.id()).put("alive", w.isAlive()).put("ranks", w.info().numRanks())
              .put("tokens_per_block", w.info().tokensPerBlock());
        }
      }
      return root;
    }
  }

  public int port() {
    return frontend.port();
  }

  public FrontendServer frontend() {
    return frontend;
  }

  /** The live sessions (tests, metrics). */
  public SessionRegistry sessions() {
    return sessions;
  }

  /** The sub-agent parent links this frontend resolves by (tests). */
  public ParentLinks parentLinks() {
    return parentLinks;
  }

  public DisaggService service() {
    return service;
  }

  public List<Worker> workers() {
    synchronized (workers) {
      return List.copyOf(workers);
    }
  }

  /** Blocks until the frontend is closed. */
  public void awaitClose() throws InterruptedException {
    frontend.awaitClose();
  }

  @Override
  public void close() {
    shutdown(java.time.Duration.ZERO);
  }

  /** Stops taking requests, drains those in flight for up to {@code drain}, then closes everything. */
  public void shutdown(java.time.Duration drain) {
    if (membership != null) {
      membership.close();
    }
    sharedPins.forEach(SharedPins::close);
    if (sharedLinks != null) {
      sharedLinks.close();
    }
    if (frontend != null) {
      frontend.shutdown(drain);
    }
    background.shutdownNow();
    sessionWork.shutdownNow();
    if (storage != null) {
      storage.close();
    }
    for (Worker w : workers()) {
      try {
        w.close();
      } catch (RuntimeException e) {
        log.warn("closing worker {} failed", w.id(), e);
      }
    }
    handoff.close();
    if (modelCodecs != null) {
      modelCodecs.close();
    }
    scheduler.close();
    if (io != null) {
      io.shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS).awaitUninterruptibly();
    }
    registry.close();
    tracing.close();
  }

  /** The server's tracing (tests flush it). */
  public Tracing tracing() {
    return tracing;
  }
}
