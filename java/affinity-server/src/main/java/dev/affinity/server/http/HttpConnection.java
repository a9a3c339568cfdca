package dev.affinity.server.http;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolException;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of a connection's pipeline (one instance per channel, event-loop confined; the
 * pipeline is described in {@link FrontendChannelInitializer}). It receives each request whole, its
 * body aggregated, or refused on its head ({@link RequestHeadCheck.Rejected}), and answers them one at
 * a time in arrival order: a pipelined request waits, with reading paused, until the one before it is
 * answered. It answers 408 when {@link RequestDeadline} expires and 413 when the body grows past the
 * limit ({@link BodyAggregator}); such a rejection leaves unread input, so the connection closes after
 * it, and so it does after a response that says {@code Connection: close}.
 *
 * <p>Half-closure: when the client shuts down its sending side, requests already read are still
 * answered, then the connection closes. A client that closed its socket entirely looks the same until
 * something is written to it, so while an answer is pending the exchange writes probes the client
 * ignores ({@link HttpExchange#probe()}: a {@code 100 Continue} to a request that asked for one, SSE comments in a
 * stream); a closed client answers one with a reset, the next write fails, and the request sees a disconnect.
 * A request that did not ask for {@code 100 Continue} gets no probe before its answer: a client that closed its
 * socket is then found when the answer is written.
 */
final class HttpConnection extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(HttpConnection.class);

  /** The first wait between probes of a half-closed client; it doubles up to {@link #PROBE_MAX_MILLIS}. */
  static final long PROBE_FIRST_MILLIS = 100;
  static final long PROBE_MAX_MILLIS = 5_000;

  /** A request read completely (or refused), waiting for its turn. */
  private record Work(RequestMeta meta, byte[] body, long readNanos, Rejection rejection, boolean close) {}

  private final FrontendContext fc;
  private final RequestDeadline deadline;
  private final CompletionEndpoint completions;
  private ChannelHandlerContext ctx;
  private String remote = "-";

  /** The request whose body is being read: announced by its head, completed by the aggregated request. */
  private RequestMeta reading;
  private final ArrayDeque<Work> queue = new ArrayDeque<>();
  private HttpExchange active;
  /** No more input is accepted: the connection closes once the queued responses are written. */
  private boolean closing;
  /** The client shut down its sending side. */
  private boolean inputShutdown;
  private boolean pumping;

  HttpConnection(FrontendContext fc, RequestDeadline deadline) {
    this.fc = fc;
    this.deadline = deadline;
    this.completions = new CompletionEndpoint(fc);
  }

  @Override
  public void handlerAdded(ChannelHandlerContext context) {
    this.ctx = context;
    this.remote = RequestMeta.remote(context.channel());
  }

  // ---- reading ----

  @Override
  public void channelRead(ChannelHandlerContext context, Object msg) {
    try {
      if (closing) {
        return;
      }
      if (msg instanceof RequestMeta meta) {
        reading = meta;
        deadline.start(); // its first bytes may have come with the end of the request before it
      } else if (msg instanceof RequestHeadCheck.Rejected r) {
        if (r.close()) {
          rejectAndClose(r.meta(), r.rejection());
        } else {
          deadline.requestRead(); // no body: the head was the whole request
          enqueue(new Work(r.meta(), null, System.nanoTime(), r.rejection(), false));
        }
      } else if (msg instanceof FullHttpRequest request) {
        RequestMeta meta = reading != null ? reading : unknownRequest();
        reading = null;
        if (request.decoderResult().isFailure()) {
          rejectAndClose(meta, Rejection.malformed(request.decoderResult().cause()));
          return;
        }
        deadline.requestRead();
        enqueue(new Work(meta, ByteBufUtil.getBytes(request.content()), System.nanoTime(), null, false));
      }
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext context, Object event) {
    if (event == RequestDeadline.EXPIRED) {
      if (!closing) {
        LOG.debug("{}: request not received within {}", remote, fc.options.requestReadTimeout());
        rejectAndClose(reading != null ? reading : unknownRequest(),
            Rejection.timedOut(fc.options.requestReadTimeout()));
      }
    } else if (event == BodyAggregator.TOO_LARGE) {
      if (!closing) {
        long limit = fc.options.maxRequestBodyBytes();
        rejectAndClose(reading != null ? reading : unknownRequest(), Rejection.tooLarge("more than " + limit, limit));
      }
    } else if (event instanceof IdleStateEvent) {
      if (!closing && idle()) {
        LOG.debug("{}: closing an idle keep-alive connection", remote);
        context.close();
      }
    } else if (event instanceof ChannelInputShutdownEvent) {
      onInputShutdown();
    } else {
      context.fireUserEventTriggered(event);
    }
  }

  private boolean idle() {
    return active == null && queue.isEmpty() && !deadline.pending();
  }

  private RequestMeta unknownRequest() {
    return RequestMeta.unknown(fc.nextLocalId(), remote);
  }

  /** Answers {@code rejection} once earlier requests are answered, then closes; input is ignored from now on. */
  private void rejectAndClose(RequestMeta meta, Rejection rejection) {
    closing = true;
    deadline.stop();
    reading = null;
    if (active == null) {
      ctx.channel().config().setAutoRead(false);
    }
    enqueue(new Work(meta, null, System.nanoTime(), rejection, true));
  }

  private void onInputShutdown() {
    inputShutdown = true;
    if (deadline.pending() || idle()) {
      // a request cut short can never complete; with nothing to answer there is nothing to wait for
      deadline.stop();
      ctx.close();
      return;
    }
    probe(PROBE_FIRST_MILLIS);
  }

  /** Probes a half-closed client now and again later while an answer is pending. */
  private void probe(long nextMillis) {
    if (!ctx.channel().isActive() || (active == null && queue.isEmpty())) {
      return;
    }
    if (active != null) {
      active.probe();
    }
    ctx.executor().schedule(() -> probe(Math.min(2 * nextMillis, PROBE_MAX_MILLIS)), nextMillis,
        TimeUnit.MILLISECONDS);
  }

  // ---- answering ----

  private void enqueue(Work work) {
    queue.add(work);
    pump();
  }

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
    if (!closing) {
      // a request waiting behind an active one pauses reading until its turn
      ctx.channel().config().setAutoRead(queue.isEmpty());
    }
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
      String unauthenticated = fc.backend.authenticate(work.meta().method(), work.meta().path(),
          CompletionEndpoint.headerSource(work.meta().headers()), work.body() == null ? new byte[0] : work.body());
      if (unauthenticated != null) {
        exchange.sendError(401, ErrorResponse.of(401, unauthenticated, null));
        return;
      }
      if (work.meta().extra() != null) {
        serveExtra(exchange, work.meta(), work.body());
        return;
      }
      switch (work.meta().endpoint()) {
        case COMPLETIONS, CHAT_COMPLETIONS, MESSAGES, MESSAGES_COUNT_TOKENS, RESPONSES -> {
          long charge = PromptBudget.chargeOf(work.body() == null ? 0 : work.body().length);
          if (!fc.promptBudget.tryReserve(charge)) {
            exchange.sendError(503, ErrorResponse.of(503, "the frontend holds as many prompts in flight as its heap "
                + "budget allows (" + (fc.promptBudget.limit() >> 20) + " MiB); retry shortly", null),
                Map.of("Retry-After", "1"), false);
            return;
          }
          exchange.onComplete(() -> fc.promptBudget.release(charge));
          completions.serve(exchange, work.body());
        }
        case MODELS -> {
          FrontendContext.ModelList models = fc.modelList();
          if (models == null) {
            exchange.sendError(503, ErrorResponse.of(503, "no context worker is ready to name the model", null));
          } else {
            exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(models));
          }
        }
        case HEALTH -> {
          if (fc.backend.ready()) {
            exchange.sendEmpty(HttpResponseStatus.OK);
          } else {
            exchange.sendError(503, ErrorResponse.of(503, "cluster is not ready", null));
          }
        }
        case PERF_METRICS -> exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(fc.backend.perfMetrics()));
        case CLUSTER_INFO -> exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(fc.backend.clusterInfo()));
        case VERSION -> exchange.sendJson(HttpResponseStatus.OK,
            fc.codec.toJsonBytes(new FrontendContext.VersionBody(fc.options.version())));
        case METRICS, PROMETHEUS_METRICS -> {
          fc.backend.beforeScrape();
          exchange.sendText(HttpResponseStatus.OK, FrontendServer.PROMETHEUS_TEXT, fc.registry.scrape());
        }
      }
    } catch (RuntimeException e) {
      LOG.error("request {} {} {} failed", work.meta().localId(), work.meta().method(), work.meta().path(), e);
      exchange.sendError(500, exchange.internalError());
    }
  }

  /** A backend route: its handler's answer as JSON, or the status of the protocol error it threw. */
  private void serveExtra(HttpExchange exchange, RequestMeta meta, byte[] body) {
    Object answer;
    try {
      java.net.InetAddress client = ctx.channel().remoteAddress() instanceof java.net.InetSocketAddress a
          ? a.getAddress() : null;
      answer = meta.extra().handler().handle(new ExtraEndpoint.Request(meta.method(), meta.path(),
          body == null ? new byte[0] : body, new io.netty.handler.codec.http.QueryStringDecoder(meta.uri()).parameters(),
          meta.headers()::get, client));
    } catch (ProtocolException e) {
      exchange.sendError(e.status(), e.toErrorResponse());
      return;
    }
    if (answer instanceof ExtraEndpoint.Answer a) {
      exchange.sendJson(HttpResponseStatus.valueOf(a.status()), fc.codec.toJsonBytes(a.body()));
    } else {
      exchange.sendJson(HttpResponseStatus.OK, fc.codec.toJsonBytes(answer));
    }
  }

  /**
   * Called by the exchange, on the event loop, once it is complete. {@code close}: the connection ends
   * with it. Its response ({@code lastWrite}, null when it was aborted) then says
   * {@code Connection: close}, and {@code HttpServerKeepAliveHandler} closes the connection once that
   * response is written ({@link LingeringClose} makes it gentle).
   */
  void exchangeDone(HttpExchange exchange, ChannelFuture lastWrite, boolean close) {
    if (active == exchange) {
      active = null;
    }
    boolean inputDone = inputShutdown && queue.isEmpty();
    if (close || inputDone) {
      closing = true;
      queue.clear();
      deadline.stop();
      if (lastWrite == null) {
        ctx.close();
      } else if (!close) {
        lastWrite.addListener(f -> ctx.close()); // a keep-alive response, and no more requests can come
      }
      return;
    }
    pump();
  }

  /** A streaming client caught up (or fell behind): its exchange resumes a paused worker. */
  @Override
  public void channelWritabilityChanged(ChannelHandlerContext context) {
    HttpExchange a = active;
    if (a != null) {
      a.writabilityChanged();
    }
    context.fireChannelWritabilityChanged();
  }

  @Override
  public void channelInactive(ChannelHandlerContext context) {
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
    if (cause instanceof IOException || cause instanceof PrematureChannelClosureException) {
      LOG.debug("{}: connection error: {}", remote, cause.toString());
    } else {
      LOG.warn("{}: unexpected error; closing the connection", remote, cause);
    }
    context.close();
  }
}
