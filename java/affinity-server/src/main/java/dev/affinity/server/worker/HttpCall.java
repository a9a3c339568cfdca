package dev.affinity.server.worker;

import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import io.netty.channel.Channel;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One leg sent to a worker and its listener. Every listener call happens under the call's lock, so calls
 * are serialized; the first of {@link #complete}, {@link #fail} or {@link #cancel} ends the call, later
 * ones do nothing: exactly one {@code onComplete}/{@code onError} per call. Ending with a failure aborts
 * the exchange: its timer is cancelled and its connection, if it holds one, is closed (an answer cut
 * short cannot leave the connection reusable; for a stream the worker sees the disconnect and aborts).
 *
 * <p>It is also the {@link EncodedChunk.Source} of the chunks it delivers: a slow client pauses reading
 * from the connection and resumes it later. Both act on the connection the call holds at that moment, on
 * the connection's loop, so they never touch a connection that went back to the pool.
 */
final class HttpCall implements WorkerCall, EncodedChunk.Source {
  private static final Logger LOG = LoggerFactory.getLogger(HttpCall.class);
  private static final int RUNNING = 0;
  private static final int COMPLETED = 1;
  private static final int FAILED = 2;

  private final String workerId;
  private final WorkerListener listener;
  private final Consumer<HttpCall> onEnd;
  private final Object lock = new Object();
  private volatile int state = RUNNING; // written under lock
  private int delivered; // guarded by lock
  private boolean inChunk; // guarded by lock
  private WorkerFailure deferred; // guarded by lock
  /** The connection the exchange runs on, while it holds one. */
  private volatile Channel channel;
  private volatile Future<?> timer;

  HttpCall(String workerId, WorkerListener listener, Consumer<HttpCall> onEnd) {
    this.workerId = workerId;
    this.listener = listener;
    this.onEnd = onEnd;
  }

  boolean isEnded() {
    return state != RUNNING;
  }

  /** Whether a chunk was delivered (a failure now comes after the first byte). */
  boolean delivered() {
    synchronized (lock) {
      return delivered > 0;
    }
  }

  /**
   * The exchange holds {@code ch} now (on its loop). Returns false when the call has ended meanwhile: the
   * caller gives the connection back unused.
   */
  boolean attach(Channel ch) {
    channel = ch;
    if (state != RUNNING) {
      channel = null;
      return false;
    }
    return true;
  }

  /** The connection goes back to the pool (on its loop): nothing here touches it any more. */
  void detach(Channel ch) {
    if (channel == ch) {
      channel = null;
      ch.config().setAutoRead(true);
    }
  }

  void attachTimer(Future<?> t) {
    timer = t;
    if (state != RUNNING) {
      t.cancel(false);
    }
  }

  /**
   * Delivers a streamed chunk in order; false when the call has ended (the chunk is dropped). A failure
   * raised while the listener is inside {@code onEncodedChunk} (it cancels the call itself) is delivered when
   * {@code onEncodedChunk} returns, so listener calls never nest.
   */
  boolean chunk(EncodedChunk chunk) {
    RuntimeException thrown = null;
    synchronized (lock) {
      if (state != RUNNING) {
        return false;
      }
      delivered++;
      inChunk = true;
      try {
        listener.onEncodedChunk(chunk);
      } catch (RuntimeException e) {
        thrown = e;
      } finally {
        inChunk = false;
      }
      WorkerFailure pending = deferred;
      if (pending != null) {
        deferred = null;
        notifyError(pending);
        return false;
      }
    }
    if (thrown != null) {
      LOG.warn("worker {}: listener failed on a chunk; aborting the call", workerId, thrown);
      fail(WorkerFailure.Kind.CANCELLED, 0, "listener failed on a chunk: " + thrown);
      return false;
    }
    return true;
  }

  /** Ends the call successfully: {@code onEncodedResponse} (when non-null) then {@code onComplete}. */
  void complete(EncodedResponse response, WorkerReport report) {
    synchronized (lock) {
      if (state != RUNNING) {
        return;
      }
      state = COMPLETED;
      release(); // the worker no longer counts it once the listener hears the end
      if (response != null) {
        try {
          listener.onEncodedResponse(response);
        } catch (RuntimeException e) {
          LOG.warn("worker {}: listener failed on the response", workerId, e);
        }
      }
      try {
        listener.onComplete(report);
      } catch (RuntimeException e) {
        LOG.warn("worker {}: listener failed on completion", workerId, e);
      }
    }
  }

  /** Ends the call with a failure ({@code afterFirstByte} when a chunk was delivered) and aborts the exchange. */
  void fail(WorkerFailure.Kind kind, int status, String message) {
    synchronized (lock) {
      if (state != RUNNING) {
        return;
      }
      state = FAILED;
      release();
      WorkerFailure failure = new WorkerFailure(kind, status, message, delivered > 0);
      LOG.debug("worker {}: call failed: {}", workerId, failure);
      if (inChunk) { // re-entered from onChunk on this thread (only it can hold the lock there)
        deferred = failure;
      } else {
        notifyError(failure);
      }
    }
    abort();
  }

  private void notifyError(WorkerFailure failure) {
    try {
      listener.onError(failure);
    } catch (RuntimeException e) {
      LOG.warn("worker {}: listener failed on error {}", workerId, failure, e);
    }
  }

  void fail(WorkerFailure failure) {
    fail(failure.kind(), failure.status(), failure.message());
  }

  /** Aborts the exchange and ends the call with CANCELLED, unless it has already ended. */
  @Override
  public void cancel() {
    fail(WorkerFailure.Kind.CANCELLED, 0, "cancelled");
  }

  private void release() {
    Future<?> t = timer;
    if (t != null) {
      t.cancel(false);
    }
    onEnd.accept(this);
  }

  private void abort() {
    Channel ch = channel;
    if (ch != null) {
      ch.close();
    }
  }

  @Override
  public void pause() {
    autoRead(false);
  }

  @Override
  public void resume() {
    autoRead(true);
  }

  private void autoRead(boolean on) {
    Channel ch = channel;
    if (ch == null) {
      return;
    }
    if (ch.eventLoop().inEventLoop()) {
      if (channel == ch) {
        ch.config().setAutoRead(on);
      }
    } else {
      try {
        ch.eventLoop().execute(() -> autoRead(on));
      } catch (RejectedExecutionException e) {
        LOG.debug("worker {}: the connection's loop is shut down", workerId);
      }
    }
  }
}
