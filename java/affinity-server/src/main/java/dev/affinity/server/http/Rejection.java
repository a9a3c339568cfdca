package dev.affinity.server.http;

import dev.affinity.protocol.ErrorResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.time.Duration;
import java.util.Map;

/**
 * An answer the frontend decided on before a request reached its endpoint: the status, the error
 * body's message and {@code param}, and extra response headers.
 */
record Rejection(int status, String message, String param, Map<String, String> headers) {
  Rejection(int status, String message) {
    this(status, message, null, Map.of());
  }

  ErrorResponse body() {
    return ErrorResponse.of(status, message, param);
  }

  static Rejection notFound(String method, String path) {
    return new Rejection(404, "no such endpoint: " + method + " " + RequestMeta.loggablePath(path));
  }

  static Rejection methodNotAllowed(String method, String path, String allowed) {
    return new Rejection(405, "method " + method + " is not allowed on " + path + "; use " + allowed, null,
        Map.of(HttpHeaderNames.ALLOW.toString(), allowed));
  }

  static Rejection unauthorized(String message) {
    return new Rejection(401, message, null, Map.of(HttpHeaderNames.WWW_AUTHENTICATE.toString(), "Bearer"));
  }

  /** 413; {@code size} is the declared length, or "more than N" for a body that grew past the limit. */
  static Rejection tooLarge(String size, long limit) {
    return new Rejection(413, "request body is " + size + " bytes; at most " + limit + " bytes are allowed");
  }

  static Rejection timedOut(Duration readTimeout) {
    return new Rejection(408, "request not received within " + readTimeout.toMillis() + " ms");
  }

  /** What a request the HTTP decoder could not parse gets: 414, 431 or 400. */
  static Rejection malformed(Throwable cause) {
    if (cause instanceof TooLongHttpLineException) {
      return new Rejection(414, "request line too long");
    }
    if (cause instanceof TooLongHttpHeaderException) {
      return new Rejection(431, "request headers too large");
    }
    return new Rejection(400, "malformed HTTP request: " + cause.getMessage());
  }
}
