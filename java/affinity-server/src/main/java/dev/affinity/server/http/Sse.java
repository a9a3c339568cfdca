package dev.affinity.server.http;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;

/**
 * The HTTP side of a completion stream: server-sent events (the events themselves come from the endpoint's
 * {@link dev.affinity.frontend.StreamTransformer}).
 */
final class Sse {
  static final AsciiString CONTENT_TYPE = AsciiString.cached("text/event-stream; charset=utf-8");
  private static final AsciiString ACCEL_BUFFERING = AsciiString.cached("x-accel-buffering");

  /** An empty comment line: clients skip it. */
  static final byte[] COMMENT = ":\n\n".getBytes(StandardCharsets.US_ASCII);

  private Sse() {}

  /** The headers of a stream's response: content type, no caching, no buffering in proxies. */
  static void headers(HttpHeaders h) {
    h.set(HttpHeaderNames.CONTENT_TYPE, CONTENT_TYPE);
    h.set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
    h.set(ACCEL_BUFFERING, "no");
  }
}
