package dev.affinity.config;

import java.io.IOException;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads TensorRT-LLM's disaggregated server YAML (reference trtllm-disagg.md §6) with the same keys,
 * defaults and validation, plus Affinity's {@code affinity:} block. Every error is collected, each
 * naming the file, key path, line and column, what was expected and what was found; a valid config
 * comes back with the warnings of {@link ConfigWarnings}.
 */
public final class ConfigLoader {
  /** Top-level keys with a meaning of their own; any other top-level key is inherited by both sections. */
  static final Set<String> TOP_LEVEL_KEYS = Set.of(
      "hostname", "port", "context_servers", "generation_servers", "max_retries", "schedule_style", "node_id",
      "conditional_disagg_config", "otlp_config", "disagg_cluster", "perf_metrics_max_requests",
      "return_perf_metrics", "perf_metrics_output_dir", "allow_request_chat_template", "gen_strip_message_history",
      "gen_tokids_ctxbytes", "num_workers", "disagg_coordinator_url", "server_keep_alive_timeout",
      "internal_request_auth_key", "conversation_affinity_header_for_subagents", "subagent_affinity_scope",
      "affinity");
  private static final List<String> ROUTER_ADOPTED = List.of("max_batch_size", "max_num_tokens");

  private ConfigLoader() {}

  public static LoadedConfig load(Path path) throws IOException {
    return parse(Files.readString(path, StandardCharsets.UTF_8), path.toString());
  }

  /** Parses YAML text; {@code source} names it in messages. Throws {@link ConfigException} with every error. */
  public static LoadedConfig parse(String yaml, String source) {
    Objects.requireNonNull(yaml, "yaml");
    YamlReader r = new YamlReader(source);
    Node root;
    try {
      LoaderOptions opts = new LoaderOptions();
      opts.setAllowDuplicateKeys(false);
      opts.setMaxAliasesForCollections(50);
      root = new Yaml(new SafeConstructor(opts)).compose(new java.io.StringReader(yaml));
    } catch (MarkedYAMLException e) {
      Mark m = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
      Location at = m == null ? Location.unknown(source) : new Location(source, m.getLine() + 1, m.getColumn() + 1);
      throw new ConfigException(List.of(new ConfigProblem(at, "", "invalid YAML: " + e.getProblem())));
    } catch (YAMLException e) {
      throw new ConfigException(List.of(new ConfigProblem(Location.unknown(source), "", "invalid YAML: " + e.getMessage())));
    }
    if (root == null) {
      throw new ConfigException(List.of(new ConfigProblem(Location.unknown(source), "",
          "the file is empty; expected a mapping with context_servers and generation_servers")));
    }
    DisaggConfig cfg = new Builder(r, root).build();
    if (!r.problems().isEmpty()) {
      List<ConfigProblem> sorted = new ArrayList<>(r.problems());
      sorted.sort(java.util.Comparator.comparingInt((ConfigProblem p) -> p.location().line())
          .thenComparingInt(p -> p.location().column()));
      throw new ConfigException(sorted);
    }
    return new LoadedConfig(cfg, ConfigWarnings.of(cfg));
  }

  /** Reads one document; fields are filled as keys are read. */
  private static final class Builder {
    private final YamlReader r;
    private final Node root;
    private final Map<String, NodeTuple> top;

    Builder(YamlReader r, Node root) {
      this.r = r;
      this.root = root;
      this.top = r.entries(root, "");
    }

    private Optional<NodeTuple> get(String key) {
      return Optional.ofNullable(top.get(key));
    }

    DisaggConfig build() {
      String hostname = get("hostname").flatMap(t -> r.string(t, "hostname")).orElse("localhost");
      int port = get("port").flatMap(t -> r.integer(t, "port", 1, 65535)).map(Long::intValue).orElse(8000);
      int maxRetries = get("max_retries").flatMap(t -> r.integer(t, "max_retries", 0, 100)).map(Long::intValue).orElse(1);
      ScheduleStyle style = get("schedule_style").flatMap(this::scheduleStyle).orElse(ScheduleStyle.CONTEXT_FIRST);
      int nodeId = get("node_id").flatMap(t -> r.integer(t, "node_id", 0, 255)).map(Long::intValue).orElseGet(ConfigLoader::defaultNodeId);
      int perfMax = get("perf_metrics_max_requests").flatMap(t -> r.integer(t, "perf_metrics_max_requests", 0, Integer.MAX_VALUE)).map(Long::intValue).orElse(0);
      boolean returnPerf = get("return_perf_metrics").flatMap(t -> r.bool(t, "return_perf_metrics")).orElse(false);
      Optional<String> perfDir = get("perf_metrics_output_dir").flatMap(t -> r.string(t, "perf_metrics_output_dir"));
      boolean allowTemplate = get("allow_request_chat_template").flatMap(t -> r.bool(t, "allow_request_chat_template")).orElse(false);
      boolean strip = get("gen_strip_message_history").flatMap(t -> r.bool(t, "gen_strip_message_history")).orElse(false);
      boolean tokids = get("gen_tokids_ctxbytes").flatMap(t -> r.bool(t, "gen_tokids_ctxbytes")).orElse(false);
      int numWorkers = get("num_workers").flatMap(t -> r.integer(t, "num_workers", 1, 1024)).map(Long::intValue).orElse(1);
      Optional<String> coordinator = get("disagg_coordinator_url").flatMap(t -> r.string(t, "disagg_coordinator_url"));
      int keepAlive = get("server_keep_alive_timeout").flatMap(t -> r.integer(t, "server_keep_alive_timeout", 0, 86400)).map(Long::intValue).orElse(10);
      Optional<String> authKey = get("internal_request_auth_key").flatMap(t -> r.string(t, "internal_request_auth_key"));
      Optional<String> subagentHeader = get("conversation_affinity_header_for_subagents")
          .flatMap(t -> r.string(t, "conversation_affinity_header_for_subagents")).map(String::strip).filter(s -> !s.isEmpty());
      subagentHeader.ifPresent(h -> checkHeaderName(h, top.get("conversation_affinity_header_for_subagents")));
      SubagentScope scope = get("subagent_affinity_scope").flatMap(this::scope).orElse(SubagentScope.CONTEXT);
      Optional<String> otlp = get("otlp_config").flatMap(this::otlp);
      Optional<DisaggConfig.ConditionalDisaggConfig> conditional = get("conditional_disagg_config").flatMap(this::conditional);
      Optional<DisaggConfig.DisaggClusterConfig> cluster = get("disagg_cluster").flatMap(this::cluster);

      Map<String, Object> inherited = new LinkedHashMap<>();
      Map<String, NodeTuple> inheritedNodes = new LinkedHashMap<>();
      for (Map.Entry<String, NodeTuple> e : top.entrySet()) {
        if (!TOP_LEVEL_KEYS.contains(e.getKey())) {
          inherited.put(e.getKey(), r.plain(e.getValue().getValueNode()));
          inheritedNodes.put(e.getKey(), e.getValue());
        }
      }
      if (returnPerf || perfDir.isPresent()) {
        inherited.put("return_perf_metrics", true);
      }

      AffinityBlock aff = get("affinity").map(this::affinity).orElseGet(AffinityBlock::empty);
      ServerSection ctx = section("context_servers", inherited, inheritedNodes, aff.context, cluster.isPresent());
      ServerSection gen = section("generation_servers", inherited, inheritedNodes, aff.generation, cluster.isPresent());
      checkDuplicateUrls(ctx, gen);

      if (conditional.isPresent() && gen != null && !"kv_cache_aware".equals(gen.router().type())) {
        r.error(top.get("conditional_disagg_config").getKeyNode(), "conditional_disagg_config",
            "requires generation_servers.router.type: kv_cache_aware (found " + gen.router().type()
                + "): the decision needs the generation workers' prefix match");
      }
      if (ctx == null || gen == null) {
        return null;
      }
      return new DisaggConfig(r.file(), hostname, port, ctx, gen, maxRetries, style, nodeId, conditional, otlp,
          cluster, perfMax, returnPerf, perfDir, allowTemplate, strip, tokids, numWorkers, coordinator, keepAlive,
          authKey, subagentHeader, scope, inherited, aff.settings);
    }

    private void checkHeaderName(String h, NodeTuple t) {
      if (!h.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
        r.error(t.getValueNode(), "conversation_affinity_header_for_subagents",
            "expected an HTTP header name (letters, digits and -), found \"" + h + "\"");
      }
    }

    private Optional<ScheduleStyle> scheduleStyle(NodeTuple t) {
      Optional<String> s = r.string(t, "schedule_style");
      if (s.isEmpty()) {
        return Optional.empty();
      }
      switch (s.get().toLowerCase(Locale.ROOT)) {
        case "context_first", "0":
          return Optional.of(ScheduleStyle.CONTEXT_FIRST);
        case "generation_first", "1":
          return Optional.of(ScheduleStyle.GENERATION_FIRST);
        default:
          r.error(t.getValueNode(), "schedule_style", "expected context_first or generation_first, found \"" + s.get() + "\"");
          return Optional.empty();
      }
    }

    private Optional<SubagentScope> scope(NodeTuple t) {
      Optional<String> s = r.string(t, "subagent_affinity_scope");
      if (s.isEmpty()) {
        return Optional.empty();
      }
      switch (s.get().toLowerCase(Locale.ROOT)) {
        case "context":
          return Optional.of(SubagentScope.CONTEXT);
        case "both":
          return Optional.of(SubagentScope.BOTH);
        default:
          r.error(t.getValueNode(), "subagent_affinity_scope", "expected context or both, found \"" + s.get() + "\"");
          return Optional.empty();
      }
    }

    private Optional<String> otlp(NodeTuple t) {
      Map<String, NodeTuple> m = r.entries(t.getValueNode(), "otlp_config");
      Optional<String> endpoint = Optional.empty();
      for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
        if (e.getKey().equals("otlp_traces_endpoint")) {
          endpoint = r.string(e.getValue(), "otlp_config.otlp_traces_endpoint");
        } else {
          r.error(e.getValue().getKeyNode(), "otlp_config." + e.getKey(), "unknown key (known: otlp_traces_endpoint)");
        }
      }
      return endpoint;
    }

    private Optional<DisaggConfig.ConditionalDisaggConfig> conditional(NodeTuple t) {
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

    private Optional<DisaggConfig.DisaggClusterConfig> cluster(NodeTuple t) {
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
        switch (e.getKey()) {
          case "cluster_uri" -> uri = r.string(e.getValue(), k).orElse(null);
          case "cluster_name" -> name = r.string(e.getValue(), k).orElse("");
          case "heartbeat_interval_sec" -> heartbeat = r.integer(e.getValue(), k, 1, 3600).map(Long::intValue).orElse(5);
          case "inactive_timeout_sec" -> inactive = r.integer(e.getValue(), k, 1, 86400).map(Long::intValue).orElse(10);
          case "minimal_instances" -> {
            for (Map.Entry<String, NodeTuple> mi : r.entries(e.getValue().getValueNode(), k).entrySet()) {
              String kk = k + "." + mi.getKey();
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
        r.error(t.getKeyNode(), p + ".cluster_uri", "is required");
        return Optional.empty();
      }
      return Optional.of(new DisaggConfig.DisaggClusterConfig(uri, name, minCtx, minGen, heartbeat, inactive));
    }

    // -------------------------------------------------------------------------------------------
    // Server sections

    private ServerSection section(String name, Map<String, Object> inherited, Map<String, NodeTuple> inheritedNodes,
        Optional<WorkerPool> embedded, boolean dynamic) {
      NodeTuple t = top.get(name);
      if (t == null) {
        r.error(root, name, "is required (a mapping with num_instances, urls and router)");
        return null;
      }
      Map<String, NodeTuple> m = r.entries(t.getValueNode(), name);
      Long numInstances = null;
      List<String> urls = null;
      RouterConfig router = null;
      Map<String, Object> workerArgs = new LinkedHashMap<>();
      for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
        String k = name + "." + e.getKey();
        switch (e.getKey()) {
          case "num_instances" -> numInstances = r.integer(e.getValue(), k, 0, 100000).orElse(null);
          case "urls" -> urls = urls(e.getValue(), k);
          case "router" -> router = router(e.getValue(), k);
          default -> workerArgs.put(e.getKey(), r.plain(e.getValue().getValueNode()));
        }
      }
      for (Map.Entry<String, Object> e : inherited.entrySet()) {
        if (workerArgs.containsKey(e.getKey()) && !Objects.equals(workerArgs.get(e.getKey()), e.getValue())) {
          NodeTuple own = m.get(e.getKey());
          r.error(own == null ? t.getKeyNode() : own.getValueNode(), name + "." + e.getKey(),
              "conflicts with the top-level " + e.getKey() + " (" + e.getValue() + ", line "
                  + (inheritedNodes.containsKey(e.getKey()) ? r.loc(inheritedNodes.get(e.getKey()).getValueNode()).line() : 0)
                  + "), which every section inherits; found " + workerArgs.get(e.getKey()));
        } else {
          workerArgs.put(e.getKey(), e.getValue());
        }
      }
      if (router == null) {
        router = new RouterConfig(RouterConfig.DEFAULT_TYPE, r.loc(t.getKeyNode()), Map.of(), Map.of());
      }
      router = adoptRouterArgs(router, workerArgs);

      int instances;
      if (embedded.isPresent()) {
        WorkerPool pool = embedded.get();
        if (urls != null && !urls.isEmpty()) {
          r.error(m.get("urls").getKeyNode(), name + ".urls", "cannot be combined with affinity.workers."
              + fleetName(name) + " (line " + pool.location().line() + "): a fleet is either URLs or embedded workers");
        }
        if (numInstances != null && numInstances != pool.instances()) {
          r.error(m.get("num_instances").getValueNode(), name + ".num_instances", "is " + numInstances
              + " but affinity.workers." + fleetName(name) + ".instances is " + pool.instances());
        }
        instances = pool.instances();
        urls = List.of();
      } else {
        long n = numInstances == null ? 1 : numInstances;
        if (urls == null) {
          urls = List.of();
        }
        if (dynamic) {
          if (!urls.isEmpty()) {
            r.error(m.get("urls").getKeyNode(), name + ".urls", "cannot be combined with disagg_cluster (membership is dynamic)");
          }
        } else if (urls.size() != n) {
          r.error(m.containsKey("urls") ? m.get("urls").getValueNode() : t.getKeyNode(), name + ".urls",
              "has " + urls.size() + " entries but num_instances is " + n + (numInstances == null ? " (the default)" : "")
                  + "; list one host:port per instance" + (numInstances == null && urls.size() > 1
                      ? " and set num_instances: " + urls.size() : ""));
        }
        instances = (int) n;
      }
      return new ServerSection(name, instances, urls, router, workerArgs, embedded, r.loc(t.getKeyNode()));
    }

    private static String fleetName(String section) {
      return section.startsWith("context") ? "context" : "generation";
    }

    private List<String> urls(NodeTuple t, String path) {
      List<String> out = r.stringList(t, path).orElse(List.of());
      Node seq = t.getValueNode();
      for (int i = 0; i < out.size(); i++) {
        String u = out.get(i).strip();
        String hostPort = u.replaceFirst("^https?://", "");
        int colon = hostPort.lastIndexOf(':');
        boolean ok = colon > 0 && colon < hostPort.length() - 1;
        if (ok) {
          try {
            int port = Integer.parseInt(hostPort.substring(colon + 1));
            ok = port > 0 && port < 65536;
          } catch (NumberFormatException e) {
            ok = false;
          }
        }
        if (!ok) {
          Node at = seq instanceof SequenceNode s && i < s.getValue().size() ? s.getValue().get(i) : seq;
          r.error(at, path + "[" + i + "]", "expected host:port, found \"" + u + "\"");
        }
        out.set(i, u);
      }
      return new ArrayList<>(out);
    }

    private RouterConfig router(NodeTuple t, String path) {
      Map<String, NodeTuple> m = r.entries(t.getValueNode(), path);
      String type = RouterConfig.DEFAULT_TYPE;
      Location typeLoc = r.loc(t.getKeyNode());
      Map<String, Object> args = new LinkedHashMap<>();
      Map<String, Location> locs = new HashMap<>();
      for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
        String k = path + "." + e.getKey();
        if (e.getKey().equals("type")) {
          type = r.string(e.getValue(), k).map(s -> s.strip().toLowerCase(Locale.ROOT)).orElse(type);
          typeLoc = r.loc(e.getValue().getValueNode());
        } else if (e.getKey().equals("args")) {
          Object nested = r.plain(e.getValue().getValueNode());
          String example = nested instanceof Map<?, ?> nm && !nm.isEmpty()
              ? nm.entrySet().iterator().next().getKey() + ": " + nm.entrySet().iterator().next().getValue()
              : "max_sessions: 100000";
          r.error(e.getValue().getKeyNode(), k, "router arguments sit beside type, not under args: "
              + "TensorRT-LLM silently ignores a nested args map. Write `router: {type: " + type + ", " + example + "}`");
        } else {
          args.put(e.getKey(), r.plain(e.getValue().getValueNode()));
          locs.put(e.getKey(), r.loc(e.getValue().getValueNode()));
        }
      }
      return new RouterConfig(type, typeLoc, args, locs);
    }

    /** max_batch_size, max_num_tokens and kv_cache_config.tokens_per_block become router args unless set. */
    private static RouterConfig adoptRouterArgs(RouterConfig router, Map<String, Object> workerArgs) {
      Map<String, Object> args = new LinkedHashMap<>(router.args());
      for (String k : ROUTER_ADOPTED) {
        if (workerArgs.containsKey(k)) {
          args.putIfAbsent(k, workerArgs.get(k));
        }
      }
      if (workerArgs.get("kv_cache_config") instanceof Map<?, ?> kv && kv.containsKey("tokens_per_block")) {
        args.putIfAbsent("tokens_per_block", kv.get("tokens_per_block"));
      }
      return new RouterConfig(router.type(), router.typeLocation(), args, router.argLocations());
    }

    private void checkDuplicateUrls(ServerSection ctx, ServerSection gen) {
      for (ServerSection s : new ServerSection[] {ctx, gen}) {
        if (s == null) {
          continue;
        }
        Set<String> seen = new HashSet<>();
        for (String u : s.urls()) {
          if (!seen.add(u)) {
            r.error(top.get(s.name()).getValueNode(), s.name() + ".urls", "lists " + u + " twice");
          }
        }
      }
    }

    // -------------------------------------------------------------------------------------------
    // The affinity: block

    private record AffinityBlock(AffinitySettings settings, Optional<WorkerPool> context, Optional<WorkerPool> generation) {
      static AffinityBlock empty() {
        return new AffinityBlock(AffinitySettings.defaults(), Optional.empty(), Optional.empty());
      }
    }

    private AffinityBlock affinity(NodeTuple t) {
      String p = "affinity";
      Map<String, NodeTuple> m = r.entries(t.getValueNode(), p);
      AffinitySettings d = AffinitySettings.defaults();
      String model = d.model();
      List<String> headers = d.sessionHeaders();
      boolean debug = d.debugHeaders();
      Optional<String> accessLog = d.accessLog();
      List<String> keys = d.apiKeys();
      boolean allowParams = d.allowClientDisaggregatedParams();
      double timeout = d.requestTimeoutSeconds();
      long maxBody = d.maxRequestBodyBytes();
      String tokenizer = d.tokenizer();
      Optional<WorkerPool> ctx = Optional.empty();
      Optional<WorkerPool> gen = Optional.empty();
      for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
        String k = p + "." + e.getKey();
        NodeTuple v = e.getValue();
        switch (e.getKey()) {
          case "model" -> model = r.string(v, k).filter(s -> !s.isBlank()).orElse(model);
          case "session_headers" -> headers = r.stringList(v, k).map(l -> l.stream().map(h -> h.strip().toLowerCase(Locale.ROOT)).toList()).orElse(headers);
          case "debug_headers" -> debug = r.bool(v, k).orElse(debug);
          case "access_log" -> accessLog = accessLog(v, k);
          case "api_keys" -> keys = r.stringList(v, k).orElse(keys);
          case "allow_client_disaggregated_params" -> allowParams = r.bool(v, k).orElse(allowParams);
          case "request_timeout_seconds" -> timeout = r.number(v, k, 0).orElse(timeout);
          case "max_request_body_bytes" -> maxBody = r.integer(v, k, 1, Long.MAX_VALUE).orElse(maxBody);
          case "tokenizer" -> tokenizer = r.string(v, k).orElse(tokenizer);
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
          default -> r.error(v.getKeyNode(), k, "unknown key (known: model, session_headers, debug_headers, access_log, "
              + "api_keys, allow_client_disaggregated_params, request_timeout_seconds, max_request_body_bytes, tokenizer, workers)");
        }
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
      return new AffinityBlock(new AffinitySettings(model, headers, debug, accessLog, keys, allowParams, timeout, maxBody,
          tokenizer), ctx, gen);
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
      for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
        String k = path + "." + e.getKey();
        NodeTuple v = e.getValue();
        switch (e.getKey()) {
          case "instances" -> instances = r.integer(v, k, 1, 4096).map(Long::intValue).orElse(1);
          case "backend" -> backend = r.string(v, k).orElse(backend);
          case "time_scale" -> timeScale = r.number(v, k, 0).orElse(null);
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
                  + "tokens_per_block, max_batch_size, max_num_tokens, time_scale, executor)");
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
      return new WorkerPool(instances, backend, Collections.unmodifiableMap(exec), r.loc(t.getKeyNode()));
    }
  }

  /** Upstream defaults node_id to uuid.getnode() % 256: the last byte of this host's first MAC address. */
  static int defaultNodeId() {
    try {
      var ifaces = NetworkInterface.getNetworkInterfaces();
      while (ifaces != null && ifaces.hasMoreElements()) {
        byte[] mac = ifaces.nextElement().getHardwareAddress();
        if (mac != null && mac.length > 0) {
          return mac[mac.length - 1] & 0xFF;
        }
      }
    } catch (java.net.SocketException | SecurityException e) {
      // no interfaces visible: fall back to 0
    }
    return 0;
  }
}
