package dev.affinity.server.fleet;

import dev.affinity.admission.KeptTurns;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.admission.QueueLimit;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.conversation.ParentLinks;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import dev.affinity.server.cluster.ClusterMembership;
import dev.affinity.server.cluster.ClusterStorage;
import dev.affinity.server.cluster.ClusterStorageEndpoints;
import dev.affinity.server.cluster.InMemoryClusterStorage;
import dev.affinity.server.cluster.StorageAuth;
import dev.affinity.server.http.ExtraEndpoint;
import dev.affinity.server.http.FrontendBackend;
import dev.affinity.server.metrics.PerfMetricsLog;
import dev.affinity.server.metrics.RouterMeters;
import dev.affinity.server.shared.SharedKvEvents;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.worker.Worker;
import java.time.Clock;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What the frontend of an {@link AffinityServer} serves: its orchestration (through the session handler), its
 * admission limits and tokenizer, and what the informational endpoints report about its two fleets (readiness,
 * {@code /cluster_info}, models, perf metrics, the cluster storage's endpoints).
 */
final class FleetBackend implements FrontendBackend {
  /** The parts of the assembled server this backend reads; the routers' worker lists change as workers come and go. */
  record Parts(DisaggConfig config, CompletionHandler handler, ParentLinks parentLinks, PerfMetricsLog perfLog,
      List<RouterMeters> routerMeters, Router ctxRouter, Router genRouter, WorkerModels models,
      ClusterStorage storage, ClusterMembership membership, SharedKvEvents sharedKv, KeptTurns keptTurns) {}

  private final Parts parts;
  private final PromptTokenizer tokenizer;
  private final PromptLimit promptLimit;
  private final QueueLimit queueLimit;

  FleetBackend(Parts parts, PromptTokenizer tokenizer, PromptLimit promptLimit, QueueLimit queueLimit) {
    this.parts = parts;
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
  public Optional<KeptTurns> keptTurns() {
    return Optional.of(parts.keptTurns());
  }

  @Override
  public CompletionHandler handler() {
    return parts.handler();
  }

  @Override
  public Optional<ParentLinks> parentLinks() {
    return Optional.of(parts.parentLinks());
  }

  @Override
  public PromptTokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public JsonNode perfMetrics() {
    return parts.perfLog().drain();
  }

  @Override
  public void beforeScrape() {
    parts.routerMeters().forEach(RouterMeters::refresh);
  }

  /**
   * Embedded workers: counted with their tokenizer. Remote workers: the Anthropic body is forwarded to the live
   * context worker with the fewest requests in flight (as upstream, outside the router's accounting).
   */
  @Override
  public CompletionStage<Integer> countTokens(ChatCompletionRequest request, byte[] anthropicBody) {
    int[] ids = tokenizer.tokenize(request);
    if (ids != null) {
      return CompletableFuture.completedFuture(ids.length);
    }
    return parts.ctxRouter().workers().stream().filter(Worker::isAlive)
        .filter(w -> w instanceof HttpWorker).map(w -> (HttpWorker) w)
        .min(Comparator.comparingInt(HttpWorker::inFlight))
        .<CompletionStage<Integer>>map(w -> w.countTokens(anthropicBody))
        .orElseGet(() -> CompletableFuture.failedFuture(
            ProtocolException.of(503, "no context worker is ready to count tokens", null)));
  }

  @Override
  public List<String> models() {
    DisaggConfig config = parts.config();
    if (config.affinity().model().isPresent()) {
      return List.of(config.affinity().model().get());
    }
    return parts.models().of(parts.ctxRouter().workers().stream().filter(Worker::isAlive).map(Worker::id).toList());
  }

  @Override
  public boolean checksModel() {
    return parts.config().affinity().model().isPresent();
  }

  @Override
  public Map<String, ExtraEndpoint> extraEndpoints() {
    if (!(parts.storage() instanceof InMemoryClusterStorage mem)) {
      return Map.of();
    }
    StorageAuth.Verifier auth = InternalAuth.ofNullable(parts.config().internalRequestAuthKey().orElse(null))
        .map(k -> new StorageAuth.Verifier(k, Clock.systemUTC(), LegAuth.DEFAULT_WINDOW)).orElse(null);
    return new ClusterStorageEndpoints(mem, auth).endpoints();
  }

  /**
   * With a disagg_cluster: {@code minimal_instances} of each role are in their routers (upstream's
   * readiness). Otherwise a live worker in each fleet that has instances (none needed for a fleet of 0). With
   * {@code affinity.shared_state}, also the shared KV stream read up to where it stood at start (the index rebuilt).
   */
  @Override
  public boolean ready() {
    if (parts.sharedKv() != null && !parts.sharedKv().replayed()) {
      return false;  // the index is rebuilt from the shared stream first
    }
    DisaggConfig config = parts.config();
    if (parts.membership() != null) {
      // upstream's is_ready_with_router: the workers prepared in each router against minimal_instances
      DisaggConfig.DisaggClusterConfig c = config.disaggCluster().get();
      return parts.ctxRouter().workers().size() >= c.minimalContextInstances()
          && parts.genRouter().workers().size() >= c.minimalGenerationInstances();
    }
    return fleetReady(parts.ctxRouter(), config.context()) && fleetReady(parts.genRouter(), config.generation());
  }

  private static boolean fleetReady(Router r, ServerSection section) {
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
    Router ctxRouter = parts.ctxRouter();
    Router genRouter = parts.genRouter();
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    root.put("is_ready", ready());
    ObjectNode lists = root.putObject("server_lists");
    ctxRouter.workers().forEach(w -> lists.withArray("context").add(w.id()));
    genRouter.workers().forEach(w -> lists.withArray("generation").add(w.id()));
    lists.withArray("context");
    lists.withArray("generation");
    if (parts.membership() != null) {
      parts.membership().describe(root);
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
