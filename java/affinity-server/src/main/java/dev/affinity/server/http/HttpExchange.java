package dev.affinity.server.http;

import dev.affinity.anthropic.AnthropicResponses;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.worker.EncodedChunk;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request being answered, on its connection's event loop, where all its state lives: the whole answer, or the
 * stream ({@link ExchangeStream}), then completion. The handler answers through {@link #sink()}
 * ({@link ExchangeSink}), from any thread: its calls run here in call order (called on this loop with no earlier call
 * pending, they run at once, without a task). The first of respond / fail / stream end / abort / connection close
 * completes the exchange (access log line, metrics) and every later call is ignored.
 */
final class HttpExchange {
  private static final Logger LOG = LoggerFactory.getLogger(HttpExchange.class);

  private static final AsciiString JSON = ResponseHeaders.JSON;
  /** The answer format of the OpenAI endpoints: the answer itself (its bytes can be relayed as they are). */
  private static final Function<OpenAiResponse, Object> AS_IS = r -> r;

  private enum State { NEW, STREAMING, DONE }

  private final FrontendContext fc;
  private final HttpConnection connection;
  private final Channel channel;
  private final RequestMeta meta;
  private final ExchangeLog log;
  private final ExchangeSink sink = new ExchangeSink(this);
  /** Frames this exchange's stream (the endpoint's, or the one its handler set, {@link #streamFormat}). */
  private volatile StreamTransformer.Factory streamFormat;
  /** Anthropic's endpoints: their whole answers are Anthropic messages and their errors Anthropic's envelope. */
  private final boolean anthropic;
  /**
   * Turns a whole answer into what this exchange's clients read: the answer itself (OpenAI), an Anthropic message,
   * or the one its endpoint set for the request ({@link #answerFormat}, the Responses API's response object).
   */
  private volatile Function<OpenAiResponse, Object> answerFormat;

  /** Sink calls handed to the loop as tasks and not yet run: a later call on the loop must not overtake them. */
  private final AtomicInteger queued = new AtomicInteger();

  // event-loop confined
  private State state = State.NEW;
  /** The answer's stream once it started, else null. */
  private ExchangeStream stream;
  private Runnable onComplete;
  private final DisconnectCallbacks disconnect = new DisconnectCallbacks();
  /** Whether anything was written since the last probe of a half-closed client. */
  private boolean wroteSinceProbe;

  HttpExchange(FrontendContext fc, HttpConnection connection, Channel channel, RequestMeta meta, long readNanos) {
    this.fc = fc;
    this.connection = connection;
    this.channel = channel;
    this.meta = meta;
    this.log = new ExchangeLog(fc, meta, readNanos);
    this.streamFormat = meta.endpoint() == null ? StreamTransformer::openAi : meta.endpoint().streamFormat;
    this.anthropic = meta.endpoint() != null && meta.endpoint().anthropic();
    this.answerFormat = anthropic ? r -> AnthropicResponses.toMessage((ChatCompletionResponse) r) : AS_IS;
  }

  /** Answers a whole response with {@code format} applied (set before the handler runs). */
  void answerFormat(Function<OpenAiResponse, Object> format) {
    this.answerFormat = Objects.requireNonNull(format, "format");
  }

  /** Frames this request's stream with {@code format} (set before the handler runs). */
  void streamFormat(StreamTransformer.Factory format) {
    this.streamFormat = Objects.requireNonNull(format, "format");
  }

  /** The body of an error: OpenAI's shape, or Anthropic's envelope on its endpoints. */
  byte[] errorBody(int status, ErrorResponse error) {
    return anthropic ? fc.codec.toJsonBytes(AnthropicResponses.error(status, error)) : fc.codec.toJsonBytes(error);
  }

  /** A JSON answer computed off the event loop. */
  void sendJsonLater(HttpResponseStatus status, byte[] body) {
    onLoop(() -> sendJson(status, body));
  }

  /** An error decided off the event loop. */
  void sendErrorLater(int status, ErrorResponse error) {
    onLoop(() -> sendError(status, error));
  }

  RequestMeta meta() {
    return meta;
  }

  /** The admitted completion request goes to the orchestration now. */
  void processing(boolean streaming) {
    log.processing(streaming, System.nanoTime());
  }

  /** What the access log reports of a completion request. */
  void describe(String requestModel, boolean streaming) {
    log.describe(requestModel, streaming);
  }

  /** The sink the handler answers through: callable from any thread ({@link ExchangeSink}). */
  ClientSink sink() {
    return sink;
  }

  /** The answer format set for the request: {@link #AS_IS} for the OpenAI endpoints. */
  Function<OpenAiResponse, Object> answerFormat() {
    return answerFormat;
  }

  /** Whether whole answers go out as the worker's JSON (the OpenAI endpoints), not reshaped. */
  boolean answersAsIs() {
    return answerFormat == AS_IS;
  }

  FrontendContext context() {
    return fc;
  }

  /** Starts the stream (on the loop); a second start, or one after the answer, is ignored. */
  void streamStartOnLoop(RouteInfo routeInfo) {
    if (state == State.NEW) {
      startStream(routeInfo);
    } else {
      LOG.warn("request {}: streamStart after the response started or ended; ignored", meta.localId());
    }
  }

  /** Registers a callback for a client that goes away (on the loop). */
  void onDisconnectOnLoop(Runnable callback) {
    disconnect.add(callback);
  }

  /**
   * Runs {@code task} on the channel's loop after the sink calls made before it: at once when called on the loop
   * with none of them waiting (the usual case: the legs run on the request's loop), else as a task of the loop.
   */
  void onLoop(Runnable task) {
    EventLoop loop = channel.eventLoop();
    if (queued.get() == 0 && loop.inEventLoop()) {
      run(task);
      return;
    }
    queued.incrementAndGet();
    try {
      loop.execute(() -> {
        queued.decrementAndGet();
        run(task);
      });
    } catch (RejectedExecutionException e) {
      queued.decrementAndGet();
      LOG.debug("request {}: the event loop is shut down; a sink call is dropped", meta.localId());
    }
  }

  private void run(Runnable task) {
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
    writeFull(HttpResponseStatus.valueOf(status), JSON, errorBody(status, error), null, headers, close,
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
    LOG.debug("request {}: the connection closed before the response was complete", meta.localId());
    disconnect.disconnected();
    complete(state == State.STREAMING ? 200 : 499, AccessRecord.CLIENT_DISCONNECT, "connection closed", System.nanoTime());
  }

  /**
   * Checks that a client whose input ended still reads (see {@link HttpConnection}): writes something
   * it ignores, an interim {@code 100 Continue} before the response head, only to a request that asked for
   * one ({@code Expect: 100-continue}: a client that did not ask gets no 1xx it did not ask for), or an SSE
   * comment in a quiet stream. A client that closed its socket answers with a reset, and a later write fails
   * and closes the connection.
   */
  void probe() {
    if (state == State.NEW && meta.version().equals(HttpVersion.HTTP_1_1) && meta.expectsContinue()) {
      channel.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE,
          Unpooled.EMPTY_BUFFER));
    } else if (state == State.STREAMING && !wroteSinceProbe) {
      channel.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(Sse.COMMENT)));
    }
    wroteSinceProbe = false;
  }

  // ---- writing: event loop ----

  void writeFull(HttpResponseStatus status, CharSequence contentType, byte[] body, RouteInfo routeInfo,
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
    log.route(routeInfo);
    HttpHeaders h = ResponseHeaders.newHeaders();
    FullHttpResponse response = new DefaultFullHttpResponse(meta.version(), status, Unpooled.wrappedBuffer(body), h,
        EmptyHttpHeaders.INSTANCE);
    if (contentType != null) {
      h.set(HttpHeaderNames.CONTENT_TYPE, contentType);
    }
    h.setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
    commonHeaders(h, routeInfo);
    extraHeaders.forEach(h::set);
    if (status.code() == 503 && !h.contains(HttpHeaderNames.RETRY_AFTER)) {
      h.set(HttpHeaderNames.RETRY_AFTER, "1");  // every 503 is a passing condition: say when to come back
    }
    boolean close = forceClose || !meta.keepAlive();
    HttpUtil.setKeepAlive(h, meta.version(), !close);
    long now = System.nanoTime();
    log.wholeResponse(status.code(), body.length, now);
    complete(status.code(), status.code() < 400 ? AccessRecord.OK : AccessRecord.ERROR, error, now);
    connection.exchangeDone(this, channel.writeAndFlush(response), close);
  }

  private void startStream(RouteInfo routeInfo) {
    log.route(routeInfo);
    stream = new ExchangeStream(fc, channel, meta, log, streamFormat.newStream(), this::write);
    state = State.STREAMING;
    HttpHeaders h = ResponseHeaders.newHeaders();
    Sse.headers(h);
    commonHeaders(h, routeInfo);
    stream.open(h, routeInfo);
  }

  void writeChunk(EncodedChunk chunk) {
    if (state == State.NEW) {
      LOG.warn("request {}: streamChunk before streamStart; starting the stream", meta.localId());
      startStream(null);
    }
    if (state == State.STREAMING) {
      stream.chunk(chunk);
    }
  }

  /** The connection's writability changed (event loop): a paused source reads again once the client caught up. */
  void writabilityChanged() {
    if (stream != null) {
      stream.writabilityChanged();
    }
  }

  void endStream(RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    if (state == State.NEW) {
      startStream(routeInfo); // a stream without chunks: only its end
    }
    byte[] end = stream.end(routeInfo);
    complete(200, AccessRecord.OK, null, System.nanoTime());
    connection.exchangeDone(this, stream.writeLast(end), !stream.keepAliveAfter());
  }

  private ChannelFuture write(Object message) {
    wroteSinceProbe = true;
    return channel.writeAndFlush(message);
  }

  void failOnLoop(int status, byte[] body, String message, RouteInfo routeInfo) {
    if (state == State.STREAMING) {
      // The status line is sent: the error travels as the stream's last event and the response ends there,
      // well framed, so the connection stays as the head said (closing it would race clients that pool it).
      LOG.warn("request {}: fail({}) after the stream started; ending it with an error event: {}", meta.localId(), status,
          message);
      byte[] event = stream.error(body, routeInfo);
      complete(200, AccessRecord.ABORTED, message, System.nanoTime());
      connection.exchangeDone(this, stream.writeLast(event), !stream.keepAliveAfter());
      return;
    }
    writeFull(HttpResponseStatus.valueOf(status), JSON, body, routeInfo, Map.of(), false, message);
  }

  void abortOnLoop(String reason, RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    log.route(routeInfo);
    LOG.debug("request {}: aborted: {}", meta.localId(), reason);
    if (state == State.STREAMING) {
      stream.broken(); // best effort: the connection closes right after
    }
    complete(state == State.STREAMING ? 200 : 0, AccessRecord.ABORTED, reason, System.nanoTime());
    connection.exchangeDone(this, null, true);
  }

  private void commonHeaders(HttpHeaders h, RouteInfo routeInfo) {
    RouteInfo r = log.routeOr(routeInfo);
    ResponseHeaders.set(h, log.requestId(r), r, fc.options.debugHeaders());
  }

  /**
   * Runs {@code release} once when the exchange completes (a budget charge, say); at once if it already has. Each
   * call adds one: they run in the order they were added.
   */
  void onComplete(Runnable release) {
    if (state == State.DONE) {
      release.run();
    } else if (onComplete == null) {
      onComplete = release;
    } else {
      Runnable before = onComplete;
      onComplete = () -> {
        try {
          before.run();
        } finally {
          release.run();
        }
      };
    }
  }

  /** The exchange is complete (access log line, metrics); later calls are ignored. */
  private void complete(int status, String outcome, String error, long nowNanos) {
    state = State.DONE;
    Runnable r = onComplete;
    onComplete = null;
    if (r != null) {
      r.run();
    }
    if (stream != null) {
      stream.forgetPaused(); // its call has ended or is being cancelled
    }
    disconnect.forget();
    log.complete(status, outcome, error, nowNanos);
  }
}
