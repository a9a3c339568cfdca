package dev.affinity.config;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads Affinity's own {@code affinity:} block of a disaggregated YAML: the served model, session headers,
 * debug headers, access log, API keys, client rules, timeouts, body limit, tokenizer, the connection limit
 * per remote worker and the embedded worker pools of each fleet ({@code affinity.workers.context} /
 * {@code .generation}). Problems are reported through the {@link YamlReader}; unknown keys are errors that
 * list the known ones.
 */
final class AffinityBlockReader {
  private static final List<String> KNOWN_ORDER = List.of("model", "session_headers", "debug_headers", "access_log",
      "api_keys", "allow_client_disaggregated_params", "request_timeout_seconds", "max_request_body_bytes", "tokenizer",
      "require_internal_auth", "allow_unauthenticated_cluster_storage", "selection_ttl_seconds", "max_prompt_tokens", "tenant_isolation", "worker_max_connections", "session_final_header",
      "session_idle_ttl_seconds", "soft_placement_margin", "io_threads", "max_queued_requests", "max_queued_tokens",
      "warm_up_requests", "agent_priority", "agent_priority_promotion_seconds", "kv_retention", "workers", "shared_state",
      "prompt_prefix_bytes", "kept_turn_bytes");
  private static final java.util.Set<String> KNOWN = java.util.Set.copyOf(KNOWN_ORDER);

  private final YamlReader r;
  /** {@code api_keys} given from outside the YAML ({@link ConfigSecrets}), which then must not set them. */
  private final Optional<ConfigSecrets.Given<List<String>>> givenKeys;

  AffinityBlockReader(YamlReader r, Optional<ConfigSecrets.Given<List<String>>> givenKeys) {
    this.r = r;
    this.givenKeys = givenKeys;
  }

  /** What the block says: the settings, and each fleet's embedded worker pool when it has one. */
  record AffinityBlock(AffinitySettings settings, Optional<WorkerPool> context, Optional<WorkerPool> generation,
      org.yaml.snakeyaml.nodes.Node requireInternalAuthNode) {
    /** No {@code affinity:} block: the defaults, with the API keys given from outside the YAML if any. */
    static AffinityBlock empty(Optional<ConfigSecrets.Given<List<String>>> givenKeys) {
      AffinitySettings d = AffinitySettings.defaults();
      return new AffinityBlock(givenKeys.map(g -> d.withApiKeys(g.value())).orElse(d), Optional.empty(),
          Optional.empty(), null);
    }
  }

  /** Whether {@code h} is an HTTP header name; an error at {@code v} when not. */
  /** A margin >= 0, or {@code false} for off (-1). */
  private OptionalDouble softPlacementMargin(NodeTuple v, String k) {
    if (v.getValueNode() instanceof ScalarNode s && Tag.BOOL.equals(s.getTag())) {
      if (r.bool(v, k).orElse(true)) {
        r.error(v.getValueNode(), k, "expected a number >= 0, or false (off), found true");
        return OptionalDouble.empty();
      }
      return OptionalDouble.of(-1);
    }
    Optional<Double> x = r.number(v, k, Double.NEGATIVE_INFINITY);
    if (x.isPresent() && x.get() < 0) {
      r.error(v.getValueNode(), k, "expected a number >= 0, or false (off), found " + x.get());
      return OptionalDouble.empty();
    }
    return x.map(OptionalDouble::of).orElse(OptionalDouble.empty());
  }

  private boolean headerName(String h, NodeTuple v, String path) {
    if (h.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
      return true;
    }
    r.error(v.getValueNode(), path, "expected an HTTP header name (letters, digits and -), found \"" + h + "\"");
    return false;
  }

  /** The block at {@code t} (the {@code affinity} key and its mapping). */
  AffinityBlock read(NodeTuple t) {
    String p = "affinity";
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), p);
    AffinitySettings d = AffinitySettings.defaults();
    Optional<String> model = d.model();
    boolean requireAuth = d.requireInternalAuth();
    boolean openStorage = d.allowUnauthenticatedClusterStorage();
    List<String> headers = d.sessionHeaders();
    boolean debug = d.debugHeaders();
    Optional<String> accessLog = d.accessLog();
    List<String> keys = d.apiKeys();
    boolean allowParams = d.allowClientDisaggregatedParams();
    double timeout = d.requestTimeoutSeconds();
    long maxBody = d.maxRequestBodyBytes();
    String tokenizer = d.tokenizer();
    double selectionTtl = d.selectionTtlSeconds();
    long maxPrompt = d.maxPromptTokens();
    boolean tenants = d.tenantIsolation();
    int maxConnections = d.workerMaxConnections();
    String finalHeader = d.sessionFinalHeader();
    double idleTtl = d.sessionIdleTtlSeconds();
    OptionalDouble softMargin = d.softPlacementMargin();
    int ioThreads = d.ioThreads();
    long maxQueuedRequests = d.maxQueuedRequests();
    long maxQueuedTokens = d.maxQueuedTokens();
    int warmUp = d.warmUpRequests();
    long prefixBytes = d.promptPrefixBytes();
    long keptTurnBytes = d.keptTurnBytes();
    boolean agentPriority = d.agent().priority();
    double promotion = d.agent().priorityPromotionSeconds();
    boolean kvRetention = d.agent().kvRetention();
    Optional<WorkerPool> ctx = Optional.empty();
    Optional<WorkerPool> gen = Optional.empty();
    Optional<SharedStateSettings> shared = Optional.empty();
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = p + "." + e.getKey();
      NodeTuple v = e.getValue();
      if (YamlReader.isNull(v.getValueNode()) && KNOWN.contains(e.getKey())) {
        continue; // null: the default
      }
      switch (e.getKey()) {
        case "model" -> {
          Optional<String> named = r.string(v, k).filter(s -> !s.isBlank()).map(String::strip);
          if (named.isPresent()) {
            model = named;
          }
        }
        case "require_internal_auth" -> requireAuth = r.bool(v, k).orElse(requireAuth);
        case "allow_unauthenticated_cluster_storage" -> openStorage = r.bool(v, k).orElse(openStorage);
        case "session_headers" -> headers = r.stringList(v, k).map(l -> l.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).toList()).orElse(headers);
        case "debug_headers" -> debug = r.bool(v, k).orElse(debug);
        case "access_log" -> accessLog = accessLog(v, k);
        case "api_keys" -> {
          if (givenKeys.isPresent()) {
            r.error(v.getKeyNode(), k, "is also given by " + givenKeys.get().origin()
                + ": keep the keys in one place (remove api_keys from the YAML)");
          } else {
            keys = r.stringList(v, k).orElse(keys);
          }
        }
        case "allow_client_disaggregated_params" -> allowParams = r.bool(v, k).orElse(allowParams);
        case "request_timeout_seconds" -> timeout = r.number(v, k, 0).orElse(timeout);
        case "max_request_body_bytes" -> maxBody = r.integer(v, k, 1, Long.MAX_VALUE).orElse(maxBody);
        case "tokenizer" -> tokenizer = r.string(v, k).map(String::strip).map(name -> tokenizerValue(name, v, k))
            .orElse(tokenizer);
        case "selection_ttl_seconds" -> selectionTtl = r.number(v, k, 0).orElse(selectionTtl);
        case "max_prompt_tokens" -> maxPrompt = r.integer(v, k, 1, Long.MAX_VALUE).orElse(maxPrompt);
        case "tenant_isolation" -> tenants = r.bool(v, k).orElse(tenants);
        case "worker_max_connections" -> maxConnections = r.integer(v, k, 0, Integer.MAX_VALUE).map(Long::intValue)
            .orElse(maxConnections);
        case "session_final_header" -> finalHeader = r.string(v, k).map(String::strip)
            .filter(h -> headerName(h, v, k)).map(h -> h.toLowerCase(Locale.ROOT)).orElse(finalHeader);
        case "session_idle_ttl_seconds" -> idleTtl = r.number(v, k, 0).orElse(idleTtl);
        case "soft_placement_margin" -> softMargin = softPlacementMargin(v, k);
        case "max_queued_requests" -> maxQueuedRequests = r.integer(v, k, 1, Long.MAX_VALUE).orElse(maxQueuedRequests);
        case "max_queued_tokens" -> maxQueuedTokens = r.integer(v, k, 1, Long.MAX_VALUE).orElse(maxQueuedTokens);
        case "warm_up_requests" -> warmUp = r.integer(v, k, 0, 10_000_000).map(Long::intValue).orElse(warmUp);
        case "prompt_prefix_bytes" -> prefixBytes = r.integer(v, k, 0, Long.MAX_VALUE).orElse(prefixBytes);
        case "kept_turn_bytes" -> keptTurnBytes = r.integer(v, k, 0, Long.MAX_VALUE).orElse(keptTurnBytes);
        case "agent_priority" -> agentPriority = r.bool(v, k).orElse(agentPriority);
        case "agent_priority_promotion_seconds" -> promotion = r.number(v, k, 0).orElse(promotion);
        case "kv_retention" -> kvRetention = r.bool(v, k).orElse(kvRetention);
        case "io_threads" -> ioThreads = r.integer(v, k, 0, 4096).map(Long::intValue).orElse(ioThreads);
        case "shared_state" -> shared = new SharedStateReader(r).read(v, k);
        case "workers" -> {
          for (Map.Entry<String, NodeTuple> w : r.entries(v.getValueNode(), k).entrySet()) {
            String wk = k + "." + w.getKey();
            switch (w.getKey()) {
              case "context" -> ctx = Optional.ofNullable(pool(w.getValue(), wk));
              case "generation" -> gen = Optional.ofNullable(pool(w.getValue(), wk));
              default -> r.error(w.getValue().getKeyNode(), wk, "unknown key (known: context, generation)");
            }
          }
        }
        default -> r.error(v.getKeyNode(), k, "unknown key (known: " + String.join(", ", KNOWN_ORDER) + ")");
      }
    }
    if (givenKeys.isPresent()) {
      keys = givenKeys.get().value();
    }
    for (int i = 0; i < headers.size(); i++) {
      if (headers.get(i).isEmpty()) {
        r.error(m.get("session_headers").getValueNode(), p + ".session_headers[" + i + "]", "is empty");
      }
    }
    if ("model".equals(tokenizer)) {
      for (Optional<WorkerPool> pool : List.of(ctx, gen)) {
        if (pool.isPresent() && !"pytorch".equals(pool.get().backend())) {
          r.error(m.get("tokenizer").getValueNode(), p + ".tokenizer", "\"model\" takes the tokenizer of a model the "
              + "workers run, but the " + pool.get().backend() + " backend runs none: use backend pytorch, or a BPE "
              + "encoding such as cl100k_base");
          break;
        }
      }
    }
    if (tenants && keys.isEmpty()) {
      r.error(m.get("tenant_isolation").getValueNode(), p + ".tenant_isolation", "scopes conversations and the KV cache "
          + "per API key, so it needs affinity.api_keys");
    }
    NodeTuple requireNode = m.get("require_internal_auth");
    return new AffinityBlock(new AffinitySettings(model, headers, debug, accessLog, keys, allowParams, timeout, maxBody,
        tokenizer, requireAuth, openStorage, selectionTtl, maxPrompt, tenants,
        maxConnections, finalHeader, idleTtl, softMargin, ioThreads, maxQueuedRequests, maxQueuedTokens, warmUp,
        new AgentSettings(agentPriority, promotion, kvRetention), shared, prefixBytes, keptTurnBytes), ctx, gen, requireNode == null ? t.getKeyNode() : requireNode.getValueNode());
  }

  /**
   * A BPE encoding's name or {@code model} as written; anything else is a model's tokenizer directory, resolved
   * against the config file's folder, which must hold a {@code tokenizer.json}.
   */
  private String tokenizerValue(String value, NodeTuple v, String k) {
    if (AffinitySettings.namesCodec(value)) {
      return value;
    }
    java.nio.file.Path dir = r.resolve(value);
    if (!java.nio.file.Files.isRegularFile(dir.resolve("tokenizer.json"))) {
      r.error(v.getValueNode(), k, "is neither a BPE encoding (" + String.join(", ", AffinitySettings.BPE_ENCODINGS)
          + "), nor model, nor a model's tokenizer directory: " + dir + (java.nio.file.Files.isDirectory(dir)
          ? " has no tokenizer.json" : " does not exist"));
      return value;
    }
    return dir.toString();
  }

  private Optional<String> accessLog(NodeTuple v, String k) {
    Object plain = r.plain(v.getValueNode());
    if (plain instanceof Boolean b) {
      return b ? Optional.of("-") : Optional.empty();
    }
    if (plain instanceof String s && !s.isBlank()) {
      return Optional.of(s);
    }
    r.error(v.getValueNode(), k, "expected true, false, \"-\" (stdout) or a file path, found " + YamlReader.describe(v.getValueNode()));
    return Optional.empty();
  }

  /** Convenience keys of a worker pool and the executor keys they set. */
  private static final Map<String, String> POOL_SHORTCUTS = Map.of(
      "ranks", "num_ranks",
      "preset", "preset",
      "kv_blocks_per_rank", "kv_blocks_per_rank",
      "tokens_per_block", "tokens_per_block",
      "max_batch_size", "max_batch_size",
      "max_num_tokens", "max_num_tokens");

  @SuppressWarnings("unchecked")
  private WorkerPool pool(NodeTuple t, String path) {
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), path);
    int instances = 1;
    String backend = "sim";
    Map<String, Object> exec = new LinkedHashMap<>();
    Map<String, Object> shortcuts = new LinkedHashMap<>();
    Map<String, NodeTuple> shortcutNodes = new HashMap<>();
    Double timeScale = null;
    long maxSeqLen = 0;
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = path + "." + e.getKey();
      NodeTuple v = e.getValue();
      switch (e.getKey()) {
        case "instances" -> instances = r.integer(v, k, 1, 4096).map(Long::intValue).orElse(1);
        case "backend" -> backend = r.string(v, k).orElse(backend);
        case "time_scale" -> timeScale = r.number(v, k, 0).orElse(null);
        case "max_seq_len" -> maxSeqLen = r.integer(v, k, 1, Integer.MAX_VALUE).orElse(0L);
        case "executor" -> {
          Object plain = r.plain(v.getValueNode());
          if (plain instanceof Map<?, ?> pm) {
            exec.putAll((Map<String, Object>) pm);
          } else {
            r.error(v.getValueNode(), k, "expected a mapping of executor settings (docs/cpu-executor.md), found "
                + YamlReader.describe(v.getValueNode()));
          }
        }
        default -> {
          if (POOL_SHORTCUTS.containsKey(e.getKey())) {
            boolean text = e.getKey().equals("preset");
            Optional<?> val = text ? r.string(v, k) : r.integer(v, k, 1, Integer.MAX_VALUE);
            val.ifPresent(x -> {
              shortcuts.put(POOL_SHORTCUTS.get(e.getKey()), x);
              shortcutNodes.put(POOL_SHORTCUTS.get(e.getKey()), v);
            });
          } else {
            r.error(v.getKeyNode(), k, "unknown key (known: instances, backend, ranks, preset, kv_blocks_per_rank, "
                + "tokens_per_block, max_batch_size, max_num_tokens, time_scale, max_seq_len, executor)");
          }
        }
      }
    }
    for (Map.Entry<String, Object> s : shortcuts.entrySet()) {
      if (exec.containsKey(s.getKey()) && !Objects.equals(String.valueOf(exec.get(s.getKey())), String.valueOf(s.getValue()))) {
        r.error(shortcutNodes.get(s.getKey()).getValueNode(), path + "." + s.getKey(),
            "conflicts with " + path + ".executor." + s.getKey() + " (" + exec.get(s.getKey()) + ")");
      }
      exec.putIfAbsent(s.getKey(), s.getValue());
    }
    if (timeScale != null) {
      Map<String, Object> clock = exec.get("clock") instanceof Map<?, ?> c
          ? new LinkedHashMap<>((Map<String, Object>) c) : new LinkedHashMap<>();
      clock.putIfAbsent("mode", "real");
      clock.put("time_scale", timeScale);
      exec.put("clock", clock);
    }
    return new WorkerPool(instances, backend, Collections.unmodifiableMap(exec), maxSeqLen, r.loc(t.getKeyNode()));
  }
}
