package dev.affinity.server.worker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
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
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
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
  /** A body written into each write's own buffer instead of {@link #body}, or null. */
  private final BodyWriter writer;
  /** The header computed at each write ({@link LegAuth#HEADER}), or null. */
  private final Supplier<Header> signature;

  /**
   * A body written straight into the buffer of each write ({@link #encode}): a leg's JSON, which would otherwise be
   * written into segments, copied into an array and copied again into the write's buffer (a 176k-token agent turn's
   * two legs carry 4 MB).
   */
  interface BodyWriter {
    /** Writes the body; the same bytes every time. */
    void writeTo(OutputStream out) throws IOException;

    /** About how many bytes it writes (the buffer's first size). */
    int sizeHint();
  }

  RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, byte[] body) {
    this(method, uri, host, headers, body, null);
  }

  RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, byte[] body,
      Supplier<Header> signature) {
    this(method, uri, host, headers, body, null, signature);
  }

  /** A request whose body {@code writer} writes at each write (no signature: a signed body is an array). */
  RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, BodyWriter writer) {
    this(method, uri, host, headers, null, writer, null);
  }

  private RequestTemplate(HttpMethod method, String uri, String host, List<Header> headers, byte[] body,
      BodyWriter writer, Supplier<Header> signature) {
    this.method = method;
    this.uri = uri;
    this.host = host;
    this.headers = List.copyOf(headers);
    this.body = body;
    this.writer = writer;
    this.signature = signature;
  }

  /** The body's bytes: the array, or what the writer writes; null without a body. */
  byte[] bodyBytes() {
    if (writer == null) {
      return body;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(writer.sizeHint());
    try {
      writer.writeTo(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** A request without extra headers or body. */
  static RequestTemplate of(HttpMethod method, String uri, String host) {
    return new RequestTemplate(method, uri, host, new ArrayList<>(), (byte[]) null);
  }

  /** The request as a Netty object: what {@link #encode} must write the same bytes as (tests compare them). */
  FullHttpRequest toRequest() {
    HttpHeaders h = HEADERS.newHeaders();
    byte[] body = bodyBytes();
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

  /**
   * The request as the bytes Netty's {@code HttpRequestEncoder} writes for {@link #toRequest()} (request line,
   * the headers in the same order, an empty line, the body), in one buffer from {@code alloc}: one write to the
   * connection instead of a request object, its header map, and the encoder's separate head and body writes.
   */
  ByteBuf encode(ByteBufAllocator alloc) {
    if (writer != null) {
      return encodeWritten(alloc);
    }
    Header signed = signature == null ? null : signature.get();
    int bodyLength = body == null ? 0 : body.length;
    String length = Integer.toString(bodyLength);
    ByteBuf buf = LargeBuffers.buffer(alloc, headSize(length, signed) + bodyLength);
    try {
      writeHead(buf, length, signed);
      if (body != null) {
        buf.writeBytes(body);
      }
      return buf;
    } catch (RuntimeException e) {
      buf.release();
      throw e;
    }
  }

  /**
   * {@link #encode} of a written body: the body is written first, after room for the longest head (a ten-digit
   * length), and the head then right before it, so the bytes are copied once, from the writer into the buffer; kept
   * JSON the writer splices ({@link SplicedBody}) is not copied at all.
   */
  private ByteBuf encodeWritten(ByteBufAllocator alloc) {
    int room = head("0000000000", null).length;
    SplicedBody body = new SplicedBody(alloc, LargeBuffers.buffer(alloc, room + writer.sizeHint()), room);
    try {
      writer.writeTo(body);
      return body.finish(length -> head(Integer.toString(length), null));
    } catch (IOException e) {
      body.discard();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      body.discard();
      throw e;
    }
  }

  /** The head's bytes with this content length. */
  private byte[] head(String length, Header signed) {
    ByteBuf b = Unpooled.buffer(headSize(length, signed));
    writeHead(b, length, signed);
    return ByteBufUtil.getBytes(b);
  }

  /** About the head's size (characters; a non-ASCII URI takes more bytes). */
  private int headSize(String length, Header signed) {
    int size = method.name().length() + uri.length() + 12 + 8 + host.length() + 18 + length.length() + 2;
    for (Header h : headers) {
      size += h.name().length() + h.value().length() + 4;
    }
    if (signed != null) {
      size += signed.name().length() + signed.value().length() + 4;
    }
    return size;
  }

  private void writeHead(ByteBuf buf, String length, Header signed) {
    buf.writeCharSequence(method.name(), StandardCharsets.US_ASCII);
    buf.writeByte(' ');
    buf.writeCharSequence(uri.isEmpty() ? "/" : uri, StandardCharsets.UTF_8);
    buf.writeCharSequence(" HTTP/1.1\r\n", StandardCharsets.US_ASCII);
    header(buf, "host", host);
    for (Header h : headers) {
      header(buf, h.name(), h.value());
    }
    if (signed != null) {
      header(buf, signed.name(), signed.value());
    }
    header(buf, "content-length", length);
    buf.writeShort(CRLF);
  }

  private static final int CRLF = ('\r' << 8) | '\n';
  private static final int COLON_SPACE = (':' << 8) | ' ';

  private static void header(ByteBuf buf, CharSequence name, CharSequence value) {
    buf.writeCharSequence(name, StandardCharsets.US_ASCII);
    buf.writeShort(COLON_SPACE);
    buf.writeCharSequence(value, StandardCharsets.US_ASCII);
    buf.writeShort(CRLF);
  }

  /** Whether writing the request twice does no harm (GET). */
  boolean idempotent() {
    return method.equals(HttpMethod.GET);
  }

  String uri() {
    return uri;
  }
}
