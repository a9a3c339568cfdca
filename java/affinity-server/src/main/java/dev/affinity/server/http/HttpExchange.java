package dev.affinity.server.http;

import dev.affinity.anthropic.AnthropicResponses;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
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
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request being answered, and the {@link ClientSink} the handler answers through.
 *
 * <p>The sink methods may be called from any thread: they serialize JSON on the caller's thread and
 * then run on the channel's event loop, in call order, where all state of the exchange lives (called on that
 * loop with no earlier call pending, they run at once, without a task). The
 * first of respond / fail / stream end / abort / connection close completes the exchange (access log
 * line, metrics) and every later call is ignored.
 *
 * <p>A stream is written through the endpoint's {@link StreamTransformer}: a worker's chunk that arrives as
 * bytes ({@link #streamEncoded}) reaches the client without being parsed. Backpressure: when the client
 * reads slower than the worker writes, the connection's outbound buffer passes its high-water mark and the
 * exchange pauses the chunk's source (the worker connection stops reading) until the buffer drains below
 * the low-water mark ({@link #writabilityChanged()}); what is buffered per stream is bounded by the mark plus
 * what the worker connection had already read.
 */
final class HttpExchange implements ClientSink {
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
  private StreamTransformer transformer;
  private Runnable onComplete;
  private final DisconnectCallbacks disconnect = new DisconnectCallbacks();
  /** Whether anything was written since the last probe of a half-closed client. */
  private boolean wroteSinceProbe;
  /** The source paused because the client could not keep up, or null. */
  private EncodedChunk.Source paused;

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

  // ---- ClientSink: any thread ----

  @Override
  public void respond(OpenAiResponse response, RouteInfo routeInfo) {
    Objects.requireNonNull(response, "response");
    respondJson(() -> fc.codec.toJsonBytes(answerFormat.apply(response)), routeInfo);
  }

  /**
   * A whole response in its client's form: the OpenAI endpoints write its JSON ({@link EncodedResponse#json}, for a
   * worker's answer over HTTP the bytes copied from it); an endpoint that reshapes the answer reads its records.
   */
  @Override
  public void respondEncoded(EncodedResponse response, RouteInfo routeInfo) {
    Objects.requireNonNull(response, "response");
    if (answerFormat != AS_IS) {
      respond(response.parsed(), routeInfo);
      return;
    }
    respondJson(() -> response.json(fc.codec), routeInfo);
  }

  /** A whole answer, HTTP 200, with the JSON {@code body} writes; a 500 when it cannot be written. */
  private void respondJson(Supplier<byte[]> body, RouteInfo routeInfo) {
    byte[] json;
    try {
      json = body.get();
    } catch (RuntimeException e) {
      LOG.error("request {}: cannot serialize the response", meta.localId(), e);
      fail(500, internalError(), routeInfo);
      return;
    }
    onLoop(() -> writeFull(HttpResponseStatus.OK, JSON, json, routeInfo, Map.of(), false, null));
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
    streamEncoded(EncodedChunk.of(chunk, fc.codec.toJsonBytes(chunk)));
  }

  @Override
  public void streamEncoded(EncodedChunk chunk) {
    Objects.requireNonNull(chunk, "chunk");
    onLoop(() -> writeChunk(chunk));
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
    byte[] body = errorBody(code, error);
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
    onLoop(() -> disconnect.add(callback));
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
    transformer = streamFormat.newStream();
    state = State.STREAMING;
    HttpHeaders h = ResponseHeaders.newHeaders();
    HttpResponse response = new DefaultHttpResponse(meta.version(), HttpResponseStatus.OK, h);
    Sse.headers(h);
    commonHeaders(h, routeInfo);
    if (chunked()) {
      HttpUtil.setTransferEncodingChunked(response, true);
    }
    HttpUtil.setKeepAlive(h, meta.version(), keepAliveAfterStream());
    write(response);
    byte[] open = transformer.open(log.routeOr(routeInfo));
    if (open.length > 0) {
      log.sent(open.length);
      write(new DefaultHttpContent(Unpooled.wrappedBuffer(open)));
    }
  }

  /** HTTP/1.0 has no chunked encoding: the stream ends when the connection closes. */
  private boolean chunked() {
    return meta.version() != HttpVersion.HTTP_1_0;
  }

  private boolean keepAliveAfterStream() {
    return chunked() && meta.keepAlive();
  }

  private void writeChunk(EncodedChunk chunk) {
    if (state == State.NEW) {
      LOG.warn("request {}: streamChunk before streamStart; starting the stream", meta.localId());
      startStream(null);
    }
    if (state != State.STREAMING) {
      return;
    }
    byte[] event = transformer.chunk(chunk);
    EncodedChunk.Source source = chunk.source();
    log.chunk(event.length, System.nanoTime());
    if (event.length == 0) {
      return;
    }
    write(new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
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

  /** The connection's writability changed (event loop): a paused source reads again once the client caught up. */
  void writabilityChanged() {
    EncodedChunk.Source p = paused;
    if (p != null && channel.isWritable()) {
      paused = null;
      p.resume();
    }
  }

  private void endStream(RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    if (state == State.NEW) {
      startStream(routeInfo); // a stream without chunks: only its end
    }
    byte[] end = transformer.close(log.routeOr(routeInfo));
    log.route(routeInfo);
    log.sent(end.length);
    complete(200, AccessRecord.OK, null, System.nanoTime());
    // without chunked encoding (HTTP/1.0) the encoder writes the last content as it is
    ChannelFuture written = write(new DefaultLastHttpContent(Unpooled.wrappedBuffer(end)));
    connection.exchangeDone(this, written, !keepAliveAfterStream());
  }

  private ChannelFuture write(Object message) {
    wroteSinceProbe = true;
    return channel.writeAndFlush(message);
  }

  private void failOnLoop(int status, byte[] body, String message, RouteInfo routeInfo) {
    if (state == State.STREAMING) {
      // The status line is sent: the error travels as the stream's last event and the response ends there,
      // well framed, so the connection stays as the head said (closing it would race clients that pool it).
      LOG.warn("request {}: fail({}) after the stream started; ending it with an error event: {}", meta.localId(), status,
          message);
      byte[] event = transformer.error(body);
      log.route(routeInfo);
      log.sent(event.length);
      complete(200, AccessRecord.ABORTED, message, System.nanoTime());
      ChannelFuture written = write(new DefaultLastHttpContent(Unpooled.wrappedBuffer(event)));
      connection.exchangeDone(this, written, !keepAliveAfterStream());
      return;
    }
    writeFull(HttpResponseStatus.valueOf(status), JSON, body, routeInfo, Map.of(), false, message);
  }

  private void abortOnLoop(String reason, RouteInfo routeInfo) {
    if (state == State.DONE) {
      return;
    }
    log.route(routeInfo);
    LOG.debug("request {}: aborted: {}", meta.localId(), reason);
    if (state == State.STREAMING && transformer != null) {
      byte[] last = transformer.broken(); // best effort: the connection closes right after
      if (last.length > 0 && channel.isActive()) {
        log.sent(last.length);
        write(new DefaultHttpContent(Unpooled.wrappedBuffer(last)));
      }
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
    paused = null; // its call has ended or is being cancelled
    disconnect.forget();
    log.complete(status, outcome, error, nowNanos);
  }
}
