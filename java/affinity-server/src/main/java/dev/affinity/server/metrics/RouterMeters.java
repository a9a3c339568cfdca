package dev.affinity.server.metrics;

import dev.affinity.routing.CandidateLoad;
import dev.affinity.routing.DecisionReason;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * One fleet's router on {@code /metrics}: its decisions by reason, expired selections and KV-event ingest as
 * counters (cumulative counts, so {@code rate()} works and a restart reads as a reset), the selections it has out as
 * a gauge, and the requests and prompt tokens in flight at each (worker, rank) it routes to, which is the only view
 * of a remote worker's ranks the frontend has. The per-rank rows are refreshed by {@link #refresh()} before each
 * scrape, so workers that join or leave appear and go.
 */
public final class RouterMeters {
  private final Router router;
  private final MultiGauge rankRequests;
  private final MultiGauge rankTokens;
  private final String fleet;

  public RouterMeters(MeterRegistry registry, Router router, String fleet) {
    this.router = router;
    this.fleet = fleet;
    for (DecisionReason reason : DecisionReason.values()) {
      FunctionCounter.builder("affinity_router_decisions", router,
              r -> r.stats().decisions().getOrDefault(reason, 0L))
          .description("Routing decisions, by the reason the router gave")
          .tag("fleet", fleet).tag("reason", reason.label()).register(registry);
    }
    for (dev.affinity.routing.NoWorkerAvailableException.Reason reason
        : dev.affinity.routing.NoWorkerAvailableException.Reason.values()) {
      FunctionCounter.builder("affinity_router_unavailable", router,
              r -> r.stats().unavailable().getOrDefault(reason, 0L))
          .description("Requests the router found no worker for (HTTP 503), by reason")
          .tag("fleet", fleet).tag("reason", reason.label()).register(registry);
    }
    FunctionCounter.builder("affinity_router_expired_selections", router, r -> r.stats().expiredSelections())
        .description("Selections released by their TTL because their request never reported back")
        .tag("fleet", fleet).register(registry);
    Gauge.builder("affinity_router_outstanding_selections", router, r -> r.stats().outstandingSelections())
        .description("Selections handed out and not yet released").tag("fleet", fleet).register(registry);
    kvCounter(registry, "affinity_kv_events_applied", "KV-cache events applied to the router's prefix index",
        k -> k.applied());
    kvCounter(registry, "affinity_kv_event_batches", "Batches of KV-cache events (one poll answer or push)",
        k -> k.batches());
    kvCounter(registry, "affinity_kv_events_dropped",
        "KV-cache events missing from the workers' event-id sequences (a lower bound)", k -> k.dropped());
    kvCounter(registry, "affinity_kv_event_gaps_cleared",
        "Index locations (worker, rank) cleared because their event ids skipped (events were lost)", k -> k.gaps());
    kvCounter(registry, "affinity_kv_event_restarts",
        "Index locations (worker, rank) cleared because their event ids started over (the worker restarted)",
        k -> k.restarts());
    FunctionCounter.builder("affinity_kv_event_apply_seconds", router, r -> r.stats().kvEvents().applyNanos() / 1e9)
        .description("Time spent applying KV-cache events to the prefix index").tag("fleet", fleet)
        .register(registry);
    rankRequests = MultiGauge.builder("affinity_router_rank_requests")
        .description("Requests the router has in flight at a worker's rank (rank -1: ranks not visible)")
        .tag("fleet", fleet).register(registry);
    rankTokens = MultiGauge.builder("affinity_router_rank_tokens")
        .description("Prompt tokens of the requests the router has in flight at a worker's rank")
        .tag("fleet", fleet).register(registry);
    refresh();
  }

  private void kvCounter(MeterRegistry registry, String name, String description,
      ToDoubleFunction<RouterStats.KvIngest> value) {
    FunctionCounter.builder(name, router, r -> value.applyAsDouble(r.stats().kvEvents()))
        .description(description).tag("fleet", fleet).register(registry);
  }

  /** Reads the router's per-(worker, rank) loads into the gauges: rows of workers gone are removed. */
  public void refresh() {
    List<CandidateLoad> loads = router.loads();
    List<MultiGauge.Row<?>> requests = new ArrayList<>(loads.size());
    List<MultiGauge.Row<?>> tokens = new ArrayList<>(loads.size());
    for (CandidateLoad l : loads) {
      Tags tags = Tags.of("worker", l.workerId(), "rank", Integer.toString(l.rank()));
      requests.add(MultiGauge.Row.of(tags, l.requests()));
      tokens.add(MultiGauge.Row.of(tags, l.tokens()));
    }
    rankRequests.register(requests, true);
    rankTokens.register(tokens, true);
  }
}
