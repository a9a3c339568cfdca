package dev.affinity.config;

import java.util.Map;

/**
 * Embedded in-process workers of one fleet ({@code affinity.workers.context|generation}):
 * {@code instances} executors of {@code backend}, each configured by {@code executorConfig} (the
 * native executor's JSON keys, see docs/cpu-executor.md), with convenience keys folded in; the longest
 * prompt it accepts is {@code maxSeqLen} (0: what one rank's KV cache holds).
 */
public record WorkerPool(int instances, String backend, Map<String, Object> executorConfig, long maxSeqLen,
    Location location) {

  public WorkerPool {
    executorConfig = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(executorConfig));
  }

  /** Attention-DP ranks per instance (the executor's {@code num_ranks}, default 1). */
  public int ranks() {
    return executorConfig.get("num_ranks") instanceof Number n ? n.intValue() : 1;
  }

  /** The executor's rank router type ({@code adp_router.type}, default "default"). */
  public String adpRouterType() {
    if (executorConfig.get("adp_router") instanceof Map<?, ?> m && m.get("type") instanceof String s) {
      return s;
    }
    return "default";
  }
}
