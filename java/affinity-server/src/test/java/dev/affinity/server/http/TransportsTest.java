package dev.affinity.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Channels are chosen to match the loops they join: epoll loops get epoll channels, NIO loops NIO channels. */
class TransportsTest {

  @Test
  void channelsMatchTheirLoops() {
    EventLoopGroup nio = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    EventLoopGroup own = new MultiThreadIoEventLoopGroup(1, Transports.ioHandlerFactory());
    try {
      assertEquals(NioSocketChannel.class, Transports.socketChannel(nio));
      assertEquals(NioServerSocketChannel.class, Transports.serverChannel(nio));
      assertEquals(Transports.epoll() ? EpollSocketChannel.class : NioSocketChannel.class, Transports.socketChannel(own));
      assertEquals(Transports.epoll() ? EpollServerSocketChannel.class : NioServerSocketChannel.class,
          Transports.serverChannel(own));
    } finally {
      nio.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      own.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /** Zero loops asked for: one per available processor (nginx's {@code auto}), not Netty's twice that. */
  @Test
  void ioGroupDefaultsToOneLoopPerProcessor() {
    EventLoopGroup auto = FrontendServer.ioGroup(0);
    EventLoopGroup two = FrontendServer.ioGroup(2);
    try {
      assertEquals(Runtime.getRuntime().availableProcessors(), count(auto));
      assertEquals(2, count(two));
    } finally {
      auto.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      two.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
    assertThrows(IllegalArgumentException.class, () -> FrontendServer.ioGroup(-1));
  }

  private static int count(EventLoopGroup group) {
    int n = 0;
    for (var ignored : group) {
      n++;
    }
    return n;
  }
}
