package dev.affinity.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.yaml.snakeyaml.nodes.NodeTuple;

/**
 * The optional top-level sections of upstream's disaggregated YAML ({@code tensorrt_llm/llmapi/disagg_utils.py}):
 * {@code otlp_config}, {@code conditional_disagg_config} and {@code disagg_cluster}, each read key by key with
 * unknown keys refused, errors reported to the {@link YamlReader} and warnings added to the loader's notes.
 */
final class OptionalSections {
  private final YamlReader r;
  private final List<ConfigWarning> notes;

  OptionalSections(YamlReader r, List<ConfigWarning> notes) {
    this.r = r;
    this.notes = notes;
  }

  /** {@code otlp_config}: its {@code otlp_traces_endpoint}, an http(s) URL. */
  Optional<String> otlp(NodeTuple t) {
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), "otlp_config");
    Optional<String> endpoint = Optional.empty();
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      if (e.getKey().equals("otlp_traces_endpoint")) {
        endpoint = r.string(e.getValue(), "otlp_config.otlp_traces_endpoint");
        if (endpoint.isPresent() && !endpoint.get().isBlank() && !isHttpUrl(endpoint.get())) {
          r.error(e.getValue().getValueNode(), "otlp_config.otlp_traces_endpoint",
              "expected an http:// or https:// URL (OTLP/HTTP, e.g. http://collector:4318/v1/traces), found \""
                  + endpoint.get() + "\"");
          endpoint = Optional.empty();
        }
      } else {
        r.error(e.getValue().getKeyNode(), "otlp_config." + e.getKey(), "unknown key (known: otlp_traces_endpoint)");
      }
    }
    return endpoint;
  }

  private static boolean isHttpUrl(String value) {
    try {
      java.net.URI uri = new java.net.URI(value.strip());
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(java.util.Locale.ROOT);
      return (scheme.equals("http") || scheme.equals("https")) && uri.getHost() != null;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  /** {@code conditional_disagg_config}: {@code max_local_prefill_length}. */
  Optional<DisaggConfig.ConditionalDisaggConfig> conditional(NodeTuple t) {
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), "conditional_disagg_config");
    int max = 0;
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      if (e.getKey().equals("max_local_prefill_length")) {
        max = r.integer(e.getValue(), "conditional_disagg_config.max_local_prefill_length", 0, Integer.MAX_VALUE)
            .map(Long::intValue).orElse(0);
      } else {
        r.error(e.getValue().getKeyNode(), "conditional_disagg_config." + e.getKey(),
            "unknown key (known: max_local_prefill_length)");
      }
    }
    return Optional.of(new DisaggConfig.ConditionalDisaggConfig(max));
  }

  /**
   * {@code disagg_cluster}: upstream's {@code DisaggClusterConfig} with its defaults; a heartbeat that is not below
   * the inactive timeout is a warning.
   */
  Optional<DisaggConfig.DisaggClusterConfig> cluster(NodeTuple t) {
    String p = "disagg_cluster";
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), p);
    String uri = null;
    String name = "";
    int minCtx = 1;
    int minGen = 1;
    int heartbeat = 5;
    int inactive = 10;
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = p + "." + e.getKey();
      if (YamlReader.isNull(e.getValue().getValueNode()) && !e.getKey().equals("cluster_uri")) {
        continue; // upstream: None keeps the default
      }
      switch (e.getKey()) {
        case "cluster_uri" -> uri = r.string(e.getValue(), k).orElse(null);
        case "cluster_name" -> name = r.string(e.getValue(), k).orElse("");
        case "heartbeat_interval_sec" -> heartbeat = r.integer(e.getValue(), k, 0, 3600).map(Long::intValue).orElse(5);
        case "inactive_timeout_sec" -> inactive = r.integer(e.getValue(), k, 1, 86400).map(Long::intValue).orElse(10);
        case "minimal_instances" -> {
          Map<String, NodeTuple> mins = YamlReader.isNull(e.getValue().getValueNode()) ? Map.of()
              : r.entries(e.getValue().getValueNode(), k);
          for (Map.Entry<String, NodeTuple> mi : mins.entrySet()) {
            String kk = k + "." + mi.getKey();
            if (YamlReader.isNull(mi.getValue().getValueNode())) {
              continue; // upstream: None keeps the default
            }
            switch (mi.getKey()) {
              case "context_servers" -> minCtx = r.integer(mi.getValue(), kk, 0, 100000).map(Long::intValue).orElse(1);
              case "generation_servers" -> minGen = r.integer(mi.getValue(), kk, 0, 100000).map(Long::intValue).orElse(1);
              default -> r.error(mi.getValue().getKeyNode(), kk, "unknown key (known: context_servers, generation_servers)");
            }
          }
        }
        default -> r.error(e.getValue().getKeyNode(), k,
            "unknown key (known: cluster_uri, cluster_name, minimal_instances, heartbeat_interval_sec, inactive_timeout_sec)");
      }
    }
    if (uri == null || uri.isBlank()) {
      r.error(t.getKeyNode(), p + ".cluster_uri", "is required: http://HOST:PORT (this frontend serves the "
          + "storage) or etcd://HOST:PORT[,etcd://HOST2:PORT2]");
      return Optional.empty();
    }
    String bad = DisaggConfig.DisaggClusterConfig.uriProblem(uri.strip());
    if (bad != null) {
      r.error(m.get("cluster_uri").getValueNode(), p + ".cluster_uri", bad);
      return Optional.empty();
    }
    if (heartbeat >= inactive && m.containsKey("heartbeat_interval_sec")) {
      notes.add(new ConfigWarning(r.loc(m.get("heartbeat_interval_sec").getValueNode()), p + ".heartbeat_interval_sec",
          "is not below inactive_timeout_sec (" + inactive + "): workers given this section run without heartbeats "
              + "and their keys expire.", "set heartbeat_interval_sec below inactive_timeout_sec"));
    }
    return Optional.of(new DisaggConfig.DisaggClusterConfig(uri.strip(), name, minCtx, minGen, heartbeat, inactive,
        r.loc(m.get("cluster_uri").getValueNode())));
  }
}
