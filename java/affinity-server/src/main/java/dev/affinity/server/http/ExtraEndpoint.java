package dev.affinity.server.http;

import dev.affinity.conversation.HeaderSource;
import java.net.InetAddress;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A route a {@link FrontendBackend} adds to the built-in ones (worker mode: {@code GET /server_info},
 * {@code POST /kv_cache_events}; the cluster storage: {@code /set}, {@code /get}, {@code /delete}, ...). It
 * goes through the same checks as the built-in routes (404, 405 with {@code Allow}, API keys when
 * {@code authenticated}, body limits and read timeout), then its handler's answer is sent as JSON: with
 * status 200, or with the status of an {@link Answer}.
 *
 * @param method the method the route accepts ({@code GET}, {@code POST} or {@code DELETE}, upper case), or
 *     several separated by commas ({@code "GET, POST"}: the handler tells them apart by {@link Request#method()})
 * @param authenticated whether API keys guard it (when {@link FrontendOptions#apiKeys()} is not empty)
 * @param handler computes the answer
 */
public record ExtraEndpoint(String method, boolean authenticated, RequestHandler handler) {

  /** Computes one answer from the body alone. */
  @FunctionalInterface
  public interface Handler {
    /**
     * The answer to a request with this body (empty for none), serialized as JSON (a Jackson tree, a
     * record, a list, an {@link Answer}, ...). Runs on the connection's event loop: it must return quickly. A
     * thrown {@link dev.affinity.protocol.ProtocolException} is answered with its status and error body, any
     * other exception with a 500.
     */
    Object handle(byte[] body);
  }

  /** Computes one answer from the whole request (body, query, client address); the rules of {@link Handler}. */
  @FunctionalInterface
  public interface RequestHandler {
    Object handle(Request request);
  }

  /**
   * One request to an extra route.
   *
   * @param method the request's method
   * @param path the route's path (without the query)
   * @param body the body (empty for none)
   * @param query the query parameters, decoded, in order (several values per name possible)
   * @param headers the request's headers
   * @param client the client's address (null when unknown)
   */
  public record Request(String method, String path, byte[] body, Map<String, List<String>> query,
      HeaderSource headers, InetAddress client) {
    public Request {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(body, "body");
      Objects.requireNonNull(headers, "headers");
      query = Map.copyOf(query);
    }

    /** The first value of a query parameter, or null. */
    public String param(String name) {
      List<String> values = query.get(name);
      return values == null || values.isEmpty() ? null : values.get(0);
    }
  }

  /** An answer with a status of its own (any 2xx-5xx), sent as JSON. */
  public record Answer(int status, Object body) {
    public Answer {
      if (status < 200 || status > 599) {
        throw new IllegalArgumentException("status must be in [200, 599]: " + status);
      }
    }
  }

  public ExtraEndpoint {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(handler, "handler");
    method = method.toUpperCase(Locale.ROOT).replace(" ", "").replace(",", ", ");
    for (String m : method.split(", ")) {
      if (!m.equals("GET") && !m.equals("POST") && !m.equals("DELETE")) {
        throw new IllegalArgumentException("method must be GET, POST or DELETE: " + m);
      }
    }
  }

  /** Whether the route takes {@code m}. */
  public boolean accepts(String m) {
    for (String own : method.split(", ")) {
      if (own.equals(m)) {
        return true;
      }
    }
    return false;
  }

  /** A {@code GET} route without API keys. */
  public static ExtraEndpoint get(Handler handler) {
    return new ExtraEndpoint("GET", false, request -> handler.handle(request.body()));
  }

  /** A {@code POST} route without API keys. */
  public static ExtraEndpoint post(Handler handler) {
    return new ExtraEndpoint("POST", false, request -> handler.handle(request.body()));
  }
}
