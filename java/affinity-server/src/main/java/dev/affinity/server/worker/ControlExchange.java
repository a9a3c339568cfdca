package dev.affinity.server.worker;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.HttpResponse;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A control request to a worker ({@code /server_info}, {@code /health}, {@code /kv_cache_events}): its
 * whole answer, or the failure, completes the future {@link #send} returns. Its budget covers the whole
 * exchange, on the loop's timer; a connection it gives up on midway is closed. A {@code GET} (idempotent)
 * is written once more on a new connection when a reused one breaks before any answer, which is what a
 * keep-alive connection the worker closed while it was idle looks like.
 */
final class ControlExchange extends Exchange implements ConnectionPool.Handout {
  /** A worker's answer to a control request. */
  record Answer(int status, byte[] body) {}

  private final RequestTemplate request;
  private final ConnectionPool pool;
  private final EventLoop loop;
  private final CompletableFuture<Answer> answer = new CompletableFuture<>();
  private volatile Channel channel;
  private boolean reused;
  private boolean retried;
  private int status = -1;
  private BodyBuffer body;

  private ControlExchange(RequestTemplate request, ConnectionPool pool, EventLoop loop) {
    this.request = request;
    this.pool = pool;
    this.loop = loop;
  }

  /** Sends {@code request} on a connection of {@code loop}; the answer completes within {@code timeoutNanos}. */
  static CompletableFuture<Answer> send(RequestTemplate request, ConnectionPool pool, EventLoop loop, long timeoutNanos) {
    ControlExchange e = new ControlExchange(request, pool, loop);
    try {
      Future<?> timer = loop.schedule(() -> e.giveUp(new TimeoutException("no answer to " + request.uri() + " within "
          + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms")), timeoutNanos, TimeUnit.NANOSECONDS);
      e.answer.whenComplete((a, t) -> timer.cancel(false));
      pool.acquire(loop, e);
    } catch (RejectedExecutionException closed) {
      e.answer.completeExceptionally(closed);
    }
    return e.answer;
  }

  private void giveUp(Throwable cause) {
    if (answer.completeExceptionally(cause)) {
      Channel ch = channel;
      if (ch != null) {
        ch.close();
      }
    }
  }

  @Override
  public void acquired(Channel ch, boolean wasReused) {
    if (answer.isDone()) {
      pool.release(ch, true);
      return;
    }
    channel = ch;
    reused = wasReused;
    status = -1;
    body = new BodyBuffer();
    ExchangeHandler.of(ch).start(this, request);
  }

  @Override
  public void failed(Throwable cause) {
    answer.completeExceptionally(cause);
  }

  @Override
  void onHead(HttpResponse head) {
    status = head.status().code();
  }

  @Override
  void onContent(ByteBuf content) {
    try {
      body.append(content);
    } catch (RuntimeException e) {
      giveUp(e);
    }
  }

  @Override
  boolean onEnd() {
    channel = null;
    return answer.complete(new Answer(status, body.toArray()));
  }

  @Override
  void onFailure(Throwable cause) {
    channel = null;
    if (reused && status < 0 && !retried && !answer.isDone() && request.idempotent()
        && (cause instanceof IOException || cause instanceof PrematureChannelClosureException)) {
      retried = true; // most likely a reused connection the worker had closed: once more on a new one
      pool.acquireNew(loop, this);
      return;
    }
    answer.completeExceptionally(cause);
  }
}
