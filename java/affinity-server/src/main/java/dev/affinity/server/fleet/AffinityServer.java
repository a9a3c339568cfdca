package dev.affinity.server.fleet;

import dev.affinity.admission.KeptTurns;
import dev.affinity.conversation.ConversationSettings;
import dev.affinity.server.metrics.KeptTurnMeters;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.config.StartupChecks;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.LocalParentLinks;
import dev.affinity.conversation.ParentLinks;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.RequestIds;
import dev.affinity.disagg.TextTokenizer;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.NativeRequirement;
import dev.affinity.nativebridge.NativeUnavailableException;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.server.codec.Codecs;
import dev.affinity.server.cluster.ClusterMembership;
import dev.affinity.server.cluster.ClusterStorage;
import dev.affinity.server.cluster.EtcdClusterStorage;
import dev.affinity.server.cluster.InMemoryClusterStorage;
import dev.affinity.server.cluster.PinSharingRouter;
import dev.affinity.server.cluster.SharedParentLinks;
import dev.affinity.server.cluster.SharedPins;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import dev.affinity.server.shared.SharedKvEvents;
import dev.affinity.server.tracing.Tracing;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.session.SessionRegistry;
import dev.affinity.timer.RealScheduler;
import dev.affinity.worker.Worker;
import dev.affinity.server.metrics.LegMetrics;
import dev.affinity.server.metrics.PerfMetricsLog;
import dev.affinity.server.metrics.RouterMeters;
import dev.affinity.tracing.RequestTracer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.EventLoopGroup;
import java.io.IOException;
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
  private final java.util.concurrent.ScheduledExecutorService background = daemonScheduler("affinity-workers");
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  /** The in-process context hand-off of the embedded workers (nothing native until one is created). */
  private final HandoffDomain handoff = new HandoffDomain();
  /** The model tokenizer the frontend routes with (affinity.tokenizer or a router's tokenizer_dir), or null. */
  private Codecs modelCodecs;
  /** Event loops of the frontend's client connections and of the remote workers' connections. */
  private EventLoopGroup io;
  /** Whether {@link #io} is this server's to shut down (not the caller's: {@link #start(DisaggConfig,
   * FrontendOptions, EventLoopGroup)}). */
  private boolean ownIo = true;
  private final dev.affinity.protocol.ProtocolCodec codec = new dev.affinity.protocol.ProtocolCodec();
  private final WorkerModels models = new WorkerModels();
  /** Meters registered per worker, removed when a cluster worker leaves. */
  private final List<RouterMeters> routerMeters = new ArrayList<>();
  private PerfMetricsLog perfLog;
  private final WorkerGauges workerGauges = new WorkerGauges(registry);
  private Router ctxRouter;
  private Router genRouter;
  private DisaggService service;
  private FrontendServer frontend;
  /** With a disagg_cluster: the storage (the frontend's own, or etcd) and the membership it feeds. */
  private ClusterStorage storage;
  private ClusterMembership membership;
  private final List<SharedPins> sharedPins = new ArrayList<>();
  /** Etcd writes of parent links and pin releases, and idle-session expiry: off the event loops. */
  private final java.util.concurrent.ScheduledExecutorService sessionWork = daemonScheduler("affinity-sessions");
  private ParentLinks parentLinks;
  private SharedParentLinks sharedLinks;
  private FrontendSessions sessions;
  /** affinity.shared_state with remote workers: KV events and loads shared through NATS; null without. */
  private SharedState shared;
  private SharedKvEvents sharedKv;

  /** OpenTelemetry tracing (otlp_config): closed last, after the requests it traced. */
  private final Tracing tracing;

  private AffinityServer(DisaggConfig config, Tracing tracing) {
    this.config = config;
    this.tracing = tracing;
  }

  /**
   * Builds everything and starts listening; on failure, what was built is closed again. A config that
   * {@link StartupChecks} refuses is a {@link ConfigException} before anything is built. Requests are traced as
   * {@code otlp_config} and the {@code OTEL_EXPORTER_OTLP_*} variables say (docs/tracing.md).
   */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options) throws IOException {
    return start(config, options, Tracing.fromConfigOrOff(config));
  }

  /**
   * As {@link #start(DisaggConfig, FrontendOptions)} on the caller's event loops ({@link FrontendServer#ioGroup} of
   * {@code options.ioThreads()} threads), which the server does not shut down. The warm-up's copies of the request
   * path and the real frontend run on the same loops ({@link WarmUp#run(DisaggConfig, EventLoopGroup)}), so that the
   * loops' own code, which the JIT compiles on their threads' stacks, is compiled once and stays compiled.
   */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options, EventLoopGroup io)
      throws IOException {
    return start(config, options, Tracing.fromConfigOrOff(config), java.util.Objects.requireNonNull(io, "io"));
  }

  /** As {@link #start(DisaggConfig, FrontendOptions)} with this tracing, which the server now owns and closes. */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options, Tracing tracing) throws IOException {
    return start(config, options, tracing, null);
  }

  private static AffinityServer start(DisaggConfig config, FrontendOptions options, Tracing tracing,
      EventLoopGroup sharedIo) throws IOException {
    java.util.Objects.requireNonNull(tracing, "tracing");
    List<ConfigProblem> refused = StartupChecks.of(config);
    if (!refused.isEmpty()) {
      tracing.close();  // the server would have owned it
      throw new ConfigException(refused);
    }
    AffinityServer s = new AffinityServer(config, tracing);
    try {
      requireNative(config, NativeRequirement.system());
      if (sharedIo != null) {
        s.io = sharedIo;
        s.ownIo = false;
      }
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

  private void build(FrontendOptions options) throws IOException {
    if (io == null) {
      io = FrontendServer.ioGroup(options.ioThreads());
    }
    modelCodecs = Codecs.forRouting(config);  // null: ConfigWarnings says so when a KV-event router needs one
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
    FrontendTokenizer.Built tokenizing = FrontendTokenizer.create(modelCodecs,
        config.affinity().promptPrefixBudget(Runtime.getRuntime().maxMemory()), workers, embedded.values(), registry);
    PromptTokenizer tokenizer = tokenizing.tokenizer();
    if (config.disaggCluster().isPresent()) {
      DisaggConfig.DisaggClusterConfig cluster = config.disaggCluster().get();
      storage = cluster.isHttp() ? new InMemoryClusterStorage() : new EtcdClusterStorage(cluster.etcdEndpoints());
      if (config.servesOpenClusterStorage()) {  // only with the opt-in: StartupChecks refuses it otherwise
        log.warn("the HTTP cluster storage ({}) takes no credential (affinity.allow_unauthenticated_cluster_storage: "
            + "true, no internal_request_auth_key): any process on this host can register a worker (which then "
            + "receives prompts) or delete one; set internal_request_auth_key, or use an etcd cluster_uri",
            cluster.clusterUri());
      }
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
    shared = SharedState.startIfConfigured(config, registry, ctxRouter, genRouter);
    sharedKv = shared == null ? null : shared.kv();
    for (Fleet fleet : Fleet.values()) {
      if (embedded.containsKey(fleet)) {
        for (Worker w : embedded.get(fleet)) {
          orchestration.attach(w, fleet);
          workerGauges.register(w);
        }
      } else {
        RemoteWorkers.connect(section(fleet), config, codec, orchestration.router(fleet), io, background, sharedKv,
            w -> {
          models.fetch(w.id(), ((HttpWorker) w).settings().baseUrl());
          synchronized (workers) {
            workers.add(w);
          }
          workerGauges.register(w);
        });
      }
    }
    if (config.disaggCluster().isPresent()) {
      ClusterFleets fleets = new ClusterFleets(config, codec, ctxRouter, genRouter, io, background, models, workerGauges,
          w -> {
            synchronized (workers) {
              workers.add(w);
            }
          }, w -> {
            synchronized (workers) {
              workers.remove(w);
            }
          }, sharedKv);
      membership = new ClusterMembership(config.disaggCluster().get(), storage, fleets, background,
          RemoteWorkers.RETRY);
    }
    for (Router r : List.of(ctxRouter, genRouter)) {
      routerMeters.add(new RouterMeters(registry, r, r == ctxRouter ? "context" : "generation"));
    }
    // each conversation's last turn as read and written, so that the next reads and writes what it adds
    KeptTurns keptTurns = new KeptTurns(ConversationSettings.from(config),
        config.affinity().keptTurnBudget(Runtime.getRuntime().maxMemory()));
    KeptTurnMeters.register(registry, keptTurns);
    sessions = FrontendSessions.start(config, service, List.of(ctxRouter, genRouter), parentLinks, this::workers,
        id -> {
          tokenizing.sessionEnded(id);
          keptTurns.forget(id);
        }, sessionWork, registry);
    FleetBackend.Parts parts = new FleetBackend.Parts(config, sessions.handler(), parentLinks, perfLog, routerMeters, ctxRouter,
        genRouter, models, storage, membership, sharedKv, keptTurns);
    frontend = FrontendServer.start(options, new FleetBackend(parts, tokenizer, PromptLimits.of(config, embedded),
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

  private static java.util.concurrent.ScheduledExecutorService daemonScheduler(String name) {
    return java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  private ServerSection section(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? config.context() : config.generation();
  }

  public int port() {
    return frontend.port();
  }

  public FrontendServer frontend() {
    return frontend;
  }

  /** The live sessions (tests, metrics). */
  public SessionRegistry sessions() {
    return sessions == null ? null : sessions.registry();
  }

  /** The sub-agent parent links this frontend resolves by (tests). */
  public ParentLinks parentLinks() {
    return parentLinks;
  }

  public DisaggService service() {
    return service;
  }

  /** The shared KV events ({@code affinity.shared_state} with remote workers), or null. */
  public SharedKvEvents sharedKvEvents() {
    return sharedKv;
  }

  /** The router of a fleet (tests, metrics). */
  public Router router(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? ctxRouter : genRouter;
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
    if (shared != null) {
      shared.close();
    }
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
    if (io != null && ownIo) {
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
