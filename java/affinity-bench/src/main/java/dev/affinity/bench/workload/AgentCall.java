package dev.affinity.bench.workload;

import java.util.List;

/**
 * One LLM call of an agent: its prompt (as prefix-chained block ids), its output length, the gap
 * before it (after the previous call's response, or after the sub-agents spawned by the previous
 * call have all finished) and the sub-agents it spawns once its response is in.
 *
 * @param thinkBeforeMs gap before this call; for an agent's first call, 0
 * @param inputLength   prompt tokens
 * @param outputLength  tokens to generate
 * @param hashIds       prefix-chained ids of {@code blockSize}-token blocks
 * @param spawns        sub-agents started after this call's response (empty for most calls)
 * @param stopReason    how the call ends ({@code tool_use}: in a tool call), or null when unknown
 */
public record AgentCall(double thinkBeforeMs, int inputLength, int outputLength, List<Long> hashIds,
    List<AgentScript> spawns, String stopReason) {
  public AgentCall {
    hashIds = List.copyOf(hashIds);
    spawns = List.copyOf(spawns);
  }

  /** A call whose stop reason is unknown. */
  public AgentCall(double thinkBeforeMs, int inputLength, int outputLength, List<Long> hashIds, List<AgentScript> spawns) {
    this(thinkBeforeMs, inputLength, outputLength, hashIds, spawns, null);
  }
}
