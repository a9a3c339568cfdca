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
 */
public record HttpWorkerSettings(URI baseUrl, String authKey, Duration connectTimeout, Duration controlTimeout) {

  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_CONTROL_TIMEOUT = Duration.ofSeconds(10);

  public HttpWorkerSettings {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    Objects.requireNonNull(controlTimeout, "controlTimeout");
    String scheme = baseUrl.getScheme();
    if ((!"http".equalsIgnoreCase(scheme) && !"https".equalsIgnoreCase(scheme)) || baseUrl.getHost() == null) {
      throw new IllegalArgumentException("worker URL must be http://host:port, got " + baseUrl);
    }
    if (connectTimeout.isNegative() || connectTimeout.isZero() || controlTimeout.isNegative()
        || controlTimeout.isZero()) {
      throw new IllegalArgumentException("timeouts must be positive");
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
    return new HttpWorkerSettings(URI.create(u), null, DEFAULT_CONNECT_TIMEOUT, DEFAULT_CONTROL_TIMEOUT);
  }

  public HttpWorkerSettings withAuthKey(String key) {
    return new HttpWorkerSettings(baseUrl, key, connectTimeout, controlTimeout);
  }

  public HttpWorkerSettings withConnectTimeout(Duration timeout) {
    return new HttpWorkerSettings(baseUrl, authKey, timeout, controlTimeout);
  }

  public HttpWorkerSettings withControlTimeout(Duration timeout) {
    return new HttpWorkerSettings(baseUrl, authKey, connectTimeout, timeout);
  }

  /** The worker id: {@code host:port} (the scheme's default port when the URL has none). */
  public String workerId() {
    int port = baseUrl.getPort();
    if (port < 0) {
      port = "https".equalsIgnoreCase(baseUrl.getScheme()) ? 443 : 80;
    }
    return baseUrl.getHost() + ":" + port;
  }

  /** Never shows the auth key. */
  @Override
  public String toString() {
    return "HttpWorkerSettings[baseUrl=" + baseUrl + ", authKey=" + (authKey == null ? "none" : "***")
        + ", connectTimeout=" + connectTimeout + ", controlTimeout=" + controlTimeout + "]";
  }
}
