package dev.affinity.bench.metrics;

/**
 * An agent-level service objective in the AA-AgentPerf style: an agent (a main agent with its
 * sub-agents) is served well when the P95 of its requests' TTFT is at most {@code ttftP95Ms} and the
 * P25 of their output speed is at least {@code outputTokensPerSecondP25}.
 */
public record Slo(double ttftP95Ms, double outputTokensPerSecondP25) {
  public Slo {
    if (!(ttftP95Ms > 0) || !(outputTokensPerSecondP25 >= 0)) {
      throw new IllegalArgumentException("SLO needs a TTFT bound > 0 ms and an output speed >= 0 tokens/s, got "
          + ttftP95Ms + " ms and " + outputTokensPerSecondP25 + " tokens/s");
    }
  }

  /**
   * P95 TTFT <= 2 s (an interactive agent's step) and P25 output speed >= 20 tokens/s (DeepSeek's
   * published production decode speed per user, 20-22 tokens/s, in its inference-system overview,
   * deepseek-ai/open-infra-index).
   */
  public static Slo defaults() {
    return new Slo(2000, 20);
  }
}
