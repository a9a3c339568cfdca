package dev.affinity.server.http;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection (one instance per channel, event-loop confined). It reads requests, rejects
 * what it can before a body is read (404, 405, 401, 413), bounds the time a request may take to
 * arrive (408), and answers requests one at a time in arrival order: a pipelined request waits, with
 * reading paused, until the one before it is answered. A rejection that leaves unread input (a body
 * it refused, a malformed head, a timeout) closes the connection after its response.
 */
final class HttpConnection extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(HttpConnection.class);

  /** A response the frontend decided on before dispatch. */
  record Rejection(int status, String message, String param, Map<String, String> headers) {
    Rejection(int status, String message) {
      this(status, message, null, Map.of());
    }

    ErrorResponse body() {
      return ErrorResponse.of(status, message, param);
    }
  }

  /** A request read completely (or refused), waiting for its turn. */
  private record Work(RequestMeta meta, byte[] body, long readNanos, Rejection rejection, boolean close) {}

  /** The request whose body is being read. */
  private static final class Receiving {
    final RequestMeta meta;
    final Rejection rejection;
    byte[] body;
    int size;

    Receiving(RequestMeta meta, Rejection rejection, int expected) {
      this.meta = meta;
      this.rejection = rejection;
      this.body = new byte[expected];
    }

    void append(ByteBuf data) {
      int n = data.readableBytes();
      if (size + n > body.length) {
        body = Arrays.copyOf(body, Math.max(size + n, Math.max(1024, body.length * 2)));
      }
      data.readBytes(body, size, n);
      size += n;
    }

    byte[] bytes() {
      return size == body.length ? body : Arrays.copyOf(body, size);
    }
  }

  /** The most a body buffer starts with; it grows as the body arrives. */
  static final int INITIAL_BODY_BUFFER = 64 * 1024;

  /** How long a connection closing after a response keeps draining input. */
  static final long LINGER_MILLIS = 2_000;

  private final FrontendContext fc;
  private final CompletionEndpoint completions;
  private ChannelHandlerContext ctx;
  private String remote = "-";

  private Receiving receiving;
  private final ArrayDeque<Work> queue = new ArrayDeque<>();
  private HttpExchange active;
  /** No more input is accepted: the connection closes once the queued responses are written. */
  private boolean closing;
  private boolean pumping;
  private ScheduledFuture<?> readDeadline;

  HttpConnection(FrontendContext fc) {
    this.fc = fc;
    this.completions = new CompletionEndpoint(fc);
  }

  /** Goes before the HTTP codec: raw bytes of a new request start its read deadline. */
  ChannelHandler readWatcher() {
    return new ChannelInboundHandlerAdapter() {
      @Override
      public void channelRead(ChannelHandlerContext c, Object msg) {
        if (receiving == null && !closing) {
          armReadDeadline();
        }
        c.fireChannelRead(msg);
      }
    };
  }

  @Override
  public void handlerAdded(ChannelHandlerContext context) {
    this.ctx = context;
  }

  @Override
  public void channelActive(ChannelHandlerContext context) {
    SocketAddress a = context.channel().remoteAddress();
    if (a instanceof InetSocketAddress inet) {
      remote = (inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString()) + ":"
          + inet.getPort();
    } else if (a != null) {
      remote = a.toString();
    }
    context.fireChannelActive();
  }

  // ---- reading ----

  @Override
  public void channelRead(ChannelHandlerContext context, Object msg) {
    try {
      if (closing) {
        return;
      }
      if (msg instanceof HttpRequest request) {
        onHead(request);
      }
      if (msg instanceof HttpContent content && !closing) {
        onContent(content);
      }
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  private void onHead(HttpRequest request) {
    armReadDeadline();
    long id = fc.nextLocalId();
    long wall = System.currentTimeMillis();
    if (request.decoderResult().isFailure()) {
      Throwable cause = request.decoderResult().cause();
      RequestMeta meta = new RequestMeta(id, "-", "-", null, null, HttpVersion.HTTP_1_1, EmptyHttpHeaders.INSTANCE,
          false, remote, wall);
      rejectAndClose(meta, malformed(cause));
      return;
    }
    String path = path(request.uri());
    Endpoint endpoint = Endpoint.of(path);
    ExtraEndpoint extra = endpoint == null ? fc.extraEndpoints.get(path) : null;
    boolean keepAlive = HttpUtil.isKeepAlive(request) && !fc.options.keepAliveTimeout().isZero();
    RequestMeta meta = new RequestMeta(id, request.method().name(), path, endpoint, extra, request.protocolVersion(),
        request.headers(), keepAlive, remote, wall);

    long declared;
    try {
      declared = HttpUtil.getContentLength(request, -1L);
    } catch (NumberFormatException e) {
      rejectAndClose(meta, new Rejection(400, "invalid Content-Length header"));
      return;
    }
    boolean hasBody = HttpUtil.isTransferEncodingChunked(request) || declared > 0;
    Rejection early = precheck(meta, declared);
    String expect = request.headers().get(HttpHeaderNames.EXPECT);
    if (early == null && expect != null && !HttpUtil.is100ContinueExpected(request)) {
      early = new Rejection(417, "unsupported Expect header: " + expect);
    }
    if (early != null) {
      if (hasBody) {
        rejectAndClose(meta, early); // the body is never read
      } else {
        receiving = new Receiving(meta, early, 0);
      }
      return;
    }
    if (HttpUtil.is100ContinueExpected(request) && active == null && queue.isEmpty()) {
      ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE,
          Unpooled.EMPTY_BUFFER));
    }
    // a declared length sizes the buffer only up to a point: a client that claims a large body and
    // sends nothing must not make the frontend hold that much memory
    receiving = new Receiving(meta, null, (int) Math.min(Math.max(0, declared), INITIAL_BODY_BUFFER));
  }

  private void onContent(HttpContent content) {
    Receiving r = receiving;
    if (content.decoderResult().isFailure()) {
      RequestMeta meta = r != null ? r.meta : unknownRequest();
      rejectAndClose(meta, malformed(content.decoderResult().cause()));
      return;
    }
    if (r == null) {
      return;
    }
    if (r.rejection == null) {
      int n = content.content().readableBytes();
      if ((long) r.size + n > fc.options.maxRequestBodyBytes()) {
        rejectAndClose(r.meta, tooLarge("more than " + fc.options.maxRequestBodyBytes()));
        return;
      }
      r.append(content.content());
    }
    if (content instanceof LastHttpContent) {
      cancelReadDeadline();
      receiving = null;
      queue.add(new Work(r.meta, r.rejection == null ? r.bytes() : null, System.nanoTime(), r.rejection, false));
      pump();
    }
  }

  /** The answers that need no body: unknown path, wrong method, missing key, declared body too large. */
  private Rejection precheck(RequestMeta meta, long declaredLength) {
    String allowed = meta.allowedMethod();
    if (allowed == null) {
      return new Rejection(404, "no such endpoint: " + meta.method() + " " + RequestMeta.loggablePath(meta.path()));
    }
    if (!allowed.equals(meta.method())) {
      return new Rejection(405, "method " + meta.method() + " is not allowed on " + meta.path() + "; use "
          + allowed, null, Map.of(HttpHeaderNames.ALLOW.toString(), allowed));
    }
    if (meta.authenticated()) {
      ApiKeys.Refusal refusal = fc.apiKeys.check(meta.headers().get(HttpHeaderNames.AUTHORIZATION));
      if (refusal != null) {
        return new Rejection(401, refusal.message(), null,
            Map.of(HttpHeaderNames.WWW_AUTHENTICATE.toString(), "Bearer"));
      }
    }
    if (declaredLength > fc.options.maxRequestBodyBytes()) {
      return tooLarge(Long.toString(declaredLength));
    }
    return null;
  }

  private Rejection tooLarge(String size) {
    return new Rejection(413, "request body is " + size + " bytes; at most " + fc.options.maxRequestBodyBytes()
        + " bytes are allowed");
  }

  private static Rejection malformed(Throwable cause) {
    if (cause instanceof TooLongHttpLineException) {
      return new Rejection(414, "request line too long");
    }
    if (cause instanceof TooLongHttpHeaderException) {
      return new Rejection(431, "request headers too large");
    }
    return new Rejection(400, "malformed HTTP request: " + cause.getMessage());
  }

  private RequestMeta unknownRequest() {
    return new RequestMeta(fc.nextLocalId(), "-", "-", null, null, HttpVersion.HTTP_1_1, EmptyHttpHeaders.INSTANCE,
        false, remote, System.currentTimeMillis());
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

  /** Answers {@code rejection} once earlier requests are answered, then closes; input is ignored from now on. */
  private void rejectAndClose(RequestMeta meta, Rejection rejection) {
    closing = true;
    cancelReadDeadline();
    receiving = null;
    queue.add(new Work(meta, null, System.nanoTime(), rejection, true));
    if (active == null) {
      ctx.channel().config().setAutoRead(false);
    }
    pump();
  }

  // ---- timers ----

  private void armReadDeadline() {
    if (readDeadline == null && !closing) {
      readDeadline = ctx.executor().schedule(this::readTimedOut, fc.options.requestReadTimeout().toNanos(),
          TimeUnit.NANOSECONDS);
    }
  }

  private void cancelReadDeadline() {
    if (readDeadline != null) {
      readDeadline.cancel(false);
      readDeadline = null;
    }
  }

  private void readTimedOut() {
    readDeadline = null;
    if (closing || !ctx.channel().isActive()) {
      return;
    }
    RequestMeta meta = receiving != null ? receiving.meta : unknownRequest();
    LOG.debug("{}: request not received within {}", remote, fc.options.requestReadTimeout());
    rejectAndClose(meta, new Rejection(408, "request not received within "
        + fc.options.requestReadTimeout().toMillis() + " ms"));
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext context, Object event) {
    if (event instanceof IdleStateEvent) {
      if (active == null && queue.isEmpty() && receiving == null && readDeadline == null) {
        LOG.debug("{}: closing an idle keep-alive connection", remote);
        context.close();
      }
      return;
    }
    context.fireUserEventTriggered(event);
  }

  // ---- answering ----

  private void pump() {
    if (pumping) {
      return;
    }
    pumping = true;
    try {
      while (active == null && !queue.isEmpty() && ctx.channel().isActive()) {
        dispatch(queue.poll());
      }
    } finally {
      pumping = false;
    }
    // a request waiting behind an active one pauses reading until its turn
    ctx.channel().config().setAutoRead(!closing && queue.isEmpty());
  }

  private void dispatch(Work work) {
    HttpExchange exchange = new HttpExchange(fc, this, ctx.channel(), work.meta(), work.readNanos());
    active = exchange;
    fc.metrics.started();
    Rejection rejection = work.rejection();
    if (rejection != null) {
      exchange.sendError(rejection.status(), rejection.body(), rejection.headers(), work.close());
      return;
    }
    try {
      if (work.meta().extra() != null) {
        serveExtra(exchange, work.meta().extra(), work.body());
        return;
      }
      switch (work.meta().endpoint()) {
        case COMPLETIONS, CHAT_COMPLETIONS -> completions.serve(exchange, work.body());
        case MODELS -> exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(fc.modelList()));
        case HEALTH -> {
          if (fc.backend.ready()) {
            exchange.sendEmpty(HttpResponseStatus.OK);
          } else {
            exchange.sendError(503, ErrorResponse.of(503, "cluster is not ready", null));
          }
        }
        case CLUSTER_INFO -> exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(fc.backend.clusterInfo()));
        case VERSION -> exchange.sendJson(HttpResponseStatus.OK,
            fc.codec.toJsonBytes(new FrontendContext.VersionBody(fc.options.version())));
        case METRICS, PROMETHEUS_METRICS -> exchange.sendText(HttpResponseStatus.OK, FrontendServer.PROMETHEUS_TEXT,
            fc.registry.scrape());
      }
    } catch (RuntimeException e) {
      LOG.error("request {} {} {} failed", work.meta().localId(), work.meta().method(), work.meta().path(), e);
      exchange.sendError(500, exchange.internalError());
    }
  }

  /** A backend route: its handler's answer as JSON, or the status of the protocol error it threw. */
  private void serveExtra(HttpExchange exchange, ExtraEndpoint extra, byte[] body) {
    Object answer;
    try {
      answer = extra.handler().handle(body == null ? new byte[0] : body);
    } catch (ProtocolException e) {
      exchange.sendError(e.status(), e.toErrorResponse());
      return;
    }
    exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(answer));
  }

  /** Called by the exchange, on the event loop, once it is complete. */
  void exchangeDone(HttpExchange exchange, ChannelFuture lastWrite, boolean close) {
    if (active == exchange) {
      active = null;
    }
    if (close) {
      closing = true;
      queue.clear();
      cancelReadDeadline();
      if (lastWrite != null) {
        lastWrite.addListener(f -> lingerClose());
      } else {
        ctx.close();
      }
      return;
    }
    pump();
  }

  /**
   * Half-closes after the last response, then discards input until the client closes or
   * {@link #LINGER_MILLIS} pass. Closing with unread input (a refused body) would make the kernel send
   * a reset, which can destroy the response before the client has read it.
   */
  private void lingerClose() {
    Channel channel = ctx.channel();
    if (!channel.isActive()) {
      return;
    }
    if (!(channel instanceof SocketChannel socket)) {
      ctx.close();
      return;
    }
    socket.shutdownOutput().addListener(f -> {
      if (!f.isSuccess()) {
        ctx.close();
        return;
      }
      channel.config().setAutoRead(true);
      ctx.executor().schedule(() -> {
        ctx.close();
      }, LINGER_MILLIS, TimeUnit.MILLISECONDS);
    });
  }

  @Override
  public void channelInactive(ChannelHandlerContext context) {
    cancelReadDeadline();
    receiving = null;
    HttpExchange a = active;
    active = null;
    if (a != null) {
      a.channelClosed();
    }
    if (!queue.isEmpty()) {
      LOG.debug("{}: {} pipelined requests dropped: the connection closed", remote, queue.size());
      queue.clear();
    }
    context.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
    if (cause instanceof IOException) {
      LOG.debug("{}: connection error: {}", remote, cause.toString());
    } else {
      LOG.warn("{}: unexpected error; closing the connection", remote, cause);
    }
    context.close();
  }
}
