package dev.affinity.config;

import java.util.Map;
import java.util.Optional;

/**
 * A TensorRT-LLM disaggregated server configuration ({@code tensorrt_llm/llmapi/disagg_utils.py}), with Affinity's
 * own block. Immutable; produced by {@link ConfigLoader}.
 */
public record DisaggConfig(
    String source,
    String hostname,
    int port,
    ServerSection context,
    ServerSection generation,
    int maxRetries,
    ScheduleStyle scheduleStyle,
    int nodeId,
    Optional<ConditionalDisaggConfig> conditionalDisagg,
    Optional<String> otlpTracesEndpoint,
    Optional<DisaggClusterConfig> disaggCluster,
    int perfMetricsMaxRequests,
    boolean returnPerfMetrics,
    Optional<String> perfMetricsOutputDir,
    boolean allowRequestChatTemplate,
    boolean genStripMessageHistory,
    boolean genTokidsCtxbytes,
    int numWorkers,
    Optional<String> disaggCoordinatorUrl,
    int serverKeepAliveTimeout,
    Optional<String> internalRequestAuthKey,
    Optional<String> subagentHeader,
    SubagentScope subagentScope,
    Map<String, Object> inherited,
    AffinitySettings affinity) {

  public DisaggConfig {
    inherited = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(inherited));
  }

  /** {@code conditional_disagg_config}: prefill locally on the generation worker below this many new tokens. */
  public record ConditionalDisaggConfig(int maxLocalPrefillLength) {}

  /** {@code disagg_cluster}: dynamic membership instead of static URLs. */
  public record DisaggClusterConfig(String clusterUri, String clusterName, int minimalContextInstances,
      int minimalGenerationInstances, int heartbeatIntervalSec, int inactiveTimeoutSec) {}
}
