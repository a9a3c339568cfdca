package dev.affinity.server.http;

import dev.affinity.conversation.PresentedKey;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;

/**
 * Decides on a request's head, before its body is read, whether it may go on: a head the decoder could
 * not parse (400, 414, 431), a missing or repeated {@code Host} (400), an unknown path (404), a wrong method (405 with {@code Allow}), a missing
 * or wrong API key (401), a declared {@code Content-Length} over the limit (413) and an {@code Expect}
 * other than {@code 100-continue} (417) are refused here. It sits between the HTTP codec and
 * {@code HttpServerExpectContinueHandler}, so a refused request never gets {@code 100 Continue}.
 *
 * <p>It does not answer: it passes a {@link Rejected} down the pipeline, so that the answer waits for
 * the requests ahead of it ({@link HttpConnection} answers in request order). A request that may go on
 * is announced by its {@link RequestMeta}, followed by the head itself. The content of a refused
 * request is dropped; when it has a body (which is never read) the connection closes after the answer,
 * and everything after it is dropped too.
 */
final class RequestHeadCheck extends ChannelDuplexHandler {
  /** A request answered on its head; {@code close}: the connection closes after the answer. */
  record Rejected(RequestMeta meta, Rejection rejection, boolean close) {}

  private enum Discard { NONE, THIS_REQUEST, ALL }

  private final FrontendContext fc;
  private String remote = "-";
  /** Requests read whose final response has not been written yet. */
  private int unanswered;
  private Discard discard = Discard.NONE;

  RequestHeadCheck(FrontendContext fc) {
    this.fc = fc;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    remote = RequestMeta.remote(ctx.channel());
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof HttpRequest head && discard != Discard.ALL) {
      onHead(ctx, head);
    } else if (msg instanceof HttpContent content && discard != Discard.NONE) {
      if (discard == Discard.THIS_REQUEST && content instanceof LastHttpContent) {
        discard = Discard.NONE;
      }
      ReferenceCountUtil.release(msg);
    } else if (discard == Discard.ALL) {
      ReferenceCountUtil.release(msg);
    } else {
      ctx.fireChannelRead(msg);
    }
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof HttpResponse response && response.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
      unanswered--;
    }
    ctx.write(msg, promise);
  }

  private void onHead(ChannelHandlerContext ctx, HttpRequest head) {
    boolean earlierPending = unanswered > 0;
    unanswered++;
    long id = fc.nextLocalId();
    if (head.decoderResult().isFailure()) {
      Throwable cause = head.decoderResult().cause();
      ReferenceCountUtil.release(head);
      discard = Discard.ALL;
      if (cause instanceof PrematureChannelClosureException) {
        unanswered--; // the input ended inside a head: nothing to answer, the connection closes
        return;
      }
      ctx.fireChannelRead(new Rejected(RequestMeta.unknown(id, remote), Rejection.malformed(cause), true));
      return;
    }
    RequestMeta meta = meta(id, head);
    long declared;
    try {
      declared = HttpUtil.getContentLength(head, -1L);
    } catch (NumberFormatException e) {
      discard = Discard.ALL;
      ReferenceCountUtil.release(head);
      ctx.fireChannelRead(new Rejected(meta, new Rejection(400, "invalid Content-Length header"), true));
      return;
    }
    Rejection rejection = check(meta, head, declared);
    if (rejection != null) {
      // another HTTP major version's framing cannot be trusted: answer it and close
      boolean hasBody = HttpUtil.isTransferEncodingChunked(head) || declared > 0 || rejection.status() == 505;
      discard = hasBody ? Discard.ALL : Discard.THIS_REQUEST;
      ReferenceCountUtil.release(head);
      ctx.fireChannelRead(new Rejected(meta, rejection, hasBody));
      return;
    }
    if (earlierPending) {
      // 100 Continue now would come before the answers still owed to earlier requests; without it
      // the client sends its body after its own wait
      head.headers().remove(HttpHeaderNames.EXPECT);
    }
    ctx.fireChannelRead(meta);
    ctx.fireChannelRead(head);
  }

  /** The refusals that need no body, in order; null when the request may go on. */
  private Rejection check(RequestMeta meta, HttpRequest head, long declaredLength) {
    HttpVersion version = head.protocolVersion();
    if (version.majorVersion() != 1) {
      return new Rejection(505, "HTTP version " + version.text() + " is not supported: send HTTP/1.1 (or HTTP/1.0)");
    }
    Rejection host = host(head);
    if (host != null) {
      return host;
    }
    String allowed = meta.allowedMethod();
    if (allowed == null) {
      return Rejection.notFound(meta.method(), meta.path());
    }
    if (meta.extra() != null ? !meta.extra().accepts(meta.method()) : !allowed.equals(meta.method())) {
      return Rejection.methodNotAllowed(meta.method(), meta.path(), allowed);
    }
    if (meta.authenticated()) {
      ApiKeys.Refusal refusal = fc.apiKeys.check(PresentedKey.of(head.headers()::get));
      if (refusal != null) {
        return Rejection.unauthorized(refusal.message());
      }
    }
    if (declaredLength > fc.options.maxRequestBodyBytes()) {
      return Rejection.tooLarge(Long.toString(declaredLength), fc.options.maxRequestBodyBytes());
    }
    String expect = head.headers().get(HttpHeaderNames.EXPECT);
    if (expect != null && !HttpUtil.is100ContinueExpected(head)) {
      return new Rejection(417, "unsupported Expect header: " + expect);
    }
    return null;
  }

  /**
   * RFC 9112 §3.2: a server answers 400 to an HTTP/1.1 request without a {@code Host} header and to any request
   * with more than one (HTTP/1.0 predates the header and may leave it out).
   */
  private static Rejection host(HttpRequest head) {
    int hosts = head.headers().getAll(HttpHeaderNames.HOST).size();
    if (hosts > 1) {
      return new Rejection(400, "host: " + hosts + " Host headers; a request carries exactly one (RFC 9112 §3.2)",
          "host", java.util.Map.of());
    }
    if (hosts == 0 && head.protocolVersion().minorVersion() >= 1) {
      return new Rejection(400, "host: an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)", "host",
          java.util.Map.of());
    }
    return null;
  }

  private RequestMeta meta(long id, HttpRequest head) {
    String path = RequestMeta.path(head.uri());
    Endpoint endpoint = Endpoint.of(path);
    ExtraEndpoint extra = endpoint == null ? fc.extraEndpoints.get(path) : null;
    boolean keepAlive = HttpUtil.isKeepAlive(head) && !fc.options.keepAliveTimeout().isZero();
    // answered in HTTP/1.1 unless the request is HTTP/1.0 (an HTTP/1.2 request gets 1.1, RFC 9110 §2.5; another
    // major version its 505 in 1.1)
    HttpVersion version = head.protocolVersion().equals(HttpVersion.HTTP_1_0) ? HttpVersion.HTTP_1_0 : HttpVersion.HTTP_1_1;
    return new RequestMeta(id, head.method().name(), path, endpoint, extra, version, head.headers(),
        keepAlive, remote, System.currentTimeMillis(), head.uri(), HttpUtil.is100ContinueExpected(head));
  }
}
