package dev.affinity.server.http;

import io.netty.channel.Channel;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;

/**
 * What the frontend knows of a request once its headers are read.
 *
 * @param localId the frontend's own id (the orchestration's id replaces it when it assigns one)
 * @param method the method as sent, {@code "-"} when the request line never arrived
 * @param path the path without the query
 * @param endpoint the matched built-in endpoint, or null
 * @param extra the matched backend route when no built-in one matched, or null
 * @param version the HTTP version to answer with
 * @param headers the request headers (empty when the head never arrived)
 * @param keepAlive whether the connection may serve another request afterwards
 * @param remote the client's address
 * @param wallMillis when the request's head was read, epoch milliseconds
 * @param uri the request target as sent (path and query), {@code "-"} when the request line never arrived
 * @param expectsContinue whether the request asked for {@code 100 Continue} ({@code Expect: 100-continue}; the
 *     header itself is gone once Netty has answered it)
 */
record RequestMeta(
    long localId,
    String method,
    String path,
    Endpoint endpoint,
    ExtraEndpoint extra,
    HttpVersion version,
    HttpHeaders headers,
    boolean keepAlive,
    String remote,
    long wallMillis,
    String uri,
    boolean expectsContinue) {

  /** Longest path kept for logs and error messages. */
  static final int MAX_LOGGED_PATH = 256;

  /** A request whose head never arrived or could not be parsed: no method, path or headers. */
  static RequestMeta unknown(long localId, String remote) {
    return new RequestMeta(localId, "-", "-", null, null, HttpVersion.HTTP_1_1, EmptyHttpHeaders.INSTANCE, false,
        remote, System.currentTimeMillis(), "-", false);
  }

  /** The client's {@code ip:port} as the access log reports it. */
  static String remote(Channel channel) {
    SocketAddress a = channel.remoteAddress();
    if (a instanceof InetSocketAddress inet) {
      return (inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString()) + ":"
          + inet.getPort();
    }
    return a != null ? a.toString() : "-";
  }

  /** The path of an origin-form or absolute-form request target, without query or fragment. */
  static String path(String uri) {
    String target = uri;
    if (!target.startsWith("/")) {
      try {
        String p = URI.create(target).getRawPath();
        target = p == null || p.isEmpty() ? "/" : p;
      } catch (IllegalArgumentException e) {
        return target;
      }
    }
    int end = target.length();
    int q = target.indexOf('?');
    if (q >= 0) {
      end = q;
    }
    int h = target.indexOf('#');
    if (h >= 0 && h < end) {
      end = h;
    }
    return target.substring(0, end);
  }

  static String loggablePath(String path) {
    return path.length() <= MAX_LOGGED_PATH ? path : path.substring(0, MAX_LOGGED_PATH) + "...";
  }

  /** The metric tag: the path of a known route (built-in or extra), else {@code other}. */
  String endpointTag() {
    return endpoint == null && extra != null ? path : Endpoint.tag(endpoint);
  }

  /** The methods the matched route accepts, as an {@code Allow} value (null when none matched). */
  String allowedMethod() {
    return endpoint != null ? endpoint.method.name() : extra != null ? extra.method() : null;
  }

  /** Whether API keys guard the matched route. */
  boolean authenticated() {
    return endpoint != null ? endpoint.authenticated : extra != null && extra.authenticated();
  }
}
