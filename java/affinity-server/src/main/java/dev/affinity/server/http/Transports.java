package dev.affinity.server.http;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Netty transport of the frontend's event loops: Linux's native epoll where it loads (fewer system calls
 * and less bookkeeping per read and write than the JDK's NIO selector), else NIO. The system property
 * {@value #PROPERTY}{@code =nio} keeps NIO. Channels must match the loops they are registered with, so the
 * channel classes are chosen from the loop group at hand ({@link #socketChannel}, {@link #serverChannel}).
 */
public final class Transports {
  private static final Logger LOG = LoggerFactory.getLogger(Transports.class);
  /** {@code nio} or {@code epoll} (the default where available). */
  public static final String PROPERTY = "affinity.netty.transport";

  private static final boolean EPOLL = useEpoll();

  private Transports() {}

  private static boolean useEpoll() {
    if ("nio".equalsIgnoreCase(System.getProperty(PROPERTY, ""))) {
      return false;
    }
    try {
      if (Epoll.isAvailable()) {
        return true;
      }
      LOG.debug("native epoll unavailable ({}); using NIO", String.valueOf(Epoll.unavailabilityCause()));
    } catch (LinkageError e) {
      LOG.debug("native epoll unavailable ({}); using NIO", e.toString());
    }
    return false;
  }

  /** Whether new loops use epoll. */
  public static boolean epoll() {
    return EPOLL;
  }

  /** The I/O handler of new event loops. */
  public static IoHandlerFactory ioHandlerFactory() {
    return EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
  }

  /** The I/O handler of new event loops whose channels work with {@code group}'s (same transport). */
  public static IoHandlerFactory ioHandlerFactory(EventLoopGroup group) {
    return isEpoll(group) ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
  }

  private static boolean isEpoll(EventLoopGroup group) {
    return group instanceof IoEventLoopGroup g && g.isIoType(EpollIoHandler.class);
  }

  /** The client socket channel for connections registered with {@code group}. */
  public static Class<? extends SocketChannel> socketChannel(EventLoopGroup group) {
    return isEpoll(group) ? EpollSocketChannel.class : NioSocketChannel.class;
  }

  /** The server socket channel whose accepted connections are registered with {@code group}. */
  public static Class<? extends ServerSocketChannel> serverChannel(EventLoopGroup group) {
    return isEpoll(group) ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }
}
