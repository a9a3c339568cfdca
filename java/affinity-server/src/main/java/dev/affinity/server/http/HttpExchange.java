package dev.affinity.server.http;

import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request being answered, and the {@link ClientSink} the handler answers through.
 *
 * <p>The sink methods may be called from any thread: they serialize JSON on the caller's thread and
 * then run on the channel's event loop, in call order, where all state of the exchange lives. The
 * first of respond / fail / stream end / abort / connection close completes the exchange (access log
 * line, metrics) and every later call is ignored.
 */
final class HttpExchange implements ClientSink {
  private static final Logger LOG = LoggerFactory.getLogger(HttpExchange.class);

  static final AsciiString REQUEST_ID = AsciiString.cached("x-request-id");
  static final AsciiString ROUTE = AsciiString.cached("x-affinity-route");
  static final AsciiString JSON = AsciiString.cached("application/json");
  static final AsciiString EVENT_STREAM = AsciiString.cached("text/event-stream; charset=utf-8");
  private static final AsciiString ACCEL_BUFFERING = AsciiString.cached("x-accel-buffering");
  private static final int MAX_ROUTE_HEADER = 2048;

  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

  private enum State { NEW, STREAMING, DONE }

  private final FrontendContext fc;
  private final HttpConnection connection;
  private final Channel channel;
  private final RequestMeta meta;
  private final long readNanos;

  // event-loop confined
  private State state = State.NEW;
  private RouteInfo route;
  private String model;
  private Boolean stream;
  private long firstNanos = -1;
  private long lastChunkNanos = -1;
  private long bytes;
  private List<Runnable> disconnectCallbacks;
  private boolean disconnected;

  HttpExchange(FrontendContext fc, HttpConnection connection, Channel channel, RequestMeta meta, long readNanos) {
    this.fc = fc;
    this.connection = connection;
    this.channel = channel;
    this.meta = meta;
    this.readNanos = readNanos;
  }

  RequestMeta meta() {
    return meta;
  }

  /** What the access log reports of a completion request. */
  void describe(String requestModel, boolean streaming) {
    this.model = requestModel;
    this.stream = streaming;
  }

  // ---- ClientSink: any thread ----

  @Override
  public void respond(OpenAiResponse response, RouteInfo routeInfo) {
    Objects.requireNonNull(response, "response");
    byte[] body;
    try {
      body = fc.codec.toJsonBytes(response);
    } catch (RuntimeException e) {
      LOG.error("request {}: cannot serialize the response", meta.localId(), e);
      fail(500, internalError(), routeInfo);
      return;
    }
    onLoop(() -> writeFull(HttpResponseStatus.OK, JSON, body, routeInfo, Map.of(), false, null));
  }

  @Override
  public void streamStart(RouteInfo routeInfo) {
    onLoop(() -> {
      if (state == State.NEW) {
        startStream(routeInfo);
      } else {
        LOG.warn("request {}: streamStart after the response started or ended; ignored", meta.localId());
      }
    });
  }

  @Override
  public void streamChunk(OpenAiStreamChunk chunk) {
    Objects.requireNonNull(chunk, "chunk");
    byte[] event = sseEvent(fc.codec.toJsonBytes(chunk));
    onLoop(() -> writeChunk(event));
  }

  @Override
  public void streamEnd(RouteInfo routeInfo) {
    onLoop(() -> endStream(routeInfo));
  }

  @Override
  public void fail(int status, ErrorResponse error, RouteInfo routeInfo) {
    Objects.requireNonNull(error, "error");
    int code = status;
    if (status < 400 || status > 599) {
      LOG.warn("request {}: fail() with status {} is not an error status; answering 500", meta.localId(), status);
      code = 500;
    }
    byte[] body = fc.codec.toJsonBytes(error);
    int finalCode = code;
    onLoop(() -> failOnLoop(finalCode, body, error.error().message(), routeInfo));
  }

  @Override
  public void abort(String reason, RouteInfo routeInfo) {
    onLoop(() -> abortOnLoop(reason, routeInfo));
  }

  @Override
  public void onDisconnect(Runnable callback) {
    Objects.requireNonNull(callback, "callback");
    onLoop(() -> {
      if (disconnected) {
        runCallback(callback);
      } else if (state != State.DONE) {
        if (disconnectCallbacks == null) {
          disconnectCallbacks = new ArrayList<>(1);
        }
        disconnectCallbacks.add(callback);
      }
    });
  }

  private void onLoop(Runnable task) {
    try {
      channel.eventLoop().execute(() -> {
        try {
          task.run();
        } catch (RuntimeException e) {
          LOG.error("request {}: answering failed; closing the connection", meta.localId(), e);
          if (state != State.DONE) {
            complete(state == State.STREAMING ? 200 : 0, AccessRecord.ABORTED, "internal error: " + e, System.nanoTime());
            connection.exchangeDone(this, null, true);
          } else {
            channel.close();
          }
        }
      });
    } catch (RejectedExecutionException e) {
      LOG.debug("request {}: the event loop is shut down; a sink call is dropped", meta.localId());
    }
  }

  // ---- the frontend's own answers: event loop ----

  void sendJson(HttpResponseStatus status, byte[] body) {
    writeFull(status, JSON, body, null, Map.of(), false, null);
  }

  void sendText(HttpResponseStatus status, CharSequence contentType, String text) {
    writeFull(status, contentType, text.getBytes(StandardCharsets.UTF_8), null, Map.of(), false, null);
  }

  void sendEmpty(HttpResponseStatus status) {
    writeFull(status, null, new byte[0], null, Map.of(), false, null);
  }

  void sendError(int status, ErrorResponse error) {
    sendError(status, error, Map.of(), false);
  }

  void sendError(int status, ErrorResponse error, Map<String, String> headers, boolean close) {
    writeFull(HttpResponseStatus.valueOf(status), JSON, fc.codec.toJsonBytes(error), null, headers, close,
        error.error().message());
  }

  ErrorResponse internalError() {
    return ErrorResponse.of(500, "internal server error (request id " + meta.localId() + ")", null);
  }

  /** The connection closed: completes the exchange as a disconnect and runs the callbacks, once. */
  void channelClosed() {
    if (state == State.DONE) {
      return;
    }
    List<Runnable> callbacks = disconnectCallbacks;
    disconnected = true;
    complete(state == State.STREAMING ? 200 : 499, AccessRecord.CLIENT_DISCONNECT, "connection closed", System.nanoTime());
    LOG.debug("request {}: the connection closed before the response was complete", meta.localId());
    if (callbacks != null) {
      callbacks.forEach(this::runCallback);
    }
  }

  // ---- writing: event loop ----

  private void writeFull(HttpResponseStatus status, CharSequence contentType, byte[] body, RouteInfo routeInfo,
      Map<String, String> extraHeaders, boolean forceClose, String error) {
    if (state != State.NEW) {
      if (state == State.STREAMING) {
        LOG.warn("request {}: a whole response after the stream started; closing the connection", meta.localId());
        abortOnLoop(error != null ? error : "response after stream start", routeInfo);
      } else {
        LOG.debug("request {}: response after completion ignored", meta.localId());
      }
      return;
    }
    if (routeInfo != null) {
      route = routeInfo;
    }
    FullHttpResponse response = new DefaultFullHttpResponse(meta.version(), status, Unpooled.wrappedBuffer(body));
    HttpHeaders h = response.headers();
    if (contentType != null) {
      h.set(HttpHeaderNames.CONTENT_TYPE, contentType);
    }
    h.setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
    commonHeaders(h, routeInfo);
    extraHeaders.forEach(h::set);
    boolean close = forceClose || !meta.keepAlive();
    HttpUtil.setKeepAlive(h, meta.version(), !close);
    long now = System.nanoTime();
    bytes = body.length;
    boolean ok = status.code() < 400;
    if (ok && meta.endpoint() != null && meta.endpoint().isCompletion()) {
      firstNanos = now;
      fc.metrics.ttft(meta.endpointTag(), false, now - readNanos);
    }
    complete(status.code(), ok ? AccessRecord.OK : AccessRecord.ERROR, error, now);
    ChannelFuture written = channel.writeAndFlush(response);
    connection.exchangeDone(this, written, close);
  }

  private void startStream(RouteInfo routeInfo) {
    if (routeInfo != null) {
      route = routeInfo;
    }
    state = State.STREAMING;
    HttpResponse response = new DefaultHttpResponse(meta.version(), HttpResponseStatus.OK);
    HttpHeaders h = response.headers();
    h.set(HttpHeaderNames.CONTENT_TYPE, EVENT_STREAM);
    h.set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_CACHE);
    h.set(ACCEL_BUFFERING, "no");
    commonHeaders(h, routeInfo);
    if (chunked()) {
      HttpUtil.setTransferEncodingChunked(response, true);
    }
    HttpUtil.setKeepAlive(h, meta.version(), keepAliveAfterStream());
    channel.writeAndFlush(response);
  }

  /** HTTP/1.0 has no chunked encoding: the stream ends when the connection closes. */
  private boolean chunked() {
    return meta.version() != HttpVersion.HTTP_1_0;
  }

  private boolean keepAliveAfterStream() {
    return chunked() && meta.keepAlive();
  }

  private void writeChunk(byte[] event) {
    if (state == State.NEW) {
      LOG.warn("request {}: streamChunk before streamStart; starting the stream", meta.localId());
      startStream(null);
    }
    if (state != State.STREAMING) {
      return;
    }
    long now = System.nanoTime();
    if (firstNanos < 0) {
      firstNanos = now;
      fc.metrics.ttft(meta.endpointTag(), true, now - readNanos);
    } else {
      fc.metrics.interToken(meta.endpointTag(), now - lastChunkNanos);
    }
    lastChunkNanos = now;
    bytes += event.length;
    channel.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
  }

  private void endStream(RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    if (state == State.NEW) {
      startStream(routeInfo); // a stream without chunks: only [DONE]
    }
    if (routeInfo != null) {
      route = routeInfo;
    }
    bytes += DONE.length;
    complete(200, AccessRecord.OK, null, System.nanoTime());
    ChannelFuture written = channel.writeAndFlush(chunked()
        ? new DefaultLastHttpContent(Unpooled.wrappedBuffer(DONE))
        : new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
    connection.exchangeDone(this, written, !keepAliveAfterStream());
  }

  private void failOnLoop(int status, byte[] body, String message, RouteInfo routeInfo) {
    if (state == State.STREAMING) {
      LOG.warn("request {}: fail({}) after the stream started; closing the connection: {}", meta.localId(), status,
          message);
      abortOnLoop(message, routeInfo);
      return;
    }
    writeFull(HttpResponseStatus.valueOf(status), JSON, body, routeInfo, Map.of(), false, message);
  }

  private void abortOnLoop(String reason, RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    if (routeInfo != null) {
      route = routeInfo;
    }
    LOG.debug("request {}: aborted: {}", meta.localId(), reason);
    complete(state == State.STREAMING ? 200 : 0, AccessRecord.ABORTED, reason, System.nanoTime());
    connection.exchangeDone(this, null, true);
  }

  private void commonHeaders(HttpHeaders h, RouteInfo routeInfo) {
    RouteInfo r = routeInfo != null ? routeInfo : route;
    h.set(REQUEST_ID, Long.toString(requestId(r)));
    if (fc.options.debugHeaders() && r != null) {
      h.set(ROUTE, headerSafe(r.toHeader()));
    }
  }

  private long requestId(RouteInfo r) {
    return r != null && r.requestId() > 0 ? r.requestId() : meta.localId();
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

  private static byte[] sseEvent(byte[] json) {
    byte[] event = new byte[DATA.length + json.length + 2];
    System.arraycopy(DATA, 0, event, 0, DATA.length);
    System.arraycopy(json, 0, event, DATA.length, json.length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    return event;
  }

  private void runCallback(Runnable callback) {
    try {
      callback.run();
    } catch (RuntimeException e) {
      LOG.warn("request {}: a disconnect callback failed", meta.localId(), e);
    }
  }

  // ---- completion: event loop ----

  private void complete(int status, String outcome, String error, long nowNanos) {
    state = State.DONE;
    disconnectCallbacks = null;
    long total = nowNanos - readNanos;
    fc.metrics.finished(meta.endpointTag(), status, outcome, total, bytes);
    try {
      fc.options.accessLog().log(record(status, outcome, error, total));
    } catch (RuntimeException e) {
      LOG.warn("the access log failed", e);
    }
  }

  private AccessRecord record(int status, String outcome, String error, long totalNanos) {
    RouteInfo r = route;
    return new AccessRecord(
        Instant.ofEpochMilli(meta.wallMillis()).toString(),
        requestId(r),
        meta.method(),
        RequestMeta.loggablePath(meta.path()),
        status,
        outcome,
        model,
        stream,
        r == null ? null : r.conversationId(),
        r == null ? null : r.affinityId(),
        r == null ? null : r.ctxKey(),
        r == null ? null : r.genKey(),
        r == null ? null : r.ctxWorker(),
        r == null || r.ctxRank() < 0 ? null : r.ctxRank(),
        r == null ? null : r.genWorker(),
        r == null || r.genRank() < 0 ? null : r.genRank(),
        r == null || r.reusedTokens() < 0 ? null : r.reusedTokens(),
        firstNanos < 0 ? null : millis(firstNanos - readNanos),
        millis(totalNanos),
        r == null ? 0 : r.retries(),
        bytes,
        meta.remote(),
        error);
  }

  private static double millis(long nanos) {
    return Math.round(nanos / 1_000.0) / 1_000.0;
  }
}
