package dev.affinity.server.http;

import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import dev.affinity.worker.EncodedChunk;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.util.function.Function;

/**
 * The answer of one {@link HttpExchange} as a server-sent event stream, on the connection's event loop: written
 * through the endpoint's {@link StreamTransformer}, so that a worker's chunk that arrives as bytes reaches the client
 * without being parsed. Backpressure: when the client reads slower than the worker writes, the connection's outbound
 * buffer passes its high-water mark and the stream pauses the chunk's source (the worker connection stops reading)
 * until the buffer drains below the low-water mark ({@link #writabilityChanged()}); what is buffered per stream is
 * bounded by the mark plus what the worker connection had already read.
 */
final class ExchangeStream {
  private final FrontendContext fc;
  private final Channel channel;
  private final RequestMeta meta;
  private final ExchangeLog log;
  private final StreamTransformer transformer;
  /** The exchange's write (it notes that something was written). */
  private final Function<Object, ChannelFuture> write;
  /** The source paused because the client could not keep up, or null. */
  private EncodedChunk.Source paused;

  ExchangeStream(FrontendContext fc, Channel channel, RequestMeta meta, ExchangeLog log, StreamTransformer transformer,
      Function<Object, ChannelFuture> write) {
    this.fc = fc;
    this.channel = channel;
    this.meta = meta;
    this.log = log;
    this.transformer = transformer;
    this.write = write;
  }

  /** Writes the head ({@code h}: SSE's and the exchange's headers) and the transformer's opening. */
  void open(HttpHeaders h, RouteInfo routeInfo) {
    HttpResponse response = new DefaultHttpResponse(meta.version(), HttpResponseStatus.OK, h);
    if (chunked()) {
      HttpUtil.setTransferEncodingChunked(response, true);
    }
    HttpUtil.setKeepAlive(h, meta.version(), keepAliveAfter());
    write.apply(response);
    byte[] open = transformer.open(log.routeOr(routeInfo));
    if (open.length > 0) {
      log.sent(open.length);
      write.apply(new DefaultHttpContent(Unpooled.wrappedBuffer(open)));
    }
  }

  /** HTTP/1.0 has no chunked encoding: the stream ends when the connection closes. */
  private boolean chunked() {
    return meta.version() != HttpVersion.HTTP_1_0;
  }

  /** Whether the connection stays open after the stream. */
  boolean keepAliveAfter() {
    return chunked() && meta.keepAlive();
  }

  /** Writes one chunk; pauses its source while the client cannot keep up. */
  void chunk(EncodedChunk chunk) {
    byte[] event = transformer.chunk(chunk);
    EncodedChunk.Source source = chunk.source();
    log.chunk(event.length, System.nanoTime());
    if (event.length == 0) {
      return;
    }
    write.apply(new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
    ChannelOutboundBuffer out = channel.unsafe().outboundBuffer();
    if (out != null) {
      fc.metrics.streamBuffered(out.totalPendingWriteBytes());
    }
    if (source != null && paused == null && !channel.isWritable()) {
      paused = source; // the client reads slower than the worker writes: stop reading from the worker
      fc.metrics.streamPaused();
      source.pause();
    }
  }

  /** A paused source reads again once the client caught up. */
  void writabilityChanged() {
    EncodedChunk.Source p = paused;
    if (p != null && channel.isWritable()) {
      paused = null;
      p.resume();
    }
  }

  /** The stream's last event (the transformer's close), counted as sent; written by {@link #writeLast}. */
  byte[] end(RouteInfo routeInfo) {
    byte[] end = transformer.close(log.routeOr(routeInfo));
    log.route(routeInfo);
    log.sent(end.length);
    return end;
  }

  /** The error event that ends the stream, counted as sent; written by {@link #writeLast}. */
  byte[] error(byte[] body, RouteInfo routeInfo) {
    byte[] event = transformer.error(body);
    log.route(routeInfo);
    log.sent(event.length);
    return event;
  }

  /** Writes the last content ({@code last}); without chunked encoding (HTTP/1.0) the encoder writes it as it is. */
  ChannelFuture writeLast(byte[] last) {
    return write.apply(new DefaultLastHttpContent(Unpooled.wrappedBuffer(last)));
  }

  /** A broken stream's last words, best effort (the connection closes right after). */
  void broken() {
    byte[] last = transformer.broken();
    if (last.length > 0 && channel.isActive()) {
      log.sent(last.length);
      write.apply(new DefaultHttpContent(Unpooled.wrappedBuffer(last)));
    }
  }

  /** The paused source's call has ended or is being cancelled: nothing to resume. */
  void forgetPaused() {
    paused = null;
  }
}
