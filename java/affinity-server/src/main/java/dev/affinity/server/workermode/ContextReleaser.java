package dev.affinity.server.workermode;

import dev.affinity.protocol.InternalAuth;
import dev.affinity.server.worker.LegAuth;
import dev.affinity.server.worker.WorkerExtensions;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells a context worker in another process that its contexts' KV was pulled, as TensorRT-LLM's cache transceiver
 * completes a transfer: {@code POST <ctx_info_endpoint>/release_context {"ctx_request_ids": [n, ...]}}, signed with
 * the shared key ({@link LegAuth}, audience {@value #AUDIENCE}) when there is one. The releases for one endpoint
 * that come within {@link #BATCH_MILLIS} go in one request (one HTTP exchange per endpoint and window instead of
 * one per request: at thousands of requests a second a release each doubled the workers' CPU per request).
 * Idempotent on the context side (a context already released, pulled or expired is a no-op), asynchronous (off the
 * executor's threads), and retried a bounded number of times on connection errors and 5xx ({@link #ATTEMPTS});
 * after that the context worker's hold timeout is the backstop. Thread-safe.
 */
final class ContextReleaser implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ContextReleaser.class);
  /** The path a context worker serves the release on. */
  static final String PATH = WorkerExtensions.RELEASE_CONTEXT_PATH;
  /** The claim's worker field of a release: any generation worker may sign one for any context worker. */
  static final String AUDIENCE = WorkerExtensions.RELEASE_AUDIENCE;
  /** Attempts per release (the first and two retries, 50 ms then 200 ms apart). */
  static final int ATTEMPTS = 3;
  private static final Duration TIMEOUT = Duration.ofSeconds(5);
  /** How long a release waits for others to the same endpoint to share its request. */
  static final long BATCH_MILLIS = 5;
  /** The most ids one request carries. */
  static final int MAX_BATCH = 4096;

  /** Ids waiting for their endpoint's next request, by endpoint; guarded by itself. */
  private final java.util.Map<String, java.util.List<Long>> pending = new java.util.HashMap<>();
  private final java.util.concurrent.Executor later =
      CompletableFuture.delayedExecutor(BATCH_MILLIS, TimeUnit.MILLISECONDS);

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).version(HttpClient.Version.HTTP_1_1)
      .build();
  private final LegAuth.Signer signer;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicBoolean warned = new AtomicBoolean();

  /** @param auth signs each release; null: unsigned (a context worker without a key) */
  ContextReleaser(InternalAuth auth) {
    this.signer = auth == null ? null : new LegAuth.Signer(auth, Clock.systemUTC());
  }

  /** The body of a release of {@code ids}. */
  static byte[] body(java.util.List<Long> ids) {
    StringBuilder sb = new StringBuilder("{\"ctx_request_ids\": [");
    for (int i = 0; i < ids.size(); i++) {
      sb.append(i == 0 ? "" : ", ").append(ids.get(i));
    }
    return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Releases context {@code ctxRequestId} at {@code endpoint} ({@code http(s)://host:port}) with the others to that
   * endpoint in the next {@link #BATCH_MILLIS}; returns at once.
   */
  void release(String endpoint, long ctxRequestId) {
    boolean first;
    synchronized (pending) {
      java.util.List<Long> ids = pending.computeIfAbsent(endpoint, u -> new java.util.ArrayList<>());
      first = ids.isEmpty();
      ids.add(ctxRequestId);
    }
    if (first) {
      later.execute(() -> flush(endpoint));
    }
  }

  /** Sends what waits for {@code endpoint}, in requests of at most {@link #MAX_BATCH} ids. */
  private void flush(String endpoint) {
    java.util.List<Long> ids;
    synchronized (pending) {
      ids = pending.remove(endpoint);
    }
    if (ids == null) {
      return;
    }
    URI uri;
    try {
      uri = URI.create(endpoint.endsWith("/") ? endpoint.substring(0, endpoint.length() - 1) + PATH : endpoint + PATH);
      if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
        throw new IllegalArgumentException("not an http(s) URL");
      }
    } catch (IllegalArgumentException e) {
      LOG.debug("ctx_info_endpoint {} is not a context worker's URL: {}", endpoint, e.getMessage());
      return;
    }
    for (int from = 0; from < ids.size(); from += MAX_BATCH) {
      attempt(uri, body(ids.subList(from, Math.min(ids.size(), from + MAX_BATCH))), 1);
    }
  }

  private CompletableFuture<Boolean> attempt(URI uri, byte[] body, int n) {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(TIMEOUT).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (signer != null) {
      b.header(LegAuth.HEADER, signer.sign("POST", PATH, body, null, null, AUDIENCE));
    }
    return http.sendAsync(b.build(), HttpResponse.BodyHandlers.discarding()).handle((r, error) -> {
      if (error == null && r.statusCode() == 200) {
        sent.incrementAndGet();
        return CompletableFuture.completedFuture(true);
      }
      boolean retry = error != null || r.statusCode() >= 500;
      if (retry && n < ATTEMPTS) {
        return CompletableFuture.supplyAsync(() -> null,
            CompletableFuture.delayedExecutor(n == 1 ? 50 : 200, TimeUnit.MILLISECONDS))
            .thenCompose(x -> attempt(uri, body, n + 1));
      }
      failed.incrementAndGet();
      String why = error != null ? error.toString() : "HTTP " + r.statusCode();
      if (warned.compareAndSet(false, true)) {
        LOG.warn("releasing a context at {} failed ({}); its worker frees it on its hold timeout (logged once)", uri, why);
      } else {
        LOG.debug("releasing a context at {} failed ({})", uri, why);
      }
      return CompletableFuture.completedFuture(false);
    }).thenCompose(f -> f);
  }

  /** Releases acknowledged. */
  long sent() {
    return sent.get();
  }

  /** Releases given up on. */
  long failed() {
    return failed.get();
  }

  @Override
  public void close() {
    dev.affinity.server.cluster.HttpClusterStorageClient.closeClient(http);
  }
}
