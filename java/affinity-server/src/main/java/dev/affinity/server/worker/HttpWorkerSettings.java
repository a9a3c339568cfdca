package dev.affinity.server.worker;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * How to reach one trtllm-serve worker.
 *
 * @param baseUrl {@code http://host:port} (a bare {@code host:port} is accepted by {@link #of(String)})
 * @param authKey the shared {@code internal_request_auth_key}, or null: without it no request is signed
 *     and sub-agent affinity ids are not sent
 * @param connectTimeout TCP connect budget of every exchange
 * @param controlTimeout budget of the control requests ({@code /server_info}, {@code /health},
 *     {@code /kv_cache_events}); request legs use {@code WorkerRequest.timeout}
 * @param maxConnections most connections open to the worker at once, 0 for no limit (upstream's client
 *     pool has none); requests beyond it wait for a connection ({@code affinity.worker_max_connections})
 * @param idleTimeout how long an idle pooled connection is kept for reuse; below the worker's own
 *     keep-alive timeout (uvicorn's default is 5 s) so that the worker rarely closes one under a request
 */
public record HttpWorkerSettings(URI baseUrl, String authKey, Duration connectTimeout, Duration controlTimeout,
    int maxConnections, Duration idleTimeout) {

  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_CONTROL_TIMEOUT = Duration.ofSeconds(10);
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(4);
  /**
   * How often a frontend polls a worker's {@code /kv_cache_events}: each frontend every worker without
   * {@code affinity.shared_state}, the drain's owner with it.
   */
  public static final Duration KV_EVENT_POLL = Duration.ofMillis(500);

  public HttpWorkerSettings {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    Objects.requireNonNull(controlTimeout, "controlTimeout");
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    String scheme = baseUrl.getScheme();
    if ((!"http".equalsIgnoreCase(scheme) && !"https".equalsIgnoreCase(scheme)) || baseUrl.getHost() == null) {
      throw new IllegalArgumentException("worker URL must be http://host:port, got " + baseUrl);
    }
    if (connectTimeout.isNegative() || connectTimeout.isZero() || controlTimeout.isNegative()
        || controlTimeout.isZero()) {
      throw new IllegalArgumentException("timeouts must be positive");
    }
    if (idleTimeout.isNegative() || idleTimeout.isZero()) {
      throw new IllegalArgumentException("the idle timeout must be positive");
    }
    if (maxConnections < 0) {
      throw new IllegalArgumentException("maxConnections must be >= 0 (0: no limit), got " + maxConnections);
    }
    String s = baseUrl.toString();
    if (s.endsWith("/")) {
      baseUrl = URI.create(s.substring(0, s.length() - 1));
    }
    authKey = authKey == null || authKey.isEmpty() ? null : authKey;
  }

  /** Default timeouts, no auth key; {@code url} may lack the scheme ({@code host:port}, as in disagg YAML). */
  public static HttpWorkerSettings of(String url) {
    Objects.requireNonNull(url, "url");
    String u = url.strip();
    if (!u.contains("://")) {
      u = "http://" + u;
    }
    return new HttpWorkerSettings(URI.create(u), null, DEFAULT_CONNECT_TIMEOUT, DEFAULT_CONTROL_TIMEOUT, 0,
        DEFAULT_IDLE_TIMEOUT);
  }

  public HttpWorkerSettings withAuthKey(String key) {
    return new HttpWorkerSettings(baseUrl, key, connectTimeout, controlTimeout, maxConnections, idleTimeout);
  }

  public HttpWorkerSettings withConnectTimeout(Duration timeout) {
    return new HttpWorkerSettings(baseUrl, authKey, timeout, controlTimeout, maxConnections, idleTimeout);
  }

  public HttpWorkerSettings withControlTimeout(Duration timeout) {
    return new HttpWorkerSettings(baseUrl, authKey, connectTimeout, timeout, maxConnections, idleTimeout);
  }

  /** At most {@code max} connections to the worker (0: no limit). */
  public HttpWorkerSettings withMaxConnections(int max) {
    return new HttpWorkerSettings(baseUrl, authKey, connectTimeout, controlTimeout, max, idleTimeout);
  }

  public HttpWorkerSettings withIdleTimeout(Duration timeout) {
    return new HttpWorkerSettings(baseUrl, authKey, connectTimeout, controlTimeout, maxConnections, timeout);
  }

  /** Whether the worker is reached over TLS. */
  public boolean tls() {
    return "https".equalsIgnoreCase(baseUrl.getScheme());
  }

  /** The worker's port (the scheme's default when the URL has none). */
  public int port() {
    int port = baseUrl.getPort();
    return port >= 0 ? port : tls() ? 443 : 80;
  }

  /** The path every request path is appended to: empty, or the URL's path without its trailing slash. */
  public String basePath() {
    String p = baseUrl.getRawPath();
    return p == null ? "" : p;
  }

  /** The worker id: {@code host:port} (the scheme's default port when the URL has none). */
  public String workerId() {
    return baseUrl.getHost() + ":" + port();
  }

  /** Never shows the auth key. */
  @Override
  public String toString() {
    return "HttpWorkerSettings[baseUrl=" + baseUrl + ", authKey=" + (authKey == null ? "none" : "***")
        + ", connectTimeout=" + connectTimeout + ", controlTimeout=" + controlTimeout + ", maxConnections="
        + (maxConnections == 0 ? "unlimited" : maxConnections) + ", idleTimeout=" + idleTimeout + "]";
  }
}
