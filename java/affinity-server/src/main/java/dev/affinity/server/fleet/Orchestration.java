package dev.affinity.server.fleet;

import dev.affinity.agent.AgentScheduling;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.disagg.DisaggService;
import dev.affinity.disagg.DisaggSettings;
import dev.affinity.disagg.RequestIds;
import dev.affinity.disagg.TextTokenizer;
import dev.affinity.kv.PrefixIndex;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.timer.Scheduler;
import dev.affinity.tracing.RequestTracer;
import dev.affinity.worker.Worker;
import java.time.Duration;
import java.util.function.BiFunction;
import java.util.function.LongSupplier;

/**
 * The routing and orchestration of a configuration: one router per fleet and the
 * {@link DisaggService} over them. {@code serve} builds it on the wall clock and the fleet simulator
 * (affinity-bench) in virtual time, through this one method, so both run the same code.
 */
public record Orchestration(Router contextRouter, Router generationRouter, DisaggService service) {

  /**
   * Builds the routers (no workers yet: add them with {@link #attach}) and the service.
   *
   * @param nanoClock the routers' clock (selection TTLs, load decay), nanoseconds
   */
  public static Orchestration build(DisaggConfig config, Scheduler scheduler, LongSupplier nanoClock, RequestIds ids) {
    return build(config, scheduler, nanoClock, ids, (fleet, router) -> router);
  }

  /**
   * As {@link #build(DisaggConfig, Scheduler, LongSupplier, RequestIds)}, each router passed through
   * {@code wrap} (a frontend that shares its pins with others wraps its pin-keeping routers).
   */
  public static Orchestration build(DisaggConfig config, Scheduler scheduler, LongSupplier nanoClock, RequestIds ids,
      BiFunction<Fleet, Router, Router> wrap) {
    return build(config, scheduler, nanoClock, ids, wrap, RequestTracer.NONE, null);
  }

  /**
   * As {@link #build(DisaggConfig, Scheduler, LongSupplier, RequestIds, BiFunction)}, requests traced by
   * {@code tracer}, with the frontend's tokenizer for continuing streams cut mid-way (null when it has none).
   */
  public static Orchestration build(DisaggConfig config, Scheduler scheduler, LongSupplier nanoClock, RequestIds ids,
      BiFunction<Fleet, Router, Router> wrap, RequestTracer tracer, TextTokenizer textTokenizer) {
    RouterFactory factory = new RouterFactory();
    Router ctx = wrap.apply(Fleet.CONTEXT, router(factory, config, config.context(), Fleet.CONTEXT, nanoClock));
    Router gen = wrap.apply(Fleet.GENERATION, router(factory, config, config.generation(), Fleet.GENERATION, nanoClock));
    AgentScheduling agents = new AgentScheduling(config.affinity().agent(), config.affinity().sessionIdleTtlSeconds(),
        nanoClock);
    DisaggService service = new DisaggService(DisaggSettings.from(config), ctx, gen, ids, scheduler, tracer,
        textTokenizer, agents);
    return new Orchestration(ctx, gen, service);
  }

  private static Router router(RouterFactory factory, DisaggConfig config, ServerSection section, Fleet fleet,
      LongSupplier nanoClock) {
    RouterContext ctx = new RouterContext(fleet, config.subagentScope(), nanoClock, new PrefixIndex(1 << 20),
        Duration.ofMillis(Math.round(config.affinity().selectionTtlSeconds() * 1000)), config.nodeId(),
        config.affinity().softPlacementMargin());
    return factory.create(section.router(), section.name(), ctx);
  }

  /** The router of a fleet. */
  public Router router(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? contextRouter : generationRouter;
  }

  /**
   * Adds a worker to its fleet's router and feeds the router the worker's KV events, unless the router reads none
   * (then nothing drains them, as {@code RemoteWorkers} polls no remote worker's: the executor's buffer is bounded).
   */
  public void attach(Worker worker, Fleet fleet) {
    Router r = router(fleet);
    r.addWorker(worker);
    if (r.usesKvEvents()) {
      worker.onKvEvents(events -> r.onKvEvents(worker.id(), events));
    }
  }
}
