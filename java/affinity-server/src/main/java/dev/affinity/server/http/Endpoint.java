package dev.affinity.server.http;

import dev.affinity.frontend.StreamTransformer;
import io.netty.handler.codec.http.HttpMethod;
import java.util.HashMap;
import java.util.Map;

/**
 * The frontend's routes: path, the one method each accepts, whether API keys guard it, and how a streamed
 * answer is framed for its clients ({@link StreamTransformer}; the completion endpoints pass the workers'
 * OpenAI events through).
 */
enum Endpoint {
  COMPLETIONS("/v1/completions", HttpMethod.POST, true),
  CHAT_COMPLETIONS("/v1/chat/completions", HttpMethod.POST, true),
  /** Anthropic's Messages API, converted to the chat path (docs/anthropic.md). */
  MESSAGES("/v1/messages", HttpMethod.POST, true),
  MESSAGES_COUNT_TOKENS("/v1/messages/count_tokens", HttpMethod.POST, true),
  /** OpenAI's Responses API, stateless form, converted to the chat path (docs/responses.md). */
  RESPONSES("/v1/responses", HttpMethod.POST, true),
  MODELS("/v1/models", HttpMethod.GET, true),
  HEALTH("/health", HttpMethod.GET, false),
  CLUSTER_INFO("/cluster_info", HttpMethod.GET, true),
  VERSION("/version", HttpMethod.GET, false),
  METRICS("/metrics", HttpMethod.GET, false),
  /** Upstream's per-request aggregator ({@code perf_metrics_max_requests}; docs/metrics.md). */
  PERF_METRICS("/perf_metrics", HttpMethod.GET, true),
  PROMETHEUS_METRICS("/prometheus/metrics", HttpMethod.GET, false);

  /** The metric tag of a path that matches no endpoint (keeps tag values bounded). */
  static final String OTHER_TAG = "other";

  private static final Map<String, Endpoint> BY_PATH = new HashMap<>();

  static {
    for (Endpoint e : values()) {
      BY_PATH.put(e.path, e);
    }
  }

  final String path;
  final HttpMethod method;
  final boolean authenticated;
  /** The default framing of a streamed answer; an endpoint may give one per request (the Anthropic stream). */
  final StreamTransformer.Factory streamFormat = StreamTransformer::openAi;

  Endpoint(String path, HttpMethod method, boolean authenticated) {
    this.path = path;
    this.method = method;
    this.authenticated = authenticated;
  }

  /** The endpoint at {@code path} (exact match, no trailing slash), or null. */
  static Endpoint of(String path) {
    return BY_PATH.get(path);
  }

  boolean isCompletion() {
    return this == COMPLETIONS || this == CHAT_COMPLETIONS || this == MESSAGES || this == RESPONSES;
  }

  /**
   * Whether the endpoint speaks Anthropic's API: its errors use Anthropic's envelope.
   */
  boolean anthropic() {
    return this == MESSAGES || this == MESSAGES_COUNT_TOKENS;
  }

  /** The metric tag for a request to {@code endpoint} (null for an unknown path). */
  static String tag(Endpoint endpoint) {
    return endpoint == null ? OTHER_TAG : endpoint.path;
  }
}
