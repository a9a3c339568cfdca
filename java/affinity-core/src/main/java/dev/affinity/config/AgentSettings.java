package dev.affinity.config;

/**
 * Agent-aware scheduling, the {@code affinity:} block's keys for it (docs/configuration.md).
 *
 * @param priority                 {@code agent_priority}: calls of sessions in progress and sub-agents their parent waits
 *                                 on are sent at a raised request priority (workers honour it with
 *                                 {@code waiting_queue_policy: priority}), ahead of new sessions' first calls
 * @param priorityPromotionSeconds {@code agent_priority_promotion_seconds}: once a call at the default priority has
 *                                 waited this long on a (worker, rank), later calls there no longer go ahead of it
 * @param kvRetention              {@code kv_retention}: a context leg asks its worker to keep its blocks at a raised
 *                                 retention priority across the session's tool pause, for a time derived from the
 *                                 session's measured pauses and the rank's cache pressure
 */
public record AgentSettings(boolean priority, double priorityPromotionSeconds, boolean kvRetention) {
  /** {@code agent_priority_promotion_seconds} when it is not set. */
  public static final double DEFAULT_PROMOTION_SECONDS = 10;

  public AgentSettings {
    if (!(priorityPromotionSeconds > 0)) {
      throw new IllegalArgumentException("priorityPromotionSeconds must be > 0, got " + priorityPromotionSeconds);
    }
  }

  /**
   * Both off. On the development traces (docs/benchmarks.md) priority changed nothing at the bench fleets' batch sizes
   * (no call waited for admission) and cost 1.7% at p95 where context ranks had one batch slot each; retention changed
   * nothing on the Claude Code sessions (their ranks' caches turn over in minutes, longer than any tool pause) and cost
   * 16 FORK agents 0.9% at TTFT p50 and 0.3% of hit ratio.
   */
  public static AgentSettings defaults() {
    return new AgentSettings(false, DEFAULT_PROMOTION_SECONDS, false);
  }
}
