package dev.affinity.server.worker;

import dev.affinity.server.http.Transports;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.resolver.NoopAddressResolverGroup;
import java.net.InetSocketAddress;
import javax.net.ssl.SSLException;

/**
 * The connections to one worker: a {@link ConnectionPool} on the given event loops whose channels are TCP (TLS for
 * an {@code https} URL, the JVM's default trust store), with Netty's response decoder and the pool's
 * {@link ExchangeHandler}. Requests are written as bytes ({@link RequestTemplate#encode}), so there is no encoder.
 */
final class WorkerConnections {
  /** Longest status line and headers of an answer (upstream's perf-metrics headers fit). */
  private static final int MAX_INITIAL_LINE = 8 * 1024;
  private static final int MAX_HEADER_SIZE = 64 * 1024;
  private static final int MAX_CHUNK_SIZE = 64 * 1024;

  private WorkerConnections() {}

  /** The pool of connections to the worker {@code settings} names. */
  static ConnectionPool pool(HttpWorkerSettings settings, EventLoopGroup loops) {
    SslContext tls = tlsContext(settings);
    String hostName = settings.baseUrl().getHost();
    int port = settings.port();
    Bootstrap bootstrap = new Bootstrap()
        .group(loops)
        .channel(Transports.socketChannel(loops))
        .resolver(NoopAddressResolverGroup.INSTANCE) // resolved here, never on an event loop
        .remoteAddress(new InetSocketAddress(hostName, port))
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, settings.connectTimeout().toMillis()))
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.SO_KEEPALIVE, true);
    ConnectionPool pool = new ConnectionPool(settings.workerId(), loops, bootstrap, settings.maxConnections(),
        settings.idleTimeout().toNanos());
    bootstrap.handler(new ChannelInitializer<SocketChannel>() {
      @Override
      protected void initChannel(SocketChannel ch) {
        if (tls != null) {
          ch.pipeline().addLast("tls", tls.newHandler(ch.alloc(), hostName, port));
        }
        ch.pipeline().addLast("http", new HttpResponseDecoder(MAX_INITIAL_LINE, MAX_HEADER_SIZE, MAX_CHUNK_SIZE));
        ch.pipeline().addLast("exchange", new ExchangeHandler(pool));
      }
    });
    return pool;
  }

  private static SslContext tlsContext(HttpWorkerSettings settings) {
    if (!settings.tls()) {
      return null;
    }
    try {
      return SslContextBuilder.forClient().build(); // the JVM's default trust store
    } catch (SSLException e) {
      throw new IllegalStateException("cannot set up TLS for " + settings.baseUrl(), e);
    }
  }
}
