package dev.affinity.bench.trace;

import java.util.List;
import java.util.Objects;

/**
 * One recorded Claude Code session in the format of {@code callanjfox/kv-cache-tester}'s {@code traces/}
 * (docs/traces.md): a main agent whose calls extend each other, and the sub-agents it spawned. Block
 * ids are as the file has them: local to the session (its sub-agents share the namespace), one per
 * whole {@code blockSize}-token block of a call's input.
 *
 * @param id        the trace's {@code id}
 * @param source    the file it was read from (for messages)
 * @param blockSize tokens per block id
 * @param main      the main agent
 */
public record ClaudeCodeTrace(String id, String source, int blockSize, Agent main) {
  public ClaudeCodeTrace {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(main, "main");
  }

  /** Calls of the main agent and of every sub-agent. */
  public int calls() {
    return main.calls();
  }

  /**
   * An agent: its kind ({@code main}, or the sub-agent's {@code subagent_type}), the size of its
   * system prompt and tool definitions, and its entries in order.
   */
  public record Agent(String agentId, String kind, int systemTokens, int toolTokens, List<Entry> entries) {
    public Agent {
      entries = List.copyOf(entries);
    }

    /** Calls of this agent and, recursively, of its sub-agents. */
    public int calls() {
      int n = 0;
      for (Entry e : entries) {
        n += e instanceof SubAgent s ? s.agent().calls() : 1;
      }
      return n;
    }
  }

  /** A call or a sub-agent, in the order the trace lists them. */
  public sealed interface Entry permits Call, SubAgent {
    /** Seconds since the agent started. */
    double t();
  }

  /**
   * One model call.
   *
   * @param inputTokens  prompt tokens ({@code in})
   * @param outputTokens generated tokens ({@code out}; a recorded 0 is kept, the workload sends at least 1)
   * @param hashIds      ids of the prompt's leading whole blocks
   * @param apiTimeS     seconds the serving API took, NaN when the trace lacks it
   * @param thinkTimeS   seconds the client waited before sending it, NaN when the trace lacks it
   * @param stop         how the call ended ({@code stop}: {@code tool_use}, {@code end_turn}, ...), null when missing
   */
  public record Call(double t, int inputTokens, int outputTokens, long[] hashIds, double apiTimeS, double thinkTimeS,
      String stop) implements Entry {
    /** A call whose stop reason the trace does not record. */
    public Call(double t, int inputTokens, int outputTokens, long[] hashIds, double apiTimeS, double thinkTimeS) {
      this(t, inputTokens, outputTokens, hashIds, apiTimeS, thinkTimeS, null);
    }
  }

  /** A sub-agent spawned at {@code t}; sub-agents listed one after another run together. */
  public record SubAgent(double t, Agent agent) implements Entry {}
}
