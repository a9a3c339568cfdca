import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;

/**
 * The floor under the frontend's HTTP work, for scripts/bench-frontend: a Netty relay on one epoll event loop that
 * makes the frontend's three HTTP/1.1 exchanges per request and nothing else. The client's body goes unchanged to the
 * context worker, then, once that answers, to the generation worker, whose answer (status and body) goes back to the
 * client; a context answer other than 200 goes back instead. No JSON, no routing, no deadlines, no metrics: what is
 * left is Netty's codecs and pipeline and the kernel's sockets, the part of the frontend's CPU per request that
 * the frontend's own code cannot take away. Each client connection gets its own pair of worker connections on the
 * same loop. Not a product: run with the server's class path,
 * {@code java -cp "java/affinity-server/target/lib/*" scripts/lib/RelayFloor.java PORT CTX_PORT GEN_PORT}
 * (all on 127.0.0.1).
 */
public final class RelayFloor {
  private static final String HOST = "127.0.0.1";

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 3) {
      System.err.println("usage: RelayFloor PORT CONTEXT_WORKER_PORT GENERATION_WORKER_PORT");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    int ctxPort = Integer.parseInt(args[1]);
    int genPort = Integer.parseInt(args[2]);
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    new ServerBootstrap().group(loop).channel(EpollServerSocketChannel.class)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20), new ClientSide(ctxPort, genPort));
          }
        })
        .bind(HOST, port).sync().channel().closeFuture().sync();
  }

  /** One client connection and its two worker connections. */
  private static final class ClientSide extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final int ctxPort;
    private final int genPort;
    private Channel client;
    private ChannelFuture ctxWorker;
    private ChannelFuture genWorker;
    private ByteBuf body; // the request in flight's body and path, kept for the generation leg
    private String uri;

    ClientSide(int ctxPort, int genPort) {
      this.ctxPort = ctxPort;
      this.genPort = genPort;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      client = ctx.channel();
      ctxWorker = connect(ctxPort, true);
      genWorker = connect(genPort, false);
      super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      ctxWorker.channel().close();
      genWorker.channel().close();
      if (body != null) {
        body.release();
        body = null;
      }
      super.channelInactive(ctx);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      body = request.content().retain();
      uri = request.uri();
      send(ctxWorker, uri, body.retainedDuplicate());
    }

    private void send(ChannelFuture worker, String uri, ByteBuf content) {
      FullHttpRequest leg = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, uri, content);
      leg.headers().set(HttpHeaderNames.HOST, HOST)
          .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
          .setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes());
      if (worker.isDone()) {
        worker.channel().writeAndFlush(leg, worker.channel().voidPromise());
      } else {
        worker.addListener(f -> worker.channel().writeAndFlush(leg, worker.channel().voidPromise()));
      }
    }

    private void answered(boolean context, FullHttpResponse answer) {
      if (context && answer.status().code() == 200) {
        ByteBuf content = body;
        body = null;
        send(genWorker, uri, content);
        return;
      }
      if (body != null) {
        body.release();
        body = null;
      }
      FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, answer.status(), answer.content().retain());
      out.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
          .setInt(HttpHeaderNames.CONTENT_LENGTH, out.content().readableBytes());
      client.writeAndFlush(out, client.voidPromise());
    }

    private ChannelFuture connect(int port, boolean context) {
      return new Bootstrap().group(client.eventLoop()).channel(EpollSocketChannel.class)
          .option(ChannelOption.TCP_NODELAY, true)
          .handler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(1 << 20),
                  new SimpleChannelInboundHandler<FullHttpResponse>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext c, FullHttpResponse answer) {
                      answered(context, answer);
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext c) {
                      client.close();
                    }
                  });
            }
          })
          .connect(HOST, port);
    }
  }
}
