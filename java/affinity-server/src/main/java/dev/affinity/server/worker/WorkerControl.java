package dev.affinity.server.worker;

import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import io.netty.handler.codec.http.HttpMethod;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A remote worker's control requests, each with the control timeout on the worker's connections ({@link HttpWorker}
 * owns one): {@code /server_info}, {@code /health} and what it says of the worker's health, {@code /kv_cache_events}
 * (for the poller), a held context's release, Anthropic token counts and {@code /_internal/tokenize}.
 */
final class WorkerControl {
  private static final Logger LOG = LoggerFactory.getLogger(HttpWorker.class);

  private final String id;
  private final ProtocolCodec codec;
  private final ConnectionPool pool;
  private final LegRequests requests;
  private final long timeoutNanos;
  private final BooleanSupplier closed;
  private final AtomicBoolean warnedRelease = new AtomicBoolean();
  private volatile boolean healthy = true;

  WorkerControl(String id, ProtocolCodec codec, ConnectionPool pool, LegRequests requests, long timeoutNanos,
      BooleanSupplier closed) {
    this.id = id;
    this.codec = codec;
    this.pool = pool;
    this.requests = requests;
    this.timeoutNanos = timeoutNanos;
    this.closed = closed;
  }

  /** A control request; completes with the whole answer. POSTs are signed. */
  CompletableFuture<ControlExchange.Answer> send(HttpMethod method, String path) {
    if (closed.getAsBoolean()) {
      return CompletableFuture.failedFuture(new IllegalStateException("worker " + id + " is closed"));
    }
    return ControlExchange.send(requests.control(method, path), pool, pool.loop(), timeoutNanos);
  }

  /** Whether the last health check (or none yet) found the worker healthy. */
  boolean healthy() {
    return healthy;
  }

  /** The worker is closed: it is not healthy any more. */
  void closed() {
    healthy = false;
  }

  /** {@code GET /health} once: 200 → healthy, anything else (or no answer) → not; changes are logged. */
  CompletableFuture<Boolean> checkHealth() {
    if (closed.getAsBoolean()) {
      return CompletableFuture.completedFuture(false);
    }
    return send(HttpMethod.GET, "/health").handle((response, error) -> {
      boolean ok = error == null && response.status() == 200;
      boolean was = healthy;
      healthy = ok;
      if (was != ok) {
        if (ok) {
          LOG.info("worker {}: healthy again", id);
        } else {
          LOG.warn("worker {}: unhealthy: {}", id,
              error != null ? Failures.of(error).message() : "HTTP " + response.status());
        }
      }
      return ok && !closed.getAsBoolean();
    });
  }

  /** {@code POST /release_context} of one held context; returns at once, a failure is logged (the first at WARN). */
  void release(long ctxRequestId) {
    CompletableFuture<ControlExchange.Answer> sent;
    try {
      sent = ControlExchange.send(requests.releaseContext(ctxRequestId), pool, pool.loop(), timeoutNanos);
    } catch (RuntimeException e) {  // closed meanwhile
      releaseFailed(ctxRequestId, e.toString());
      return;
    }
    sent.whenComplete((answer, error) -> {
      if (error != null) {
        releaseFailed(ctxRequestId, Failures.of(error).message());
      } else if (answer.status() != 200) {
        releaseFailed(ctxRequestId, "HTTP " + answer.status());
      } else {
        LOG.debug("worker {}: released context {}", id, ctxRequestId);
      }
    });
  }

  private void releaseFailed(long ctxRequestId, String why) {
    if (warnedRelease.compareAndSet(false, true)) {
      LOG.warn("worker {}: releasing context {} failed ({}); the worker frees it on its hold timeout (logged once)", id,
          ctxRequestId, why);
    } else {
      LOG.debug("worker {}: releasing context {} failed ({})", id, ctxRequestId, why);
    }
  }

  /** {@code POST /v1/messages/count_tokens}, unsigned: the worker's {@code input_tokens}. */
  CompletableFuture<Integer> countTokens(byte[] anthropicBody) {
    if (closed.getAsBoolean()) {
      return CompletableFuture.failedFuture(ProtocolException.of(503, "the context worker is closed", null));
    }
    RequestTemplate r = requests.unsignedJson("/v1/messages/count_tokens", anthropicBody);
    return ControlExchange.send(r, pool, pool.loop(), timeoutNanos)
        .handle((a, error) -> ControlAnswers.inputTokens(id, codec, a, error));
  }

  /** {@code POST /_internal/tokenize}, unsigned: the worker's ids for {@code text}. */
  CompletableFuture<int[]> tokenize(String text) {
    if (closed.getAsBoolean()) {
      return CompletableFuture.failedFuture(new IllegalStateException("worker " + id + " is closed"));
    }
    RequestTemplate r = requests.unsignedJson("/_internal/tokenize", codec.toJsonBytes(java.util.Map.of("prompt", text)));
    return ControlExchange.send(r, pool, pool.loop(), timeoutNanos).thenApply(a -> ControlAnswers.tokens(id, codec, a));
  }
}
