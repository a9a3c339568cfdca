package dev.affinity.server.http;

import java.util.Locale;
import java.util.Objects;

/**
 * A route a {@link FrontendBackend} adds to the built-in ones (worker mode: {@code GET /server_info},
 * {@code POST /kv_cache_events}). It goes through the same checks as the built-in routes (404, 405 with
 * {@code Allow}, API keys when {@code authenticated}, body limits and read timeout), then its handler's
 * answer is sent as {@code 200 application/json}.
 *
 * @param method the one method the route accepts ({@code GET} or {@code POST}, upper case)
 * @param authenticated whether API keys guard it (when {@link FrontendOptions#apiKeys()} is not empty)
 * @param handler computes the answer
 */
public record ExtraEndpoint(String method, boolean authenticated, Handler handler) {

  /** Computes one answer. */
  @FunctionalInterface
  public interface Handler {
    /**
     * The answer to a request with this body (empty for none), serialized as JSON (a Jackson tree, a
     * record, a list, ...). Runs on the connection's event loop: it must return quickly. A thrown
     * {@link dev.affinity.protocol.ProtocolException} is answered with its status and error body, any
     * other exception with a 500.
     */
    Object handle(byte[] body);
  }

  public ExtraEndpoint {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(handler, "handler");
    method = method.toUpperCase(Locale.ROOT);
    if (!method.equals("GET") && !method.equals("POST")) {
      throw new IllegalArgumentException("method must be GET or POST: " + method);
    }
  }

  /** A {@code GET} route without API keys. */
  public static ExtraEndpoint get(Handler handler) {
    return new ExtraEndpoint("GET", false, handler);
  }

  /** A {@code POST} route without API keys. */
  public static ExtraEndpoint post(Handler handler) {
    return new ExtraEndpoint("POST", false, handler);
  }
}
