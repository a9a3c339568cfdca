package dev.affinity.server.http;

import dev.affinity.frontend.RouteInfo;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.util.AsciiString;

/** The headers every response of the frontend carries: {@code x-request-id}, and the route when asked. */
final class ResponseHeaders {
  static final AsciiString REQUEST_ID = AsciiString.cached("x-request-id");
  static final AsciiString ROUTE = AsciiString.cached("x-affinity-route");
  static final AsciiString JSON = AsciiString.cached("application/json");
  private static final int MAX_ROUTE_HEADER = 2048;
  /**
   * A response's headers: their names are the frontend's constants, so Netty does not check each name's characters
   * at every response; values are checked as Netty's default does.
   */
  private static final HttpHeadersFactory FACTORY = DefaultHttpHeadersFactory.headersFactory().withNameValidation(false);

  private ResponseHeaders() {}

  /** Empty headers for a response the frontend writes. */
  static HttpHeaders newHeaders() {
    return FACTORY.newHeaders();
  }

  /** {@code x-request-id}, and {@code x-affinity-route} when {@code debugHeaders} and a route is known. */
  static void set(HttpHeaders h, long requestId, RouteInfo route, boolean debugHeaders) {
    h.set(REQUEST_ID, Long.toString(requestId));
    if (debugHeaders && route != null) {
      h.set(ROUTE, headerSafe(route.toHeader()));
    }
  }

  /** Header values are ASCII without control characters; ids from request bodies may carry anything. */
  static String headerSafe(String value) {
    int n = Math.min(value.length(), MAX_ROUTE_HEADER);
    StringBuilder sb = null;
    for (int i = 0; i < n; i++) {
      char c = value.charAt(i);
      boolean ok = c >= 0x20 && c < 0x7f;
      if (!ok && sb == null) {
        sb = new StringBuilder(n).append(value, 0, i);
      }
      if (sb != null) {
        sb.append(ok ? c : '?');
      }
    }
    if (sb != null) {
      return sb.toString();
    }
    return n == value.length() ? value : value.substring(0, n);
  }
}
