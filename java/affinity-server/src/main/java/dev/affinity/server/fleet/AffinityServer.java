package dev.affinity.server.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.RequestIds;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.nativebridge.HandoffDomain;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import dev.affinity.server.http.FrontendBackend;
import dev.affinity.server.http.FrontendOptions;
import dev.affinity.server.http.FrontendServer;
import dev.affinity.timer.RealScheduler;
import dev.affinity.worker.Worker;
import io.micrometer.core.instrument.Gauge;
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
  public static final String VERSION = "0.1.0";

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
  /** Event loops of the frontend's client connections and of the remote workers' connections. */
  private EventLoopGroup io;
  private Router ctxRouter;
  private Router genRouter;
  private DisaggService service;
  private FrontendServer frontend;

  private AffinityServer(DisaggConfig config) {
    this.config = config;
  }

  /** Builds everything and starts listening; on failure, what was built is closed again. */
  public static AffinityServer start(DisaggConfig config, FrontendOptions options) throws IOException {
    AffinityServer s = new AffinityServer(config);
    try {
      s.build(options);
      return s;
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  private void build(FrontendOptions options) throws IOException {
    io = FrontendServer.ioGroup(options.ioThreads());
    Map<Fleet, List<NativeWorker>> embedded = new java.util.EnumMap<>(Fleet.class);
    for (Fleet fleet : Fleet.values()) {
      ServerSection section = section(fleet);
      if (section.isEmbedded()) {
        List<NativeWorker> created = EmbeddedWorkers.create(section, config.affinity().tokenizer(), 128, handoff);
        embedded.put(fleet, created);
        synchronized (workers) {
          workers.addAll(created);
        }
      }
    }
    PromptTokenizer tokenizer = embedded.values().stream().flatMap(List::stream).findFirst()
        .<PromptTokenizer>map(w -> w::promptTokens).orElse(PromptTokenizer.NONE);
    Orchestration orchestration = Orchestration.build(config, scheduler, System::nanoTime, new RequestIds(config.nodeId()));
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
        RemoteWorkers.connect(section(fleet), config, new dev.affinity.protocol.ProtocolCodec(), orchestration.router(fleet),
            io, background, w -> {
              synchronized (workers) {
                workers.add(w);
              }
              registerWorkerGauges(w);
            });
      }
    }
    for (Router r : List.of(ctxRouter, genRouter)) {
      String fleet = r == ctxRouter ? "context" : "generation";
      for (var reason : dev.affinity.routing.DecisionReason.values()) {
        Gauge.builder("affinity_router_decisions", r, x -> x.stats().decisions().getOrDefault(reason, 0L))
            .tag("fleet", fleet).tag("reason", reason.label()).register(registry);
      }
      Gauge.builder("affinity_router_expired_selections", r, x -> x.stats().expiredSelections()).tag("fleet", fleet)
          .register(registry);
      Gauge.builder("affinity_router_outstanding_selections", r, x -> x.stats().outstandingSelections()).tag("fleet", fleet)
          .register(registry);
    }
    frontend = FrontendServer.start(options, new Backend(tokenizer), registry, io);
  }

  /** Per-worker gauges: requests in flight, and for in-process workers the prefix-hit ratio. */
  private void registerWorkerGauges(Worker w) {
    if (w instanceof NativeWorker n) {
      Gauge.builder("affinity_worker_in_flight", n, x -> x.isAlive() ? x.executor().iterationStats().activeRequests() : 0)
          .tag("worker", w.id()).register(registry);
      Gauge.builder("affinity_worker_prefix_hit_ratio", n, x -> x.isAlive() ? x.executor().iterationStats().prefixHitRatio() : 0)
          .tag("worker", w.id()).register(registry);
    } else if (w instanceof dev.affinity.server.worker.HttpWorker h) {
      Gauge.builder("affinity_worker_in_flight", h, x -> x.inFlight()).tag("worker", w.id()).register(registry);
    }
  }

  private ServerSection section(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? config.context() : config.generation();
  }

  /** What the frontend serves. */
  private final class Backend implements FrontendBackend {
    private final PromptTokenizer tokenizer;

    Backend(PromptTokenizer tokenizer) {
      this.tokenizer = tokenizer;
    }

    @Override
    public CompletionHandler handler() {
      return service;
    }

    @Override
    public PromptTokenizer tokenizer() {
      return tokenizer;
    }

    @Override
    public List<String> models() {
      return List.of(config.affinity().model());
    }

    @Override
    public boolean ready() {
      return ctxRouter.workers().stream().anyMatch(Worker::isAlive) && genRouter.workers().stream().anyMatch(Worker::isAlive);
    }

    @Override
    public JsonNode clusterInfo() {
      ObjectNode root = JsonNodeFactory.instance.objectNode();
      root.put("is_ready", ready());
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
    if (frontend != null) {
      frontend.shutdown(drain);
    }
    background.shutdownNow();
    for (Worker w : workers()) {
      try {
        w.close();
      } catch (RuntimeException e) {
        log.warn("closing worker {} failed", w.id(), e);
      }
    }
    handoff.close();
    scheduler.close();
    if (io != null) {
      io.shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS).awaitUninterruptibly();
    }
    registry.close();
  }
}
