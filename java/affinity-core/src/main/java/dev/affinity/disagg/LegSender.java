package dev.affinity.disagg;

import dev.affinity.agent.AgentPriority;
import dev.affinity.agent.AgentScheduling;
import dev.affinity.agent.AgentSessions;
import dev.affinity.conversation.Resolution;
import dev.affinity.executor.KvRetention;
import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.TokenIds;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Router;
import dev.affinity.routing.Selection;
import dev.affinity.tracing.RequestTrace;

/**
 * Turns a flow's decision to send a leg into the worker call: the leg's body ({@link LegInputs#legBody}) with its
 * agent priority, the context leg's KV retention, the trace of the leg, and the {@link dev.affinity.worker.WorkerRequest}
 * its {@link Leg} sends. Holds where the request stands in its agent's program (agent-aware scheduling). Runs under its
 * flow's lock.
 */
final class LegSender {
  private final LegInputs inputs;
  private final RequestTrace trace;
  private final AgentScheduling agents;
  private final Router contextRouter;
  /** The client's own priority, which wins over an agent priority; null when it set none. */
  private final Double clientPriority;
  /** Where the request stands in its agent's program (NEW while agent-aware scheduling is off). */
  private AgentSessions.Standing standing = AgentSessions.Standing.NEW;

  LegSender(LegInputs inputs, OpenAiRequest client, RequestTrace trace, AgentScheduling agents, Router contextRouter) {
    this.inputs = inputs;
    this.trace = trace;
    this.agents = agents;
    this.contextRouter = contextRouter;
    this.clientPriority = client.priority();
  }

  /** The request arrives in its agent's program (before its first leg; nothing while agent scheduling is off). */
  void arrive(AdmittedRequest admitted) {
    if (agents.active()) {
      Resolution r = admitted.resolution();
      standing = agents.arrive(r.conversationId(), r.affinityId());
    }
  }

  /** Sends attempt {@code attempt}'s (never streamed) context leg, with the conversation's KV retention. */
  void sendContext(Leg leg, long attempt, Selection sel, DisaggregatedParams params) {
    AgentPriority.Leg prioritized = agentLeg(Fleet.CONTEXT, sel);
    KvRetention retention = agents.retentionFor(inputs.conversationId(), sel,
        () -> contextRouter.cacheCapacityTokens(sel.worker().id(), sel.rank()));
    send(leg, attempt, sel, inputs.legBody(true, params, null, null, false, priority(prioritized)), prioritized,
        retention);
  }

  /**
   * Sends attempt {@code attempt}'s generation leg, the one that answers the client (streamed when it asked), with the
   * prompt ids the context saw ({@code promptIds}, or {@code promptIdsB64} as its answer spelled them; both null: the
   * request's own).
   */
  void sendGeneration(Leg leg, long attempt, Selection sel, DisaggregatedParams params, TokenIds promptIds,
      String promptIdsB64) {
    AgentPriority.Leg prioritized = agentLeg(Fleet.GENERATION, sel);
    send(leg, attempt, sel, inputs.legBody(false, params, promptIds, promptIdsB64, true, priority(prioritized)),
        prioritized, null);
  }

  private void send(Leg leg, long attempt, Selection sel, OpenAiRequest body, AgentPriority.Leg prioritized,
      KvRetention retention) {
    RequestTrace.LegTrace traced = trace.legSent(leg.fleet(), attempt, sel);
    leg.send(sel, inputs.workerRequest(attempt, leg.fleet(), sel, body, traced.context(), retention), traced,
        prioritized);
  }

  private static Double priority(AgentPriority.Leg prioritized) {
    return prioritized == null ? null : prioritized.priority();
  }

  /**
   * The agent-priority record of a leg about to be sent where {@code sel} points: null when agent priority is off or
   * the client set the request's priority itself (its own wins).
   */
  private AgentPriority.Leg agentLeg(Fleet fleet, Selection sel) {
    return clientPriority != null ? null : agents.sendLeg(standing, fleet, sel);
  }
}
