package dev.affinity.server.worker;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.internal.ThreadExecutorMap;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keep-alive connections to one worker, pooled per event loop so that a request stays on the thread
 * it started on: a leg sent from an event loop of the group (a frontend connection's loop, or the loop
 * where the previous leg's answer arrived) gets a connection of that loop, and its answer is read there.
 * Idle connections wait in a stack per loop (the most recently used is reused first; those idle longer
 * than the idle timeout are closed). Each connection serves one exchange at a time (HTTP/1.1 without
 * pipelining).
 *
 * <p>Without a limit ({@code maxConnections == 0}, upstream's default) a request that finds no idle
 * connection opens one. With a limit, requests beyond it wait in a queue and get the next connection that
 * is released (on that connection's loop) or the slot of the next one that closes.
 *
 * <p>Thread-safety: the idle stacks are confined to their loops; counts and the wait queue are
 * concurrent. {@link #acquire} may be called from any thread, {@link #release} on the connection's loop.
 */
final class ConnectionPool implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionPool.class);
  /** When a pooled connection was put back (System.nanoTime). */
  private static final AttributeKey<Long> IDLE_SINCE = AttributeKey.valueOf("affinity.idleSince");

  /** Where an acquired connection (or the reason there is none) goes; called on the connection's loop. */
  interface Handout {
    /** {@code reused}: the connection served an exchange before (it may have been closed by the worker since). */
    void acquired(Channel channel, boolean reused);

    void failed(Throwable cause);
  }

  private record Waiter(EventLoop loop, Handout handout) {}

  private final String workerId;
  private final EventLoopGroup group;
  private final Bootstrap bootstrap;
  private final int max;
  private final long idleNanos;
  /** Connections open or being opened. */
  private final AtomicInteger open = new AtomicInteger();
  /** Connections waiting in an idle stack. */
  private final AtomicInteger idleCount = new AtomicInteger();
  private final Map<EventExecutor, ArrayDeque<Channel>> idle = new ConcurrentHashMap<>();
  /** Loops with an idle sweep pending: at most one per loop, however often its stack empties and refills. */
  private final Set<EventExecutor> sweeping = ConcurrentHashMap.newKeySet();
  private final Queue<Waiter> waiters = new ConcurrentLinkedQueue<>();
  private final Set<Channel> channels = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /**
   * @param bootstrap connects to the worker (remote address, options, pipeline); its group is replaced by
   *     the loop each connection belongs to
   * @param max most connections at once, 0 for no limit
   */
  ConnectionPool(String workerId, EventLoopGroup group, Bootstrap bootstrap, int max, long idleNanos) {
    this.workerId = workerId;
    this.group = group;
    this.bootstrap = bootstrap;
    this.max = max;
    this.idleNanos = idleNanos;
  }

  /** The loop a request started on this thread belongs to: this thread's loop when it is one of the group's. */
  EventLoop loop() {
    EventExecutor current = ThreadExecutorMap.currentExecutor();
    if (current instanceof EventLoop l && l.parent() == group) {
      return l;
    }
    return group.next();
  }

  /** Connections open (idle or in use) or being opened. */
  int open() {
    return open.get();
  }

  /** Connections waiting idle for the next exchange. */
  int idle() {
    return idleCount.get();
  }

  /** Requests waiting for a connection (only with a limit). */
  int waiting() {
    return waiters.size();
  }

  /** Hands a connection of {@code loop} to {@code handout}, on that loop: an idle one, a new one, or later. */
  void acquire(EventLoop loop, Handout handout) {
    if (loop.inEventLoop()) {
      acquireOnLoop(loop, handout);
    } else {
      execute(loop, () -> acquireOnLoop(loop, handout), handout);
    }
  }

  /** A new connection on {@code loop}, whatever is idle (a retry after a reused connection turned out closed). */
  void acquireNew(EventLoop loop, Handout handout) {
    execute(loop, () -> {
      if (closed) {
        handout.failed(new ClosedChannelException());
      } else if (reserveSlot()) {
        connect(loop, handout);
      } else {
        waitFor(loop, handout);
      }
    }, handout);
  }

  private void acquireOnLoop(EventLoop loop, Handout handout) {
    if (closed) {
      handout.failed(new ClosedChannelException());
      return;
    }
    Channel ch = pollIdle(loop);
    if (ch != null) {
      handout.acquired(ch, true);
    } else if (reserveSlot()) {
      connect(loop, handout);
    } else {
      waitFor(loop, handout);
    }
  }

  private boolean reserveSlot() {
    if (max == 0) {
      open.incrementAndGet();
      return true;
    }
    while (true) {
      int n = open.get();
      if (n >= max) {
        return false;
      }
      if (open.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  private void waitFor(EventLoop loop, Handout handout) {
    waiters.add(new Waiter(loop, handout));
    // a connection released or closed while this request was being queued must still find it
    serveWaiters();
  }

  /** Opens a connection on {@code loop} (a slot is reserved) and hands it out. */
  private void connect(EventLoop loop, Handout handout) {
    ChannelFuture f;
    try {
      f = bootstrap.clone(loop).connect();
    } catch (RuntimeException e) {
      open.decrementAndGet();
      handout.failed(e);
      serveWaiters();
      return;
    }
    Channel ch = f.channel();
    channels.add(ch);
    ch.closeFuture().addListener(c -> closed(ch));
    f.addListener(done -> {
      if (done.isSuccess() && !closed) {
        handout.acquired(ch, false);
      } else {
        ch.close();
        handout.failed(done.isSuccess() ? new ClosedChannelException() : done.cause());
      }
    });
  }

  /**
   * Takes a connection back after its exchange, on its loop: reused ({@code reusable}: the answer was read
   * to its end and the worker keeps the connection alive) by a waiting request or kept idle, else closed.
   */
  void release(Channel ch, boolean reusable) {
    if (!reusable || closed || !ch.isActive()) {
      ch.close();
      return;
    }
    Waiter w = waiters.poll();
    if (w != null) {
      w.handout().acquired(ch, true); // on this connection's loop, not the waiter's
      return;
    }
    ArrayDeque<Channel> stack = idle.computeIfAbsent(ch.eventLoop(), k -> new ArrayDeque<>());
    ch.attr(IDLE_SINCE).set(System.nanoTime());
    stack.push(ch);
    idleCount.incrementAndGet();
    if (sweeping.add(ch.eventLoop())) {
      scheduleSweep(ch.eventLoop(), stack, idleNanos);
    }
    if (!waiters.isEmpty()) { // a request queued meanwhile
      serveFromIdle(ch.eventLoop());
    }
  }

  /** The most recently used live connection of {@code loop}; expired or dead ones are closed on the way. */
  private Channel pollIdle(EventLoop loop) {
    ArrayDeque<Channel> stack = idle.get(loop);
    if (stack == null) {
      return null;
    }
    long now = System.nanoTime();
    for (Channel ch; (ch = stack.poll()) != null; ) {
      idleCount.decrementAndGet();
      if (ch.isActive() && now - ch.attr(IDLE_SINCE).get() < idleNanos) {
        return ch;
      }
      ch.close();
    }
    return null;
  }

  /**
   * In {@code delayNanos}, closes the connections of {@code stack} idle longer than the timeout, then looks
   * again when the oldest one left expires; with none left, the loop's sweep ends until the next release.
   */
  private void scheduleSweep(EventLoop loop, ArrayDeque<Channel> stack, long delayNanos) {
    try {
      loop.schedule(() -> {
        long now = System.nanoTime();
        Channel oldest;
        while ((oldest = stack.peekLast()) != null && now - oldest.attr(IDLE_SINCE).get() >= idleNanos) {
          stack.pollLast();
          idleCount.decrementAndGet();
          oldest.close();
        }
        if (oldest == null) {
          sweeping.remove(loop);
        } else {
          scheduleSweep(loop, stack, oldest.attr(IDLE_SINCE).get() + idleNanos - now);
        }
      }, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      sweeping.remove(loop);
      LOG.debug("worker {}: the event loop is shut down; no idle sweep", workerId);
    }
  }

  /** A connection closed (on its loop): its slot is free, its idle entry goes. */
  private void closed(Channel ch) {
    channels.remove(ch);
    open.decrementAndGet();
    ArrayDeque<Channel> stack = idle.get(ch.eventLoop());
    if (stack != null && stack.remove(ch)) {
      idleCount.decrementAndGet();
    }
    serveWaiters();
  }

  /** Gives waiting requests free slots (new connections) and idle connections. */
  private void serveWaiters() {
    while (!waiters.isEmpty() && !closed && reserveSlot()) {
      Waiter w = waiters.poll();
      if (w == null) {
        open.decrementAndGet();
        break;
      }
      execute(w.loop(), () -> connect(w.loop(), w.handout()), w.handout());
    }
    if (!waiters.isEmpty() && idleCount.get() > 0) {
      for (EventExecutor loop : idle.keySet()) {
        execute(loop, () -> serveFromIdle((EventLoop) loop), null);
      }
    }
    if (closed) {
      failWaiters();
    }
  }

  /** On {@code loop}: its idle connections go to waiting requests. */
  private void serveFromIdle(EventLoop loop) {
    while (!waiters.isEmpty()) {
      Channel ch = pollIdle(loop);
      if (ch == null) {
        return;
      }
      Waiter w = waiters.poll();
      if (w == null) {
        release(ch, true);
        return;
      }
      w.handout().acquired(ch, true);
    }
  }

  private void execute(EventExecutor loop, Runnable task, Handout onRejected) {
    try {
      loop.execute(task);
    } catch (RejectedExecutionException e) {
      if (onRejected != null) {
        onRejected.failed(new ClosedChannelException());
      }
    }
  }

  private void failWaiters() {
    for (Waiter w; (w = waiters.poll()) != null; ) {
      w.handout().failed(new ClosedChannelException());
    }
  }

  /** Closes every connection, idle or in use (their exchanges fail), and fails the waiting requests. */
  @Override
  public void close() {
    closed = true;
    failWaiters();
    for (Channel ch : channels) {
      ch.close();
    }
  }
}
