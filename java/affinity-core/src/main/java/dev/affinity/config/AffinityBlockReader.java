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
      "warm_up_requests", "agent_priority", "agent_priority_promotion_seconds", "kv_retention", "workers", "shared_state");
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
        case "agent_priority" -> agentPriority = r.bool(v, k).orElse(agentPriority);
        case "agent_priority_promotion_seconds" -> promotion = r.number(v, k, 0).orElse(promotion);
        case "kv_retention" -> kvRetention = r.bool(v, k).orElse(kvRetention);
        case "io_threads" -> ioThreads = r.integer(v, k, 0, 4096).map(Long::intValue).orElse(ioThreads);
        case "shared_state" -> shared = sharedState(v, k);
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
        new AgentSettings(agentPriority, promotion, kvRetention), shared), ctx, gen, requireNode == null ? t.getKeyNode() : requireNode.getValueNode());
  }

  /**
   * A BPE encoding's name or {@code model} as written; anything else is a model's tokenizer directory, resolved
   * against the config file's folder, which must hold a {@code tokenizer.json}.
   */
  private String tokenizerValue(String value, NodeTuple v, String k) {
    if (AffinitySettings.namesCodec(value)) {
      return value;
    }
    java.nio.file.Path dir = java.nio.file.Path.of(value);
    if (!dir.isAbsolute() && r.file() != null && !r.file().startsWith("<")) {
      java.nio.file.Path parent = java.nio.file.Path.of(r.file()).toAbsolutePath().getParent();
      dir = parent == null ? dir : parent.resolve(dir);
    }
    dir = dir.toAbsolutePath().normalize();
    if (!java.nio.file.Files.isRegularFile(dir.resolve("tokenizer.json"))) {
      r.error(v.getValueNode(), k, "is neither a BPE encoding (" + String.join(", ", AffinitySettings.BPE_ENCODINGS)
          + "), nor model, nor a model's tokenizer directory: " + dir + (java.nio.file.Files.isDirectory(dir)
          ? " has no tokenizer.json" : " does not exist"));
      return value;
    }
    return dir.toString();
  }

  private static final List<String> SHARED_STATE_KEYS = List.of("nats", "token", "token_file", "user", "password",
      "password_file", "creds_file", "tls_ca_file", "event_retention_seconds", "drain_lease_seconds");

  /** The ways to authenticate to NATS, each with its keys: a client gives at most one way. */
  private static final List<List<String>> SHARED_STATE_AUTH_WAYS = List.of(List.of("token", "token_file"),
      List.of("user", "password", "password_file"), List.of("creds_file"));

  /**
   * {@code affinity.shared_state}: the NATS servers (required), the client's authentication (a token, inline or from
   * {@code token_file}; a user and password, inline or from {@code password_file}; or a credentials file; not two of
   * them), a CA file for TLS, the event retention and the drain lease. Empty (after an error at the key) when the
   * block is not usable.
   */
  private Optional<SharedStateSettings> sharedState(NodeTuple t, String p) {
    Map<String, NodeTuple> m = r.entries(t.getValueNode(), p);
    int errors = r.problems().size();
    List<String> servers = List.of();
    Optional<String> token = Optional.empty();
    Optional<String> tokenFile = Optional.empty();
    Optional<String> user = Optional.empty();
    Optional<String> password = Optional.empty();
    Optional<String> passwordFile = Optional.empty();
    Optional<String> tokenFromFile = Optional.empty();
    Optional<String> passwordFromFile = Optional.empty();
    Optional<String> creds = Optional.empty();
    Optional<String> ca = Optional.empty();
    double retention = SharedStateSettings.DEFAULT_EVENT_RETENTION_SECONDS;
    double lease = SharedStateSettings.DEFAULT_DRAIN_LEASE_SECONDS;
    // the keys given a value (null is absent), for the rules between them
    List<String> given = new java.util.ArrayList<>();
    for (Map.Entry<String, NodeTuple> e : m.entrySet()) {
      String k = p + "." + e.getKey();
      NodeTuple v = e.getValue();
      if (YamlReader.isNull(v.getValueNode()) && SHARED_STATE_KEYS.contains(e.getKey())) {
        continue;
      }
      given.add(e.getKey());
      switch (e.getKey()) {
        case "nats" -> servers = r.string(v, k).map(s -> natsServers(s, v, k)).orElse(List.of());
        case "token" -> token = nonBlank(v, k);
        case "token_file" -> {
          tokenFile = nonBlank(v, k).map(f -> existingFile(f, v, k));
          tokenFromFile = tokenFile.flatMap(f -> secretFile(f, v, k, "the NATS token"));
        }
        case "user" -> user = nonBlank(v, k);
        case "password" -> password = nonBlank(v, k);
        case "password_file" -> {
          passwordFile = nonBlank(v, k).map(f -> existingFile(f, v, k));
          passwordFromFile = passwordFile.flatMap(f -> secretFile(f, v, k, "the NATS user's password"));
        }
        case "creds_file" -> creds = nonBlank(v, k).map(f -> existingFile(f, v, k));
        case "tls_ca_file" -> ca = nonBlank(v, k).map(f -> existingFile(f, v, k));
        case "event_retention_seconds" -> retention = r.number(v, k, 0).orElse(retention);
        case "drain_lease_seconds" -> {
          Optional<Double> x = r.number(v, k, 0);
          if (x.isPresent() && x.get() < 1) {
            r.error(v.getValueNode(), k, "expected a number of seconds >= 1 (the owner refreshes every third of it), "
                + "found " + x.get());
          } else {
            lease = x.orElse(lease);
          }
        }
        default -> r.error(v.getKeyNode(), k, "unknown key (known: " + String.join(", ", SHARED_STATE_KEYS) + ")");
      }
    }
    NodeTuple nats = m.get("nats");
    if (nats == null || YamlReader.isNull(nats.getValueNode())) {
      r.error(nats == null ? t.getKeyNode() : nats.getValueNode(), p + ".nats", "is required: the NATS servers, "
          + "nats://HOST:PORT or tls://HOST:PORT (comma-separated for several)");
    }
    // a secret inline and from a file: two sources of one secret
    for (String inline : List.of("token", "password")) {
      if (given.contains(inline) && given.contains(inline + "_file")) {
        r.error(m.get(inline + "_file").getKeyNode(), p + "." + inline + "_file", "give " + p + "." + inline
            + " or " + p + "." + inline + "_file, not both");
      }
    }
    boolean hasPassword = given.contains("password") || given.contains("password_file");
    if (given.contains("user") && !hasPassword) {
      r.error(m.get("user").getKeyNode(), p + ".password", "is required with " + p + ".user (or " + p
          + ".password_file)");
    } else if (!given.contains("user") && hasPassword) {
      String with = given.contains("password") ? "password" : "password_file";
      r.error(m.get(with).getKeyNode(), p + ".user", "is required with " + p + "." + with);
    }
    // one way to authenticate; the error at creds_file, else at the token's key (a key given: at least two ways are)
    List<String> ways = SHARED_STATE_AUTH_WAYS.stream().map(way -> way.stream().filter(given::contains).findFirst())
        .flatMap(Optional::stream).toList();
    if (ways.size() > 1) {
      String at = given.contains("creds_file") ? "creds_file" : ways.get(0);
      r.error(m.get(at).getKeyNode(), p + "." + at, "give one way to authenticate: token or token_file, or user "
          + "with password or password_file, or creds_file");
    }
    if (r.problems().size() > errors || servers.isEmpty()) {
      return Optional.empty();
    }
    // no error: a file given was read (and the inline secret was not given)
    return Optional.of(new SharedStateSettings(servers, token.isPresent() ? token : tokenFromFile, tokenFile, user,
        password.isPresent() ? password : passwordFromFile, passwordFile, creds, ca, retention, lease));
  }

  /**
   * A secret read from {@code file} (an existing file's absolute path): its text, surrounding whitespace (a trailing
   * newline) stripped, as {@code --auth-key-file} reads its key. An error at the key naming the file (never its
   * content) when the file cannot be read or holds only whitespace; empty, without a second error, when it is no
   * readable file (which {@link #existingFile} reported).
   */
  private Optional<String> secretFile(String file, NodeTuple v, String k, String what) {
    java.nio.file.Path path = java.nio.file.Path.of(file);
    if (!java.nio.file.Files.isRegularFile(path) || !java.nio.file.Files.isReadable(path)) {
      return Optional.empty();
    }
    String text;
    try {
      text = java.nio.file.Files.readString(path, java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException | java.io.UncheckedIOException e) {
      r.error(v.getValueNode(), k, "cannot read " + file + ": " + (e instanceof java.nio.charset.CharacterCodingException
          ? "not UTF-8 text" : e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage())));
      return Optional.empty();
    }
    String secret = text.strip();
    if (secret.isEmpty()) {
      r.error(v.getValueNode(), k, file + " is empty (expected " + what + ")");
      return Optional.empty();
    }
    return Optional.of(secret);
  }

  private Optional<String> nonBlank(NodeTuple v, String k) {
    Optional<String> s = r.string(v, k).map(String::strip);
    if (s.isPresent() && s.get().isEmpty()) {
      r.error(v.getValueNode(), k, "is empty");
      return Optional.empty();
    }
    return s;
  }

  /** {@code nats://HOST:PORT} or {@code tls://HOST:PORT}, comma-separated; an error naming the bad one. */
  private List<String> natsServers(String value, NodeTuple v, String k) {
    List<String> out = new java.util.ArrayList<>();
    for (String part : value.split(",", -1)) {
      String s = part.strip();
      String why = natsServerProblem(s);
      if (why != null) {
        r.error(v.getValueNode(), k, "expected nats://HOST:PORT or tls://HOST:PORT (comma-separated for several), "
            + "found \"" + s + "\"" + why);
        return List.of();
      }
      out.add(s);
    }
    return out;
  }

  /** Null when {@code s} is a NATS server URL, else why not (", ..."). */
  private static String natsServerProblem(String s) {
    if (s.isEmpty()) {
      return ": an empty entry";
    }
    java.net.URI u;
    try {
      u = new java.net.URI(s);
    } catch (java.net.URISyntaxException e) {
      return ": not a URL";
    }
    if (!"nats".equals(u.getScheme()) && !"tls".equals(u.getScheme())) {
      return u.getScheme() == null ? ": no scheme" : ": the scheme must be nats or tls";
    }
    if (u.getHost() == null || u.getHost().isEmpty()) {
      return ": no host";
    }
    if (u.getPort() < 1 || u.getPort() > 65535) {
      return ": no port";
    }
    if (u.getUserInfo() != null) {
      return ": credentials belong in token, or user and password, not in the URL";
    }
    if ((u.getRawPath() != null && !u.getRawPath().isEmpty()) || u.getRawQuery() != null || u.getRawFragment() != null) {
      return ": nothing may follow the port";
    }
    return null;
  }

  /** The file resolved against the config file's folder; an error when it is not a readable file. */
  private String existingFile(String value, NodeTuple v, String k) {
    java.nio.file.Path f = java.nio.file.Path.of(value);
    if (!f.isAbsolute() && r.file() != null && !r.file().startsWith("<")) {
      java.nio.file.Path parent = java.nio.file.Path.of(r.file()).toAbsolutePath().getParent();
      f = parent == null ? f : parent.resolve(f);
    }
    f = f.toAbsolutePath().normalize();
    if (!java.nio.file.Files.isRegularFile(f) || !java.nio.file.Files.isReadable(f)) {
      r.error(v.getValueNode(), k, f + (java.nio.file.Files.exists(f) ? " is not a readable file" : " does not exist"));
    }
    return f.toString();
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
