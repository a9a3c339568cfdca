package dev.affinity.disagg;

import dev.affinity.agent.AgentScheduling;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.timer.Scheduler;
import dev.affinity.tracing.RequestTracer;

/**
 * What every {@link RequestFlow} of a {@link DisaggService} runs with, fixed for the service's life.
 *
 * @param textTokenizer tokenizes a cut stream's text (the frontend's tokenizer with embedded workers), or null
 */
record FlowDeps(DisaggSettings settings, Router contextRouter, Router generationRouter, RequestIds ids,
    Scheduler scheduler, Schedule schedule, RequestTracer tracer, TextTokenizer textTokenizer,
    AgentScheduling agents) {

  Router router(Fleet fleet) {
    return fleet == Fleet.CONTEXT ? contextRouter : generationRouter;
  }
}
