package dev.affinity.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The time a client has to send a whole request, head and body, once its first byte arrived
 * ({@link FrontendOptions#requestReadTimeout()}). Netty's {@code ReadTimeoutHandler} is an idle timer
 * that every byte resets, so a client trickling one byte at a time would never time out; this is a
 * deadline. It sits in front of the HTTP codec: the first raw bytes of a request start it, and
 * {@link HttpConnection} ends it when the request is complete ({@link #requestRead()}). When it passes,
 * {@link #EXPIRED} travels down the pipeline as a user event, and the connection answers 408.
 * Event-loop confined.
 */
final class RequestDeadline extends ChannelInboundHandlerAdapter {
  /** The user event fired when a request was not read in time. */
  static final Object EXPIRED = new Object() {
    @Override
    public String toString() {
      return "RequestDeadline.EXPIRED";
    }
  };

  private final long timeoutNanos;
  private ChannelHandlerContext ctx;
  private ScheduledFuture<?> timer;
  private boolean stopped;

  RequestDeadline(Duration timeout) {
    this.timeoutNanos = timeout.toNanos();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext context) {
    this.ctx = context;
  }

  @Override
  public void channelRead(ChannelHandlerContext context, Object msg) {
    if (msg instanceof ByteBuf) {
      start();
    }
    context.fireChannelRead(msg);
  }

  /** A request has begun (its first bytes, or its head); does nothing while one is already timed. */
  void start() {
    if (timer == null && !stopped) {
      timer = ctx.executor().schedule(this::expire, timeoutNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** The request being read is complete. */
  void requestRead() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  /** Whether part of a request has arrived and the rest has not. */
  boolean pending() {
    return timer != null;
  }

  /** No more requests are read on this connection. */
  void stop() {
    stopped = true;
    requestRead();
  }

  private void expire() {
    timer = null;
    if (!stopped && ctx.channel().isActive()) {
      ctx.fireUserEventTriggered(EXPIRED);
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext context) {
    stop();
    context.fireChannelInactive();
  }
}
