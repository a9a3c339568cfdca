package dev.affinity.server.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection gently after a response that ends it ({@code Connection: close}; Netty's
 * {@code HttpServerKeepAliveHandler} closes once that response is written): it shuts down the
 * sending side, then discards input until the client closes or {@link #LINGER_MILLIS} pass. Closing
 * with unread input (a refused body, a request after a timeout) would make the kernel send a reset,
 * which can destroy the response before the client has read it. Any other close (an abort, an idle
 * connection), and a second close while it lingers (the server stopping), is immediate. It sits
 * right after the HTTP codec, where it sees responses as objects. Event-loop confined.
 */
final class LingeringClose extends ChannelDuplexHandler {
  /** How long a connection closing after a response keeps draining input. */
  static final long LINGER_MILLIS = 2_000;

  /** The last final response written ended the connection. */
  private boolean afterClosingResponse;
  private boolean lingering;
  private ScheduledFuture<?> timer;

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof HttpResponse response && response.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
      afterClosingResponse = !HttpUtil.isKeepAlive(response);
    }
    ctx.write(msg, promise);
  }

  @Override
  public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
    if (lingering || !afterClosingResponse || !(ctx.channel() instanceof SocketChannel socket) || !socket.isActive()
        || socket.isInputShutdown() || socket.isOutputShutdown()) {
      ctx.close(promise);
      return;
    }
    lingering = true;
    socket.closeFuture().addListener(f -> promise.trySuccess());
    socket.shutdownOutput().addListener(f -> {
      if (!f.isSuccess()) {
        ctx.close();
        return;
      }
      socket.config().setAutoRead(true);
      timer = ctx.executor().schedule(() -> {
        ctx.close();
      }, LINGER_MILLIS, TimeUnit.MILLISECONDS);
    });
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (lingering) {
      ReferenceCountUtil.release(msg);
      return;
    }
    ctx.fireChannelRead(msg);
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
    if (lingering && event instanceof ChannelInputShutdownEvent) {
      ctx.close(); // the client has read the answer and closed its side
      return;
    }
    ctx.fireUserEventTriggered(event);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (timer != null) {
      timer.cancel(false);
    }
    ctx.fireChannelInactive();
  }
}
