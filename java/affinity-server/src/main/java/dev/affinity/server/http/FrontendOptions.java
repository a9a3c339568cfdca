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

  /** A builder holding these options, to change several at once. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  public FrontendOptions withHost(String h) {
    return toBuilder().host(h).build();
  }

  public FrontendOptions withPort(int p) {
    return toBuilder().port(p).build();
  }

  public FrontendOptions withMaxRequestBodyBytes(long n) {
    return toBuilder().maxRequestBodyBytes(n).build();
  }

  public FrontendOptions withApiKeys(List<String> keys) {
    return toBuilder().apiKeys(keys).build();
  }

  public FrontendOptions withDebugHeaders(boolean on) {
    return toBuilder().debugHeaders(on).build();
  }

  public FrontendOptions withRequestReadTimeout(Duration d) {
    return toBuilder().requestReadTimeout(d).build();
  }

  public FrontendOptions withKeepAliveTimeout(Duration d) {
    return toBuilder().keepAliveTimeout(d).build();
  }

  public FrontendOptions withModels(List<String> m) {
    return toBuilder().models(m).build();
  }

  public FrontendOptions withVersion(String v) {
    return toBuilder().version(v).build();
  }

  public FrontendOptions withAccessLog(AccessLog log) {
    return toBuilder().accessLog(log).build();
  }

  public FrontendOptions withAllowClientDisaggregatedParams(boolean allow) {
    return toBuilder().allowClientDisaggregatedParams(allow).build();
  }

  public FrontendOptions withAllowRequestChatTemplate(boolean allow) {
    return toBuilder().allowRequestChatTemplate(allow).build();
  }

  public FrontendOptions withRouting(ConversationSettings r) {
    return toBuilder().routing(r).build();
  }

  public FrontendOptions withIoThreads(int n) {
    return toBuilder().ioThreads(n).build();
  }

  /** Options under construction: every field as {@link FrontendOptions} names it; {@link #build()} checks them. */
  public static final class Builder {
    private String host;
    private int port;
    private long maxRequestBodyBytes;
    private List<String> apiKeys;
    private boolean debugHeaders;
    private Duration requestReadTimeout;
    private Duration keepAliveTimeout;
    private List<String> models;
    private String version;
    private AccessLog accessLog;
    private boolean allowClientDisaggregatedParams;
    private boolean allowRequestChatTemplate;
    private ConversationSettings routing;
    private int ioThreads;

    private Builder(FrontendOptions o) {
      host = o.host;
      port = o.port;
      maxRequestBodyBytes = o.maxRequestBodyBytes;
      apiKeys = o.apiKeys;
      debugHeaders = o.debugHeaders;
      requestReadTimeout = o.requestReadTimeout;
      keepAliveTimeout = o.keepAliveTimeout;
      models = o.models;
      version = o.version;
      accessLog = o.accessLog;
      allowClientDisaggregatedParams = o.allowClientDisaggregatedParams;
      allowRequestChatTemplate = o.allowRequestChatTemplate;
      routing = o.routing;
      ioThreads = o.ioThreads;
    }

    public Builder host(String v) {
      host = v;
      return this;
    }

    public Builder port(int v) {
      port = v;
      return this;
    }

    public Builder maxRequestBodyBytes(long v) {
      maxRequestBodyBytes = v;
      return this;
    }

    public Builder apiKeys(List<String> v) {
      apiKeys = v;
      return this;
    }

    public Builder debugHeaders(boolean v) {
      debugHeaders = v;
      return this;
    }

    public Builder requestReadTimeout(Duration v) {
      requestReadTimeout = v;
      return this;
    }

    public Builder keepAliveTimeout(Duration v) {
      keepAliveTimeout = v;
      return this;
    }

    public Builder models(List<String> v) {
      models = v;
      return this;
    }

    public Builder version(String v) {
      version = v;
      return this;
    }

    public Builder accessLog(AccessLog v) {
      accessLog = v;
      return this;
    }

    public Builder allowClientDisaggregatedParams(boolean v) {
      allowClientDisaggregatedParams = v;
      return this;
    }

    public Builder allowRequestChatTemplate(boolean v) {
      allowRequestChatTemplate = v;
      return this;
    }

    public Builder routing(ConversationSettings v) {
      routing = v;
      return this;
    }

    public Builder ioThreads(int v) {
      ioThreads = v;
      return this;
    }

    public FrontendOptions build() {
      return new FrontendOptions(host, port, maxRequestBodyBytes, apiKeys, debugHeaders, requestReadTimeout,
          keepAliveTimeout, models, version, accessLog, allowClientDisaggregatedParams, allowRequestChatTemplate,
          routing, ioThreads);
    }
  }
}
