package dev.affinity.server.worker;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of a worker connection's pipeline (after Netty's {@code HttpResponseDecoder}): it writes
 * one request at a time, as bytes ({@link RequestTemplate#encode}), and feeds the answer to that request's
 * {@link Exchange}, then gives the connection back to the {@link ConnectionPool} (reusable when the answer was read to its end, the worker
 * keeps the connection alive and the exchange did not give up on it) or closes it. Event-loop confined.
 */
final class ExchangeHandler extends ChannelInboundHandlerAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(ExchangeHandler.class);

  private final ConnectionPool pool;
  private Channel channel;
  private Exchange current;
  private HttpResponse head;
  /** Inside an interim (1xx) answer, which is skipped. */
  private boolean interim;

  ExchangeHandler(ConnectionPool pool) {
    this.pool = pool;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    channel = ctx.channel();
  }

  /** The handler of a pooled connection. */
  static ExchangeHandler of(Channel ch) {
    return ch.pipeline().get(ExchangeHandler.class);
  }

  /** Writes {@code request} and reads its answer into {@code exchange}; on the connection's loop. */
  void start(Exchange exchange, RequestTemplate request) {
    if (current != null) {
      throw new IllegalStateException("a worker connection serves one exchange at a time");
    }
    ByteBuf encoded = request.encode(channel.alloc());
    current = exchange;
    head = null;
    interim = false;
    // no promise or listener per request: a failed write reaches exceptionCaught, which fails the exchange and closes
    channel.writeAndFlush(encoded, channel.voidPromise());
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    try {
      Exchange e = current;
      if (e == null) {
        LOG.debug("{}: data without a request; closing the connection", ctx.channel());
        ctx.close();
        return;
      }
      if (msg instanceof HttpObject o && o.decoderResult().isFailure()) {
        fail(o.decoderResult().cause());
        ctx.close();
        return;
      }
      if (msg instanceof HttpResponse r) {
        interim = r.status().codeClass() == HttpStatusClass.INFORMATIONAL;
        if (!interim) {
          head = r;
          e.onHead(r);
        }
      }
      if (msg instanceof HttpContent c && !interim) {
        if (current == e && c.content().isReadable()) {
          e.onContent(c.content());
        }
        if (msg instanceof LastHttpContent && current == e) {
          current = null;
          boolean reusable = e.onEnd() && head != null && HttpUtil.isKeepAlive(head);
          pool.release(ctx.channel(), reusable);
        }
      } else if (msg instanceof LastHttpContent) {
        interim = false; // the end of an interim answer
      }
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    fail(new PrematureChannelClosureException("the worker closed the connection before the answer was complete"));
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    fail(cause);
    ctx.close();
  }

  private void fail(Throwable cause) {
    Exchange e = current;
    current = null;
    if (e != null) {
      e.onFailure(cause);
    }
  }
}
