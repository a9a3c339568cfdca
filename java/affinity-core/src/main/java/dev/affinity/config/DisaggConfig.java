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
    java.util.List<String> subagentHeaders,
    SubagentScope subagentScope,
    Map<String, Object> inherited,
    AffinitySettings affinity) {

  public DisaggConfig {
    inherited = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(inherited));
    subagentHeaders = java.util.List.copyOf(subagentHeaders);
  }

  /**
   * The first of {@code conversation_affinity_header_for_subagents}' headers (a string as upstream's, or a
   * list whose first present header wins), empty when sub-agent affinity is off.
   */
  public Optional<String> subagentHeader() {
    return subagentHeaders.stream().findFirst();
  }

  /**
   * Whether this frontend serves its own HTTP cluster storage with no credential: {@code disagg_cluster} over
   * {@code http://} and no (or an empty) {@code internal_request_auth_key}, so any process on this host can register a
   * worker or delete one. etcd storage is not this frontend's to guard (etcd has its own authentication).
   */
  public boolean servesOpenClusterStorage() {
    return disaggCluster.filter(DisaggClusterConfig::isHttp).isPresent()
        && internalRequestAuthKey.filter(k -> !k.isEmpty()).isEmpty();
  }

  /** {@code conditional_disagg_config}: prefill locally on the generation worker below this many new tokens. */
  public record ConditionalDisaggConfig(int maxLocalPrefillLength) {}

  /**
   * {@code disagg_cluster}: dynamic membership instead of static URLs. Workers register under
   * {@code /trtllm-disagg/{cluster_name}/workers/} in the storage the URI names: {@code http://host:port}, the
   * frontend's own HTTP storage, or {@code etcd://h:p[,etcd://h2:p2]}. {@code uriLocation} is where
   * {@code cluster_uri} was written (what a start-up check names).
   */
  public record DisaggClusterConfig(String clusterUri, String clusterName, int minimalContextInstances,
      int minimalGenerationInstances, int heartbeatIntervalSec, int inactiveTimeoutSec, Location uriLocation) {

    public DisaggClusterConfig {
      java.util.Objects.requireNonNull(clusterUri, "clusterUri");
      java.util.Objects.requireNonNull(uriLocation, "uriLocation");
    }

    /** Upstream's storage key prefix of the workers ({@code get_worker_key_prefix}). */
    public String workerKeyPrefix() {
      return "/trtllm-disagg/" + clusterName + "/workers";
    }

    /** Whether the storage is the frontend's HTTP storage (else etcd). */
    public boolean isHttp() {
      return isHttp(clusterUri);
    }

    static boolean isHttp(String uri) {
      String u = uri.toLowerCase(java.util.Locale.ROOT);
      return u.startsWith("http://") || u.startsWith("https://");
    }

    /** The host of an {@code http(s)://} URI. */
    public String httpHost() {
      return java.net.URI.create(clusterUri).getHost();
    }

    /** The {@code host:port} of each {@code etcd://} endpoint, in order. */
    public java.util.List<String> etcdEndpoints() {
      java.util.List<String> out = new java.util.ArrayList<>();
      for (String part : clusterUri.split(",")) {
        java.net.URI u = java.net.URI.create(part.strip());
        out.add(u.getHost() + ":" + u.getPort());
      }
      return out;
    }

    /** localhost (any case), 127.0.0.1 or ::1, as upstream's loopback check. */
    public static boolean isLoopback(String host) {
      if (host == null) {
        return false;
      }
      String h = host.strip();
      if (h.startsWith("[") && h.endsWith("]")) {
        h = h.substring(1, h.length() - 1);
      }
      return h.equalsIgnoreCase("localhost") || h.equals("127.0.0.1") || h.equals("::1");
    }

    /** What is wrong with a cluster URI, or null. */
    public static String uriProblem(String uri) {
      if (isHttp(uri)) {
        try {
          java.net.URI u = new java.net.URI(uri);
          if (u.getHost() == null || u.getPort() <= 0) {
            return "expected http://HOST:PORT, found \"" + uri + "\"";
          }
          return null;
        } catch (java.net.URISyntaxException e) {
          return "expected http://HOST:PORT, found \"" + uri + "\"";
        }
      }
      if (uri.toLowerCase(java.util.Locale.ROOT).startsWith("etcd://")) {
        for (String part : uri.split(",")) {
          try {
            java.net.URI u = new java.net.URI(part.strip());
            if (!"etcd".equalsIgnoreCase(u.getScheme()) || u.getHost() == null || u.getPort() <= 0) {
              return "expected etcd://HOST:PORT[,etcd://HOST2:PORT2], found \"" + part.strip() + "\"";
            }
          } catch (java.net.URISyntaxException e) {
            return "expected etcd://HOST:PORT[,etcd://HOST2:PORT2], found \"" + part.strip() + "\"";
          }
        }
        return null;
      }
      return "expected http://HOST:PORT or etcd://HOST:PORT[,etcd://HOST2:PORT2], found \"" + uri + "\"";
    }
  }
}
