package dev.affinity.bench.workload;

/**
 * Parameters of the agentic workload; {@link #defaults()} takes its values from published measurements
 * of coding agents (a shared framework prefix of system prompt and tools, 3k-15k tokens; main-agent
 * prompts growing from 5k-15k to 40k-250k tokens over a session; 100-450 output tokens per call; sub-agent
 * fan-out of up to a few concurrent children), as docs/workloads.md lists with their sources.
 * Lengths are in tokens, times in milliseconds. Distributions given by a median and a 90th
 * percentile are log-normal.
 *
 * @param agents                  main agents (jobs) in the workload
 * @param agentStartsPerSecond    Poisson rate at which main agents start
 * @param agentTypes              agent types; all agents of a type share one framework prefix
 * @param frameworkTokens         system prompt + tool definitions of an agent type
 * @param taskTokens              the first user message of a main agent
 * @param turnsP50                LLM calls per main agent, median
 * @param turnsP90                LLM calls per main agent, 90th percentile
 * @param growthP50               tokens appended per turn (tool results, user text), median
 * @param growthP90               tokens appended per turn, 90th percentile
 * @param outputP50               output tokens per call, median
 * @param outputP90               output tokens per call, 90th percentile
 * @param thinkP50                gap between a response and the next call (tool time), median
 * @param thinkP90                gap, 90th percentile
 * @param maxContextTokens        an agent ends when its next prompt would exceed this
 * @param fanOutProbability       probability that a main-agent call spawns sub-agents
 * @param maxSubAgents            a fan-out spawns 1..maxSubAgents sub-agents at once (one level)
 * @param subAgentCallsMin        calls per sub-agent, at least
 * @param subAgentCallsMax        calls per sub-agent, at most
 * @param subAgentStyle           FORK (inherit the parent's context) or FRESH (own type prompt)
 * @param subAgentTypes           FRESH sub-agent types; siblings of a type share its prompt
 * @param subAgentFrameworkTokens FRESH sub-agent type prompt + tools
 * @param subAgentTaskTokens      the task a parent hands to a sub-agent
 * @param blockSize               tokens per block that a hash id stands for
 */
public record AgenticParams(int agents, double agentStartsPerSecond, int agentTypes, int frameworkTokens,
    int taskTokens, int turnsP50, int turnsP90, int growthP50, int growthP90, int outputP50, int outputP90,
    double thinkP50, double thinkP90, int maxContextTokens, double fanOutProbability, int maxSubAgents,
    int subAgentCallsMin, int subAgentCallsMax, SubAgentStyle subAgentStyle, int subAgentTypes,
    int subAgentFrameworkTokens, int subAgentTaskTokens, int blockSize) {

  /** How a sub-agent's prompt begins. */
  public enum SubAgentStyle {
    /** The sub-agent inherits the parent's whole context as its prefix. */
    FORK,
    /** The sub-agent has its own type prompt + tools, shared by siblings of that type. */
    FRESH
  }

  public AgenticParams {
    positive("agents", agents);
    positive("agent_types", agentTypes);
    positive("framework_tokens", frameworkTokens);
    positive("task_tokens", taskTokens);
    positive("turns_p50", turnsP50);
    positive("growth_p50", growthP50);
    positive("output_p50", outputP50);
    positive("max_context_tokens", maxContextTokens);
    positive("max_sub_agents", maxSubAgents);
    positive("sub_agent_calls_min", subAgentCallsMin);
    positive("sub_agent_types", subAgentTypes);
    positive("sub_agent_framework_tokens", subAgentFrameworkTokens);
    positive("sub_agent_task_tokens", subAgentTaskTokens);
    positive("block_size", blockSize);
    if (!(agentStartsPerSecond > 0) || Double.isInfinite(agentStartsPerSecond)) {
      throw new IllegalArgumentException("agent_starts_per_second must be a positive number, got " + agentStartsPerSecond);
    }
    atLeast("turns_p90", turnsP90, turnsP50);
    atLeast("growth_p90", growthP90, growthP50);
    atLeast("output_p90", outputP90, outputP50);
    atLeast("sub_agent_calls_max", subAgentCallsMax, subAgentCallsMin);
    if (!(thinkP50 >= 0) || !(thinkP90 >= thinkP50) || Double.isInfinite(thinkP90)) {
      throw new IllegalArgumentException("think times need 0 <= think_p50 <= think_p90, got " + thinkP50 + ", " + thinkP90);
    }
    if (!(fanOutProbability >= 0 && fanOutProbability <= 1)) {
      throw new IllegalArgumentException("fan_out_probability must be in [0, 1], got " + fanOutProbability);
    }
    if (subAgentStyle == null) {
      throw new IllegalArgumentException("sub_agent_style must be FORK or FRESH");
    }
    if (frameworkTokens + taskTokens > maxContextTokens) {
      throw new IllegalArgumentException("max_context_tokens " + maxContextTokens
          + " is below the first prompt (framework_tokens + task_tokens = " + (frameworkTokens + taskTokens) + ")");
    }
  }

  /**
   * Defaults from published agent measurements (docs/workloads.md): framework prefix 12k (3k–15k), task 1.5k, 23 turns median
   * (16–70), growth 634 / 3.4k, output 216 median with mean ≈ 440, tool gaps 2 s / 10 s, context up
   * to 128k, sub-agents in 10% of main calls, 1–5 at once, 4–24 calls each, FRESH (as measured in
   * real coding agents) with a 7k type prompt, 64-token blocks.
   */
  public static AgenticParams defaults() {
    return new AgenticParams(32, 0.5, 2, 12_000, 1_500, 23, 70, 634, 3_400, 216, 990, 2_000, 10_000, 131_072,
        0.10, 5, 4, 24, SubAgentStyle.FRESH, 2, 7_000, 500, 64);
  }

  /** The same parameters with another sub-agent style. */
  public AgenticParams withSubAgentStyle(SubAgentStyle style) {
    return new AgenticParams(agents, agentStartsPerSecond, agentTypes, frameworkTokens, taskTokens, turnsP50, turnsP90,
        growthP50, growthP90, outputP50, outputP90, thinkP50, thinkP90, maxContextTokens, fanOutProbability,
        maxSubAgents, subAgentCallsMin, subAgentCallsMax, style, subAgentTypes, subAgentFrameworkTokens,
        subAgentTaskTokens, blockSize);
  }

  /** The same parameters with another number of agents. */
  public AgenticParams withAgents(int n) {
    return new AgenticParams(n, agentStartsPerSecond, agentTypes, frameworkTokens, taskTokens, turnsP50, turnsP90,
        growthP50, growthP90, outputP50, outputP90, thinkP50, thinkP90, maxContextTokens, fanOutProbability,
        maxSubAgents, subAgentCallsMin, subAgentCallsMax, subAgentStyle, subAgentTypes, subAgentFrameworkTokens,
        subAgentTaskTokens, blockSize);
  }

  /** The same parameters with another fan-out probability. */
  public AgenticParams withFanOutProbability(double p) {
    return new AgenticParams(agents, agentStartsPerSecond, agentTypes, frameworkTokens, taskTokens, turnsP50, turnsP90,
        growthP50, growthP90, outputP50, outputP90, thinkP50, thinkP90, maxContextTokens, p,
        maxSubAgents, subAgentCallsMin, subAgentCallsMax, subAgentStyle, subAgentTypes, subAgentFrameworkTokens,
        subAgentTaskTokens, blockSize);
  }

  private static void positive(String name, long v) {
    if (v < 1) {
      throw new IllegalArgumentException(name + " must be >= 1, got " + v);
    }
  }

  private static void atLeast(String name, long v, long min) {
    if (v < min) {
      throw new IllegalArgumentException(name + " must be >= " + min + ", got " + v);
    }
  }
}
