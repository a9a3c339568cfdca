package dev.affinity.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code context_servers} or {@code generation_servers}: the worker URLs (or the embedded workers
 * that replace them), the router, and every other key as worker arguments (including top-level keys
 * inherited into the section).
 */
public record ServerSection(
    String name,
    int numInstances,
    List<String> urls,
    RouterConfig router,
    Map<String, Object> workerArgs,
    Optional<WorkerPool> embedded,
    Location location) {

  public ServerSection {
    urls = List.copyOf(urls);
    workerArgs = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(workerArgs));
  }

  /** True when the fleet is made of in-process executors rather than trtllm-serve URLs. */
  public boolean isEmbedded() {
    return embedded.isPresent();
  }

  /** A worker argument by dotted path ({@code attention_dp_config.kv_cache_routing_conversation_affinity}). */
  public Optional<Object> workerArg(String dottedPath) {
    Object cur = workerArgs;
    for (String part : dottedPath.split("\\.")) {
      if (!(cur instanceof Map<?, ?> m) || !m.containsKey(part)) {
        return Optional.empty();
      }
      cur = m.get(part);
    }
    return Optional.ofNullable(cur);
  }
}
