package dev.affinity.server.worker;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A request to a worker, kept so that it can be written again on a fresh connection (when a reused
 * connection turns out to have been closed by the worker before it answered). The body is an array that is
 * wrapped, not copied, for every write. A signed request ({@link LegAuth}) is signed afresh at every write
 * (a new timestamp and nonce), so a write that waited for a connection is not stale and a second write is no
 * replay.
 */
final class RequestTemplate {
  /**
   * The headers of a request: the names are this package's constants, so Netty does not check each name's
   * characters again at every write; values are checked as Netty's default does.
   */
  private static final HttpHeadersFactory HEADERS = DefaultHttpHeadersFactory.headersFactory().withNameValidation(false);

  /** One header. */
  record Header(String name, String value) {}

  private final HttpMethod method;
  private final String uri;
  private final String host;
  private final List<Header> headers;
  private final byte[] body;
  /** The header computed at each write ({@link LegAuth#HEADER}), or null. */
  private final Supplier<Header> signature;

  RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, byte[] body) {
    this(method, uri, host, headers, body, null);
  }

  RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, byte[] body,
      Supplier<Header> signature) {
    this.method = method;
    this.uri = uri;
    this.host = host;
    this.headers = List.copyOf(headers);
    this.body = body;
    this.signature = signature;
  }

  /** A request without extra headers or body. */
  static RequestTemplate of(HttpMethod method, String uri, String host) {
    return new RequestTemplate(method, uri, host, new ArrayList<>(), null);
  }

  /** A new Netty request for one write (the encoder releases it). */
  FullHttpRequest toRequest() {
    HttpHeaders h = HEADERS.newHeaders();
    FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, uri,
        body == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body), h, EmptyHttpHeaders.INSTANCE);
    h.set(HttpHeaderNames.HOST, host);
    for (Header header : headers) {
      h.set(header.name(), header.value());
    }
    if (signature != null) {
      Header signed = signature.get();
      h.set(signed.name(), signed.value());
    }
    h.setInt(HttpHeaderNames.CONTENT_LENGTH, body == null ? 0 : body.length);
    return r;
  }

  /** Whether writing the request twice does no harm (GET). */
  boolean idempotent() {
    return method.equals(HttpMethod.GET);
  }

  String uri() {
    return uri;
  }
}
