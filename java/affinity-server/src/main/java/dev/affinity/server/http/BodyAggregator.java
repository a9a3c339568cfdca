package dev.affinity.server.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;

/**
 * Netty's {@link HttpObjectAggregator} with the frontend's answer to a body over the limit: instead of
 * Netty's bodiless 413, it tells {@link HttpConnection} ({@link #TOO_LARGE}), which answers 413 with
 * the frontend's JSON error body in request order and closes the connection. A declared
 * {@code Content-Length} over the limit never gets here ({@link RequestHeadCheck} refuses it on the
 * head); this catches chunked bodies that grow past it.
 */
final class BodyAggregator extends HttpObjectAggregator {
  /** The user event fired when the body being read grew past the limit. */
  static final Object TOO_LARGE = new Object() {
    @Override
    public String toString() {
      return "BodyAggregator.TOO_LARGE";
    }
  };

  /** Netty aggregates into one buffer, so the limit is at most {@link Integer#MAX_VALUE} bytes. */
  BodyAggregator(long maxBodyBytes) {
    super((int) Math.min(maxBodyBytes, Integer.MAX_VALUE));
  }

  @Override
  protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
    ctx.fireUserEventTriggered(TOO_LARGE);
  }
}
