package dev.affinity.config;

import java.io.IOException;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * Reads TensorRT-LLM's disaggregated server YAML ({@code tensorrt_llm/llmapi/disagg_utils.py}) with the same keys,
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

  /** Optional sections that upstream treats as absent when null or empty ({@code if section: ...}). */
  static final Set<String> OPTIONAL_SECTIONS = Set.of("conditional_disagg_config", "otlp_config", "disagg_cluster",
      "affinity");

  private ConfigLoader() {}

  public static LoadedConfig load(Path path) throws IOException {
    return load(path, ConfigSecrets.NONE);
  }

  /** Reads {@code path} with the secrets given from outside it ({@link ConfigSecrets}). */
  public static LoadedConfig load(Path path, ConfigSecrets secrets) throws IOException {
    return parse(Files.readString(path, StandardCharsets.UTF_8), path.toString(), secrets);
  }

  /** Parses YAML text; {@code source} names it in messages. Throws {@link ConfigException} with every error. */
  public static LoadedConfig parse(String yaml, String source) {
    return parse(yaml, source, ConfigSecrets.NONE);
  }

  /**
   * Parses YAML text with the secrets given from outside it: each takes the place of its YAML key, and the YAML
   * setting that key as well is an error naming both.
   */
  public static LoadedConfig parse(String yaml, String source, ConfigSecrets secrets) {
    Objects.requireNonNull(yaml, "yaml");
    Objects.requireNonNull(secrets, "secrets");
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
    Builder builder = new Builder(r, root, secrets);
    DisaggConfig cfg = builder.build();
    if (!r.problems().isEmpty()) {
      List<ConfigProblem> sorted = new ArrayList<>(r.problems());
      sorted.sort(java.util.Comparator.comparingInt((ConfigProblem p) -> p.location().line())
          .thenComparingInt(p -> p.location().column()));
      throw new ConfigException(sorted);
    }
    List<ConfigWarning> warnings = new ArrayList<>(builder.notes);
    warnings.addAll(ConfigWarnings.of(cfg));
    return new LoadedConfig(cfg, warnings);
  }

  /** Reads one document; fields are filled as keys are read. */
  private static final class Builder {
    private final YamlReader r;
    private final Map<String, NodeTuple> top;
    private final ServerSectionReader sections;
    private final ConfigSecrets secrets;
    /** Warnings that need the node of a key (where it was written). */
    final List<ConfigWarning> notes = new ArrayList<>();

    Builder(YamlReader r, Node root, ConfigSecrets secrets) {
      this.r = r;
      this.secrets = secrets;
      this.top = r.entries(root, "");
      this.sections = new ServerSectionReader(r, root, top);
    }

    /**
     * A top-level key; an explicit null is absent, as upstream's keyword defaults make it, and so is an
     * empty mapping for the optional sections ({@code conditional_disagg_config: {}} is falsy there).
     */
    private Optional<NodeTuple> get(String key) {
      NodeTuple t = top.get(key);
      if (t == null || YamlReader.isNull(t.getValueNode())) {
        return Optional.empty();
      }
      if (OPTIONAL_SECTIONS.contains(key) && YamlReader.isEmptyMapping(t.getValueNode())) {
        return Optional.empty();
      }
      return Optional.of(t);
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
      if (numWorkers > 1) {
        notes.add(new ConfigWarning(r.loc(top.get("num_workers").getValueNode()), "num_workers",
            "is " + numWorkers + ", but Affinity runs one frontend process: its event loops and routers already use "
                + "every core, so the setting is accepted and has no effect.",
            "drop num_workers; to run more frontends, start several behind a load balancer sharing an etcd "
                + "disagg_cluster (docs/workers.md, several frontends)"));
      }
      Optional<String> coordinator = get("disagg_coordinator_url").flatMap(t -> r.string(t, "disagg_coordinator_url"));
      coordinator.ifPresent(url -> notes.add(new ConfigWarning(r.loc(top.get("disagg_coordinator_url").getValueNode()),
          "disagg_coordinator_url", "is set, but Affinity has no coordinator: frontends share conversation pins "
              + "through etcd instead, so " + url + " is never contacted.",
          "drop disagg_coordinator_url and give every frontend the same disagg_cluster with cluster_uri: etcd://HOST:PORT")));
      int keepAlive = get("server_keep_alive_timeout").flatMap(t -> r.integer(t, "server_keep_alive_timeout", 0, 86400)).map(Long::intValue).orElse(10);
      Optional<String> authKey = authKey();
      List<String> subagentHeaders = get("conversation_affinity_header_for_subagents").map(this::subagentHeaders)
          .orElse(List.of());
      Optional<String> subagentHeader = subagentHeaders.stream().findFirst();
      SubagentScope scope = get("subagent_affinity_scope").flatMap(this::scope).orElse(SubagentScope.CONTEXT);
      OptionalSections optional = new OptionalSections(r, notes);
      Optional<String> otlp = get("otlp_config").flatMap(optional::otlp);
      Optional<DisaggConfig.ConditionalDisaggConfig> conditional = get("conditional_disagg_config")
          .flatMap(optional::conditional);
      Optional<DisaggConfig.DisaggClusterConfig> cluster = get("disagg_cluster").flatMap(optional::cluster);

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

      AffinityBlockReader.AffinityBlock aff = get("affinity").map(new AffinityBlockReader(r, secrets.apiKeys())::read)
          .orElseGet(() -> AffinityBlockReader.AffinityBlock.empty(secrets.apiKeys()));
      boolean dynamic = get("disagg_cluster").isPresent(); // even when invalid: one error, not a second one
      ServerSection ctx = sections.read("context_servers", inherited, inheritedNodes, aff.context(), dynamic);
      ServerSection gen = sections.read("generation_servers", inherited, inheritedNodes, aff.generation(), dynamic);
      sections.checkDuplicateUrls(ctx, gen);
      sections.reportSectionsWithoutWorkers();
      if (aff.settings().requireInternalAuth() && authKey.filter(k -> !k.isEmpty()).isEmpty()) {
        r.error(aff.requireInternalAuthNode(), "affinity.require_internal_auth", "is true but internal_request_auth_key "
            + "is not set: set the key shared with every worker"
            + subagentHeader.map(h -> " (the sub-agent affinity id of " + h + " is only sent signed)").orElse("")
            + ", or drop require_internal_auth to start with a warning");
      }
      subagentHeaders.forEach(h -> parentHeaderIsNotASessionHeader(h, aff.settings()));
      cluster.ifPresent(c -> checkStorageScope(c, hostname));
      cluster.ifPresent(c -> checkStorageAuth(c, aff.settings(), authKey));

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
          authKey, subagentHeaders, scope, inherited, aff.settings());
    }

    /**
     * {@code internal_request_auth_key}: the one given from outside the YAML ({@link ConfigSecrets}), which then
     * must not set it, or the YAML's.
     */
    private Optional<String> authKey() {
      Optional<String> yaml = get("internal_request_auth_key").flatMap(t -> r.string(t, "internal_request_auth_key"));
      if (secrets.internalRequestAuthKey().isEmpty()) {
        return yaml;
      }
      ConfigSecrets.Given<String> given = secrets.internalRequestAuthKey().get();
      get("internal_request_auth_key").ifPresent(t -> r.error(t.getKeyNode(), "internal_request_auth_key",
          "is also given by " + given.origin() + ": keep the key in one place (remove it from the YAML)"));
      return Optional.of(given.value());
    }

    /** Upstream's docs ask for a separate parent header: one that is also a session header names both ids. */
    private void parentHeaderIsNotASessionHeader(String header, AffinitySettings a) {
      if (a.sessionHeaders().contains(header.toLowerCase(Locale.ROOT))) {
        notes.add(new ConfigWarning(r.loc(top.get("conversation_affinity_header_for_subagents").getValueNode()),
            "conversation_affinity_header_for_subagents", "is " + header + ", which is also a session header: the "
                + "same value is then read as the request's own conversation id and as its parent's, so a sub-agent "
                + "cannot be told from its parent.",
            "use a header of its own for the parent id (e.g. X-Dynamo-Parent-Session-ID), or remove " + header
                + " from affinity.session_headers"));
      }
    }

    /**
     * The HTTP cluster storage is served by this frontend with at most a shared key, so, as upstream
     * ({@code validate_http_cluster_storage_scope}), it is for workers on this host only: the URI and the
     * frontend's hostname must both be loopback. etcd has no such limit.
     */
    private void checkStorageScope(DisaggConfig.DisaggClusterConfig c, String hostname) {
      NodeTuple t = top.get("disagg_cluster");
      if (!c.isHttp()) {
        return;
      }
      String uriHost = c.httpHost();
      if (!DisaggConfig.DisaggClusterConfig.isLoopback(uriHost) || !DisaggConfig.DisaggClusterConfig.isLoopback(hostname)) {
        r.error(t.getKeyNode(), "disagg_cluster.cluster_uri", "the HTTP cluster storage (" + c.clusterUri()
            + ") is loopback-only: it is served by this frontend to this host, so the URI and hostname ("
            + hostname + ") must both be localhost, 127.0.0.1 or ::1. For workers on other hosts use "
            + "cluster_uri: etcd://HOST:PORT");
      }
    }

    /**
     * With API keys the frontend is a trust boundary, and an open membership would let any process on its host
     * register a worker that then receives tenants' prompts: the HTTP cluster storage then needs
     * {@code internal_request_auth_key}, which signs every storage request (docs/workers.md).
     */
    private void checkStorageAuth(DisaggConfig.DisaggClusterConfig c, AffinitySettings settings, Optional<String> authKey) {
      if (c.isHttp() && !settings.apiKeys().isEmpty() && authKey.filter(k -> !k.isEmpty()).isEmpty()) {
        r.error(top.get("disagg_cluster").getKeyNode(), "disagg_cluster.cluster_uri", "the HTTP cluster storage ("
            + c.clusterUri() + ") would be open to every process on this host while affinity.api_keys guards the "
            + "completions: set internal_request_auth_key (the frontend then requires every storage request signed "
            + "with it, and Affinity workers sign with the same key), or use cluster_uri: etcd://HOST:PORT");
      }
    }

    /**
     * {@code conversation_affinity_header_for_subagents}: one header name (upstream's form) or a list of them, in
     * priority order (the first present on a request wins). Blank is off; every name must be a header name.
     */
    private List<String> subagentHeaders(NodeTuple t) {
      String key = "conversation_affinity_header_for_subagents";
      if (!(t.getValueNode() instanceof SequenceNode seq)) {
        Optional<String> one = r.string(t, key).map(String::strip).filter(s -> !s.isEmpty());
        one.ifPresent(h -> checkHeaderName(h, t.getValueNode(), key));
        return one.stream().toList();
      }
      List<String> names = r.stringList(t, key).orElse(List.of());
      if (seq.getValue().isEmpty()) {
        r.error(seq, key, "is an empty list: name at least one header (e.g. X-Dynamo-Parent-Session-ID), or drop the key");
      }
      if (names.size() != seq.getValue().size()) {
        return List.of(); // an item that is not a string, reported
      }
      List<String> out = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        String h = names.get(i).strip();
        String path = key + "[" + i + "]";
        if (checkHeaderName(h, seq.getValue().get(i), path)) {
          if (out.stream().anyMatch(h::equalsIgnoreCase)) {
            r.error(seq.getValue().get(i), path, "repeats the header " + h);
          } else {
            out.add(h);
          }
        }
      }
      return out;
    }

    private boolean checkHeaderName(String h, Node at, String path) {
      if (!h.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
        r.error(at, path, "expected an HTTP header name (letters, digits and -), found \"" + h + "\"");
        return false;
      }
      return true;
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
