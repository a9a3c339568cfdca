package dev.affinity.server.http;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The OpenAI-compatible HTTP/1.1 frontend (Netty, NIO transport; {@link FrontendChannelInitializer}
 * builds each connection's pipeline). Endpoints, statuses and headers are described in
 * docs/frontend.md. Start it with {@link #start}; {@link #close} stops accepting, closes every
 * connection (in-flight requests see a disconnect) and closes the access log.
 */
public final class FrontendServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FrontendServer.class);

  /** The content type of {@code /metrics}: Prometheus text exposition format 0.0.4. */
  static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

  private final FrontendContext context;
  private final EventLoopGroup acceptor;
  private final EventLoopGroup workers;
  /** Whether {@link #workers} are this server's own (shut down on close) or the caller's. */
  private final boolean ownWorkers;
  private final Channel serverChannel;
  private final InetSocketAddress address;
  private final AtomicBoolean closed = new AtomicBoolean();

  private FrontendServer(FrontendContext context, EventLoopGroup acceptor, EventLoopGroup workers, boolean ownWorkers,
      Channel serverChannel) {
    this.context = context;
    this.acceptor = acceptor;
    this.workers = workers;
    this.ownWorkers = ownWorkers;
    this.serverChannel = serverChannel;
    this.address = (InetSocketAddress) serverChannel.localAddress();
  }

  /**
   * Binds {@code options.host():options.port()} and starts serving.
   *
   * @throws IOException when the address cannot be bound
   * @throws IllegalArgumentException when the backend's extra routes are invalid (a built-in path, no
   *     leading slash)
   */
  public static FrontendServer start(FrontendOptions options, FrontendBackend backend,
      PrometheusMeterRegistry registry) throws IOException {
    return start(options, backend, registry, ioGroup(Objects.requireNonNull(options, "options").ioThreads()), true);
  }

  /**
   * {@link #start(FrontendOptions, FrontendBackend, PrometheusMeterRegistry)} on the caller's event loops
   * ({@link #ioGroup}), which the server does not shut down: the orchestration's HTTP workers use the same
   * loops, so that a request and its worker legs stay on one thread.
   */
  public static FrontendServer start(FrontendOptions options, FrontendBackend backend,
      PrometheusMeterRegistry registry, EventLoopGroup io) throws IOException {
    return start(options, backend, registry, Objects.requireNonNull(io, "io"), false);
  }

  /**
   * Event loops for client connections (and worker connections sharing them); {@code threads} 0: one per available
   * processor, as nginx's {@code worker_processes auto} (Netty's own default, twice that, costs a proxy more CPU per
   * request where its loops share the cores with workers: docs/benchmarks.md, "Event loops").
   */
  public static EventLoopGroup ioGroup(int threads) {
    int n = threads == 0 ? Runtime.getRuntime().availableProcessors() : threads;
    return new MultiThreadIoEventLoopGroup(n, new DefaultThreadFactory("affinity-http-io", true),
        Transports.ioHandlerFactory());
  }

  private static FrontendServer start(FrontendOptions options, FrontendBackend backend,
      PrometheusMeterRegistry registry, EventLoopGroup workers, boolean ownWorkers) throws IOException {
    Objects.requireNonNull(options, "options");
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(registry, "registry");
    FrontendContext context;
    try {
      context = new FrontendContext(options, backend, registry,
          new DefaultChannelGroup("affinity-frontend", GlobalEventExecutor.INSTANCE)); // checks extra routes
    } catch (RuntimeException e) {
      if (ownWorkers) {
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      throw e;
    }
    Class<? extends ServerSocketChannel> serverChannel = Transports.serverChannel(workers);
    EventLoopGroup acceptor = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("affinity-http-accept", true),
        Transports.ioHandlerFactory(workers));
    ServerBootstrap bootstrap = new ServerBootstrap()
        .group(acceptor, workers)
        .channel(serverChannel)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .option(ChannelOption.SO_REUSEADDR, true)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.SO_KEEPALIVE, true)
        // a client that shuts down its sending side after its request still gets the answer
        .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
        .childHandler(new FrontendChannelInitializer(context));
    ChannelFuture bound = bootstrap.bind(options.host(), options.port()).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      acceptor.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      if (ownWorkers) {
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      throw new IOException("cannot bind the frontend to " + options.host() + ":" + options.port() + ": "
          + bound.cause().getMessage(), bound.cause());
    }
    FrontendServer server = new FrontendServer(context, acceptor, workers, ownWorkers, bound.channel());
    LOG.info("frontend listening on {}:{}", server.address.getHostString(), server.port());
    return server;
  }

  /** The bound port (the chosen one when the options asked for port 0). */
  public int port() {
    return address.getPort();
  }

  /** The bound address. */
  public InetSocketAddress address() {
    return address;
  }

  public FrontendOptions options() {
    return context.options;
  }

  /** The registry {@code /metrics} exposes; the orchestration adds its meters here. */
  public PrometheusMeterRegistry registry() {
    return context.registry;
  }

  /** Requests read and not yet answered. */
  public int inFlight() {
    return context.metrics.inFlight();
  }

  /** Blocks until the server is closed. */
  public void awaitClose() throws InterruptedException {
    serverChannel.closeFuture().sync();
  }

  @Override
  public void close() {
    shutdown(java.time.Duration.ZERO);
  }

  /**
   * Stops accepting connections, lets the requests in flight (streams included) finish for up to
   * {@code drain}, then closes every connection and the event loops.
   */
  public void shutdown(java.time.Duration drain) {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    serverChannel.close().awaitUninterruptibly();
    long deadline = System.nanoTime() + drain.toNanos();
    while (inFlight() > 0 && System.nanoTime() - deadline < 0) {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    if (inFlight() > 0) {
      LOG.warn("closing the frontend with {} requests still in flight", inFlight());
    }
    context.channels.close().awaitUninterruptibly();
    acceptor.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    if (ownWorkers) {
      workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }
    context.close();
    context.options.accessLog().close();
    LOG.info("frontend on port {} closed", port());
  }
}
