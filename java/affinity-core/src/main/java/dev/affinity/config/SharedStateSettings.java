package dev.affinity.config;

import java.util.List;
import java.util.Optional;

/**
 * {@code affinity.shared_state}: state several frontends share through NATS JetStream. Today the workers' KV
 * events: for each remote worker one frontend at a time drains its {@code /kv_cache_events} and publishes the
 * batches to a stream, and every frontend applies the whole stream to its routers (docs/workers.md, "Shared KV
 * events").
 *
 * @param servers the NATS servers, each {@code nats://HOST:PORT} or {@code tls://HOST:PORT}
 * @param token a NATS token (exclusive with user/password and the credentials file): {@code token}, or the content
 *     of {@code token_file}
 * @param tokenFile the file the token was read from ({@code token_file}, absolute), for messages; empty when the
 *     token was inline or there is none
 * @param user a NATS user name (with {@code password})
 * @param password the user's password: {@code password}, or the content of {@code password_file}
 * @param passwordFile the file the password was read from ({@code password_file}, absolute), for messages
 * @param credsFile a NATS credentials file (JWT and NKey seed), absolute
 * @param tlsCaFile the CA certificate (PEM) that signs the servers' certificates, absolute; implies TLS
 * @param eventRetentionSeconds how long the stream keeps a batch: the window a frontend that starts late replays
 * @param drainLeaseSeconds how long a worker's drain ownership lives without a refresh: the longest another
 *     frontend waits to take over from one that died
 */
public record SharedStateSettings(
    List<String> servers,
    Optional<String> token,
    Optional<String> tokenFile,
    Optional<String> user,
    Optional<String> password,
    Optional<String> passwordFile,
    Optional<String> credsFile,
    Optional<String> tlsCaFile,
    double eventRetentionSeconds,
    double drainLeaseSeconds) {

  public static final double DEFAULT_EVENT_RETENTION_SECONDS = 600;
  public static final double DEFAULT_DRAIN_LEASE_SECONDS = 3;

  public SharedStateSettings {
    servers = List.copyOf(servers);
    if (tokenFile.isPresent() && token.isEmpty() || passwordFile.isPresent() && password.isEmpty()) {
      throw new IllegalArgumentException("a token or password file without its content");
    }
    if (servers.isEmpty()) {
      throw new IllegalArgumentException("at least one NATS server");
    }
    if (!(eventRetentionSeconds > 0) || !(drainLeaseSeconds > 0)) {
      throw new IllegalArgumentException("retention and lease must be > 0");
    }
  }

  /** Settings with only servers (the defaults for the rest, no authentication). */
  public static SharedStateSettings of(String... servers) {
    return new SharedStateSettings(List.of(servers), Optional.empty(), Optional.empty(), Optional.empty(),
        Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), DEFAULT_EVENT_RETENTION_SECONDS, DEFAULT_DRAIN_LEASE_SECONDS);
  }

  /**
   * Null when {@code s} is one NATS server URL ({@code nats://HOST:PORT} or {@code tls://HOST:PORT}, nothing else), else
   * why not, as {@code ": ..."} to follow the URL in an error ({@code shared_state.nats}, {@code affinity worker --nats}).
   */
  public static String serverProblem(String s) {
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

  /** Whether any of the servers is reached over TLS ({@code tls://} or a CA file). */
  public boolean tls() {
    return tlsCaFile.isPresent() || servers.stream().anyMatch(s -> s.startsWith("tls://"));
  }

  /** Never the token or the password. */
  @Override
  public String toString() {
    return "SharedStateSettings[servers=" + servers + ", auth=" + authKind()
        + ", tlsCaFile=" + tlsCaFile.orElse("none") + ", eventRetentionSeconds=" + eventRetentionSeconds
        + ", drainLeaseSeconds=" + drainLeaseSeconds + "]";
  }

  /**
   * {@code token}, {@code token_file FILE}, {@code user NAME} (with {@code (password_file FILE)} when the password
   * came from one), {@code creds_file FILE} or {@code none}: how the client authenticates (no secret).
   */
  public String authKind() {
    if (token.isPresent()) {
      return tokenFile.map(f -> "token_file " + f).orElse("token");
    }
    if (user.isPresent()) {
      return "user " + user.get() + passwordFile.map(f -> " (password_file " + f + ")").orElse("");
    }
    return credsFile.isPresent() ? "creds_file " + credsFile.get() : "none";
  }
}
