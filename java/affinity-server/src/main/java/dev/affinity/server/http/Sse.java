package dev.affinity.server.http;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;

/** How a completion stream is framed: server-sent events, one {@code data:} line per chunk. */
final class Sse {
  static final AsciiString CONTENT_TYPE = AsciiString.cached("text/event-stream; charset=utf-8");
  private static final AsciiString ACCEL_BUFFERING = AsciiString.cached("x-accel-buffering");

  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
  /** The last event of a stream. */
  static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
  /** An empty comment line: clients skip it. */
  static final byte[] COMMENT = ":\n\n".getBytes(StandardCharsets.US_ASCII);

  private Sse() {}

  /** The headers of a stream's response: content type, no caching, no buffering in proxies. */
  static void headers(HttpHeaders h) {
    h.set(HttpHeaderNames.CONTENT_TYPE, CONTENT_TYPE);
    h.set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
    h.set(ACCEL_BUFFERING, "no");
  }

  /** {@code data: <json>\n\n}. */
  static byte[] event(byte[] json) {
    byte[] event = new byte[DATA.length + json.length + 2];
    System.arraycopy(DATA, 0, event, 0, DATA.length);
    System.arraycopy(json, 0, event, DATA.length, json.length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    return event;
  }
}
