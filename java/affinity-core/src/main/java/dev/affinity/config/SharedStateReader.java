package dev.affinity.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.yaml.snakeyaml.nodes.NodeTuple;

/**
 * Reads {@code affinity.shared_state} ({@link SharedStateSettings}): the NATS servers (required), the client's
 * authentication (a token, inline or from {@code token_file}; a user and password, inline or from {@code
 * password_file}; or a credentials file; not two of them), a CA file for TLS, the event retention and the drain lease.
 * Problems are reported through the {@link YamlReader}, naming the key and its line; files are resolved against the
 * config file's folder, and a secret read from a file is never named by its content.
 */
final class SharedStateReader {
  private final YamlReader r;

  SharedStateReader(YamlReader r) {
    this.r = r;
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
  Optional<SharedStateSettings> read(NodeTuple t, String p) {
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
      String why = SharedStateSettings.serverProblem(s);
      if (why != null) {
        r.error(v.getValueNode(), k, "expected nats://HOST:PORT or tls://HOST:PORT (comma-separated for several), "
            + "found \"" + s + "\"" + why);
        return List.of();
      }
      out.add(s);
    }
    return out;
  }

  /** The file resolved against the config file's folder; an error when it is not a readable file. */
  private String existingFile(String value, NodeTuple v, String k) {
    java.nio.file.Path f = r.resolve(value);
    if (!java.nio.file.Files.isRegularFile(f) || !java.nio.file.Files.isReadable(f)) {
      r.error(v.getValueNode(), k, f + (java.nio.file.Files.exists(f) ? " is not a readable file" : " does not exist"));
    }
    return f.toString();
  }
}
