package dev.affinity.bench.workload;

import java.util.List;

/**
 * An agent's sequence of calls, as a closed-loop driver plays it: call {@code k + 1} is sent
 * {@code thinkBeforeMs} after call {@code k}'s response (and after every sub-agent that call
 * spawned has finished).
 *
 * @param sessionId       the agent's own session id (sent as the session header)
 * @param parentSessionId the parent's session id for a sub-agent, null for a main agent
 * @param startMs         for a main agent, when it starts; for a sub-agent, 0 (it starts when spawned)
 * @param calls           the calls, in order
 * @param initialSpawns   sub-agents the agent runs before its first call (its first call waits for them)
 */
public record AgentScript(String sessionId, String parentSessionId, double startMs, List<AgentCall> calls,
    List<AgentScript> initialSpawns) {
  public AgentScript {
    calls = List.copyOf(calls);
    initialSpawns = List.copyOf(initialSpawns);
  }

  /** An agent that spawns sub-agents only after its calls. */
  public AgentScript(String sessionId, String parentSessionId, double startMs, List<AgentCall> calls) {
    this(sessionId, parentSessionId, startMs, calls, List.of());
  }

  /** Every call of this agent and, recursively, of its sub-agents. */
  public int totalCalls() {
    int n = calls.size();
    for (AgentScript s : initialSpawns) {
      n += s.totalCalls();
    }
    for (AgentCall c : calls) {
      for (AgentScript s : c.spawns()) {
        n += s.totalCalls();
      }
    }
    return n;
  }
}
