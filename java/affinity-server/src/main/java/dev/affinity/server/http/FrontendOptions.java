package dev.affinity.server.http;

import dev.affinity.config.AffinitySettings;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.SubagentScope;
import dev.affinity.conversation.ConversationSettings;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * How the HTTP frontend listens and what it accepts.
 *
 * @param host address to bind ({@code 0.0.0.0} for all interfaces)
 * @param port port to bind; 0 picks a free one ({@link FrontendServer#port()} tells which)
 * @param maxRequestBodyBytes larger request bodies get 413 (from {@code Content-Length} before the body
 *     is read, or as soon as a chunked body passes the limit)
 * @param apiKeys accepted {@code Authorization: Bearer} keys for {@code /v1/*} and {@code /cluster_info};
 *     empty means no authentication
 * @param debugHeaders whether responses carry {@code x-affinity-route}
 * @param requestReadTimeout the time a client has to send a whole request (headers and body) once its
 *     first byte arrived; past it the client gets 408 and the connection is closed
 * @param keepAliveTimeout idle keep-alive connections (no request pending) are closed after this;
 *     {@link Duration#ZERO} closes every connection after its response
 * @param models served model names (the configured {@code affinity.model}); the backend may add more
 * @param version what {@code GET /version} reports
 * @param accessLog where each finished request is reported (closed by {@link FrontendServer#close()})
 * @param allowClientDisaggregatedParams accept {@code disaggregated_params} from clients
 * @param allowRequestChatTemplate accept a {@code chat_template} in chat requests (upstream
 *     {@code allow_request_chat_template})
 * @param routing the routing headers checked before a request reaches the handler (at most 256
 *     characters, no control characters)
 * @param ioThreads Netty event-loop threads for connections; 0 for one per available processor
 */
public record FrontendOptions(
    String host,
    int port,
    long maxRequestBodyBytes,
    List<String> apiKeys,
    boolean debugHeaders,
    Duration requestReadTimeout,
    Duration keepAliveTimeout,
    List<String> models,
    String version,
    AccessLog accessLog,
    boolean allowClientDisaggregatedParams,
    boolean allowRequestChatTemplate,
    ConversationSettings routing,
    int ioThreads) {

  public static final long DEFAULT_MAX_REQUEST_BODY_BYTES = 16L * 1024 * 1024;
  public static final Duration DEFAULT_REQUEST_READ_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration DEFAULT_KEEP_ALIVE_TIMEOUT = Duration.ofSeconds(10);

  public FrontendOptions {
    Objects.requireNonNull(host, "host");
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port must be in [0, 65535]: " + port);
    }
    if (maxRequestBodyBytes <= 0) {
      throw new IllegalArgumentException("maxRequestBodyBytes must be positive: " + maxRequestBodyBytes);
    }
    apiKeys = List.copyOf(apiKeys);
    for (String key : apiKeys) {
      if (key.isBlank()) {
        throw new IllegalArgumentException("an API key is blank");
      }
    }
    requirePositive(requestReadTimeout, "requestReadTimeout");
    Objects.requireNonNull(keepAliveTimeout, "keepAliveTimeout");
    if (keepAliveTimeout.isNegative()) {
      throw new IllegalArgumentException("keepAliveTimeout must not be negative: " + keepAliveTimeout);
    }
    models = List.copyOf(models);
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(accessLog, "accessLog");
    Objects.requireNonNull(routing, "routing");
    if (ioThreads < 0) {
      throw new IllegalArgumentException("ioThreads must not be negative: " + ioThreads);
    }
  }

  private static void requirePositive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive: " + d);
    }
  }

  /** Loopback, a free port, the defaults above, no keys, no models, the SLF4J access log. */
  public static FrontendOptions defaults() {
    return new FrontendOptions("127.0.0.1", 0, DEFAULT_MAX_REQUEST_BODY_BYTES, List.of(), false,
        DEFAULT_REQUEST_READ_TIMEOUT, DEFAULT_KEEP_ALIVE_TIMEOUT, List.of(), "unknown", AccessLog.slf4j(), false,
        false, new ConversationSettings(AffinitySettings.DEFAULT_SESSION_HEADERS, Optional.empty(),
            SubagentScope.CONTEXT), 0);
  }

  /** The options a disaggregated YAML asks for (hostname, port, the {@code affinity:} block, ...). */
  public static FrontendOptions fromConfig(DisaggConfig config, String version) throws IOException {
    AffinitySettings a = config.affinity();
    Duration keepAlive = Duration.ofSeconds(config.serverKeepAliveTimeout());
    return new FrontendOptions(config.hostname(), config.port(), a.maxRequestBodyBytes(), a.apiKeys(),
        a.debugHeaders(), DEFAULT_REQUEST_READ_TIMEOUT, keepAlive, a.model().map(List::of).orElse(List.of()), version,
        AccessLog.forSetting(a.accessLog()), a.allowClientDisaggregatedParams(), config.allowRequestChatTemplate(),
        ConversationSettings.from(config), a.ioThreads());
  }

  public FrontendOptions withHost(String h) {
    return new FrontendOptions(h, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withPort(int p) {
    return new FrontendOptions(host, p, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withMaxRequestBodyBytes(long n) {
    return new FrontendOptions(host, port, n, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withApiKeys(List<String> keys) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, keys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withDebugHeaders(boolean on) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, on, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withRequestReadTimeout(Duration d) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, d,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withKeepAliveTimeout(Duration d) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        d, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withModels(List<String> m) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, m, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withVersion(String v) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, v, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withAccessLog(AccessLog log) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, log, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withAllowClientDisaggregatedParams(boolean allow) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allow, allowRequestChatTemplate,
        routing, ioThreads);
  }

  public FrontendOptions withAllowRequestChatTemplate(boolean allow) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allow,
        routing, ioThreads);
  }

  public FrontendOptions withRouting(ConversationSettings r) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        r, ioThreads);
  }

  public FrontendOptions withIoThreads(int n) {
    return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
        keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
        routing, n);
  }
}
