package dev.affinity.routing;

import dev.affinity.executor.KvEvent;
import dev.affinity.worker.Worker;
import java.util.List;
import java.util.Set;

/**
 * A fleet's routing policy (YAML {@code router.type}). Thread-safe: many threads select and release
 * at once. Built-in types: round_robin, load_balancing, kv_cache_aware, conversation, affinity, and the
 * peers' policies as baselines (dynamo_kv, sglang_cache_aware, llmd_scorer); more plug in through
 * {@link RouterProvider}.
 */
public interface Router {
  String type();

  /**
   * Picks a worker (and rank) for the request, skipping dead workers and {@code excludedWorkerIds}.
   *
   * @throws NoWorkerAvailableException when none is left
   */
  Selection select(RoutingRequest request, Set<String> excludedWorkerIds);

  void addWorker(Worker worker);

  /** Removes a worker: its affinity keys re-pin on their next request. */
  void removeWorker(String workerId);

  List<Worker> workers();

  /** KV-cache events of one worker (from its event stream or poller). */
  void onKvEvents(String workerId, List<KvEvent> events);

  /**
   * Whether this router reads KV-cache events (its prefix index). Routers that never look prefixes
   * up (round robin, load balancing, conversation) say no and ignore them, so that a caller may also
   * spare the workers producing them.
   */
  default boolean usesKvEvents() {
    return true;
  }

  RouterStats stats();

  /**
   * The KV-cache capacity of a worker's rank (-1: the worker, its ranks not visible) in tokens, as far as this router
   * knows it from the worker's KV events (its "created" event, else the most it held when it evicted); 0 when unknown.
   */
  default long cacheCapacityTokens(String workerId, int rank) {
    return 0;
  }

  /**
   * The router's in-flight work per candidate of every worker it knows, for metrics; by default none (a router that
   * keeps no load). A snapshot, read under the router's own lock.
   */
  default List<CandidateLoad> loads() {
    return List.of();
  }

  /**
   * This frontend's own in-flight work per candidate (what it routed and has not released), to share with the other
   * frontends of the deployment; none by default (a router that keeps no load).
   */
  default List<LoadShare> ownLoads() {
    return List.of();
  }

  /**
   * Another frontend's latest in-flight work at this router's candidates ({@link #ownLoads} there): from now on the
   * router routes on its own load plus every peer's, the peer's previous report replaced. Shares of workers or ranks
   * this router does not know are ignored.
   */
  default void peerLoads(String peerId, List<LoadShare> shares) {}

  /**
   * The prefixes this frontend routed since the last call ({@link RoutedShare}), for its peers' predict-on-route; the
   * first call starts the keeping (a router nobody asks keeps nothing). Empty for routers that predict nothing.
   */
  default List<RoutedShare> routedSince() {
    return List.of();
  }

  /** Prefixes another frontend just routed: counted as cached at their candidates until KV events say otherwise. */
  default void peerRouted(List<RoutedShare> shares) {}

  /** Takes back everything a peer reported (it stopped reporting: it left or died). */
  default void forgetPeer(String peerId) {}
}
