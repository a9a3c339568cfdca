package dev.affinity.server.http;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.HttpServerKeepAliveHandler;
import io.netty.handler.timeout.IdleStateHandler;
import java.util.concurrent.TimeUnit;

/**
 * Builds a client connection's pipeline, in order from the socket:
 *
 * <ol>
 *   <li>{@code read-deadline}: {@link RequestDeadline}, the time a whole request may take once its
 *       first byte arrived (408);
 *   <li>{@code keep-alive-idle}: Netty's {@link IdleStateHandler}, so that an idle keep-alive
 *       connection closes after {@link FrontendOptions#keepAliveTimeout()} (absent when that is 0);
 *   <li>{@code http}: Netty's {@link HttpServerCodec} (request line 8 KiB, headers 32 KiB);
 *   <li>{@code linger}: {@link LingeringClose}, the gentle close after a response that ends the
 *       connection;
 *   <li>{@code keep-alive}: Netty's {@link HttpServerKeepAliveHandler}: {@code Connection} headers, and
 *       the close after the last response;
 *   <li>{@code head-check}: {@link RequestHeadCheck}, the refusals decided on the head (400, 401, 404,
 *       405, 413, 414, 417, 431) before a body is read;
 *   <li>{@code continue}: Netty's {@link HttpServerExpectContinueHandler}, {@code 100 Continue} for a
 *       request that passed the head check;
 *   <li>{@code aggregator}: {@link BodyAggregator}, Netty's {@code HttpObjectAggregator} with the body
 *       limit (413);
 *   <li>{@code frontend}: {@link HttpConnection}, which answers in request order.
 * </ol>
 */
final class FrontendChannelInitializer extends ChannelInitializer<SocketChannel> {
  static final int MAX_INITIAL_LINE = 8 * 1024;
  static final int MAX_HEADER_SIZE = 32 * 1024;
  static final int MAX_CHUNK_SIZE = 64 * 1024;

  private final FrontendContext fc;

  FrontendChannelInitializer(FrontendContext fc) {
    this.fc = fc;
  }

  @Override
  protected void initChannel(SocketChannel ch) {
    fc.channels.add(ch);
    FrontendOptions options = fc.options;
    RequestDeadline deadline = new RequestDeadline(options.requestReadTimeout());
    ChannelPipeline p = ch.pipeline();
    p.addLast("read-deadline", deadline);
    if (!options.keepAliveTimeout().isZero()) {
      p.addLast("keep-alive-idle",
          new IdleStateHandler(0, 0, options.keepAliveTimeout().toNanos(), TimeUnit.NANOSECONDS));
    }
    p.addLast("http", new HttpServerCodec(new HttpDecoderConfig()
        .setMaxInitialLineLength(MAX_INITIAL_LINE)
        .setMaxHeaderSize(MAX_HEADER_SIZE)
        .setMaxChunkSize(MAX_CHUNK_SIZE)));
    p.addLast("linger", new LingeringClose());
    p.addLast("keep-alive", new HttpServerKeepAliveHandler());
    p.addLast("head-check", new RequestHeadCheck(fc));
    p.addLast("continue", new HttpServerExpectContinueHandler());
    p.addLast("aggregator", new BodyAggregator(options.maxRequestBodyBytes()));
    p.addLast("frontend", new HttpConnection(fc, deadline));
  }
}
