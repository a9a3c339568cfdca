package dev.affinity.server.shared;

import dev.affinity.config.SharedStateSettings;
import dev.affinity.executor.KvEvent;
import dev.affinity.protocol.InternalAuth;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker that publishes its own KV events to the cluster's stream ({@code affinity worker --nats}): no frontend
 * drains it, and an event reaches every frontend one publish after the executor emits it instead of one poll of
 * {@code /kv_cache_events} (500 ms) later. One thread takes what the executor has buffered (at most
 * {@value #MAX_BATCH} events at a time) every {@link #PERIOD}, or at once after a full batch, and publishes it as one
 * batch ({@link KvBatches}) under the worker's publisher key on {@code affinity.<cluster>.kv.<key token>}, the subject
 * its {@code /server_info} advertises. While NATS is unreachable it takes nothing, so the events wait in the executor's
 * bounded buffer; a batch that fails to publish is lost, counted and logged, and the frontends clear what they hold of
 * its ranks at the event-id gap that follows.
 */
public final class WorkerKvPublisher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerKvPublisher.class);
  /** How long the publisher waits when the executor had nothing buffered. */
  public static final Duration PERIOD = Duration.ofMillis(5);
  static final int MAX_BATCH = 4096;

  private final Connection connection;
  private final JetStream js;
  private final String publisherKey;
  private final String subject;
  private final Optional<InternalAuth> auth;
  private final int tokensPerBlock;
  private final IntFunction<List<KvEvent>> drain;
  private final Thread thread;
  private final AtomicLong batches = new AtomicLong();
  private final AtomicLong events = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private volatile boolean closed;

  private WorkerKvPublisher(Connection connection, KvNames names, String publisherKey, Optional<InternalAuth> auth,
      int tokensPerBlock, IntFunction<List<KvEvent>> drain) throws IOException {
    this.connection = connection;
    this.js = connection.jetStream();
    this.publisherKey = publisherKey;
    this.subject = names.subject(publisherKey);
    this.auth = auth;
    this.tokensPerBlock = tokensPerBlock;
    this.drain = drain;
    this.thread = new Thread(this::run, "affinity-kv-publisher");
    thread.setDaemon(true);
  }

  /**
   * Connects and starts publishing.
   *
   * @param clusterName {@code --disagg-cluster-name} ("" for the frontends' static urls): the stream the frontends read
   * @param auth {@code internal_request_auth_key}: batches are signed with it (frontends with a key drop unsigned ones)
   * @param publisherKey the key the batches carry, unique in the cluster and the same across restarts of this worker
   * @param drain takes up to n buffered events, oldest first (the executor's {@code drainKvEvents})
   */
  public static WorkerKvPublisher start(SharedStateSettings settings, String clusterName, Optional<InternalAuth> auth,
      String publisherKey, int tokensPerBlock, IntFunction<List<KvEvent>> drain) throws IOException {
    Objects.requireNonNull(drain, "drain");
    if (publisherKey.isBlank()) {
      throw new IllegalArgumentException("a blank publisher key");
    }
    KvNames names = new KvNames(clusterName);
    Connection c;
    try {
      c = NatsConnections.connect(settings, "worker " + publisherKey, e -> { });
    } catch (IOException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IOException("--nats: cannot connect to " + String.join(",", settings.servers()) + " ("
          + settings.authKind() + "): " + cause.getMessage(), e);
    }
    WorkerKvPublisher p;
    try {
      SharedKvStreams.ensureStream(c, names, settings, false);
      p = new WorkerKvPublisher(c, names, publisherKey, auth, tokensPerBlock, drain);
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      NatsConnections.closeQuietly(c);
      throw new IOException("--nats: setting up the stream " + names.streamName + " failed (is JetStream on? may this "
          + "user create streams?): " + e.getMessage(), e);
    }
    p.thread.start();
    log.info("KV events published to NATS ({}) on {} as {}", settings.servers(), p.subject, publisherKey);
    return p;
  }

  private void run() {
    while (!closed) {
      if (connection.getStatus() != Connection.Status.CONNECTED) {
        LockSupport.parkNanos(PERIOD.toNanos());
        continue;
      }
      List<KvEvent> batch;
      try {
        batch = drain.apply(MAX_BATCH);
      } catch (RuntimeException e) {
        if (!closed) {
          log.warn("taking the executor's KV events failed; publishing stops", e);
        }
        return;
      }
      if (!batch.isEmpty()) {
        publish(batch);
      }
      if (batch.size() < MAX_BATCH) {
        LockSupport.parkNanos(PERIOD.toNanos()); // a full batch: more is waiting, take it at once
      }
    }
  }

  private void publish(List<KvEvent> batch) {
    if (KvBatches.publish(js, KvBatches.message(subject, publisherKey, publisherKey, auth, tokensPerBlock, batch),
        batch.size(), failures, "worker " + publisherKey)) {
      batches.incrementAndGet();
      events.addAndGet(batch.size());
    }
  }

  /** The subject the batches go to (what {@code /server_info} advertises). */
  public String subject() {
    return subject;
  }

  /** The key the batches carry. */
  public String publisherKey() {
    return publisherKey;
  }

  /** Batches published. */
  public long batches() {
    return batches.get();
  }

  /** Events published. */
  public long events() {
    return events.get();
  }

  /** Batches that could not be published (lost). */
  public long failures() {
    return failures.get();
  }

  /** Whether the NATS connection is up now. */
  public boolean connected() {
    return !closed && connection.getStatus() == Connection.Status.CONNECTED;
  }

  /** Stops taking events (the thread ends before this returns), then disconnects. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    LockSupport.unpark(thread);
    try {
      thread.join(Duration.ofSeconds(10).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    NatsConnections.closeQuietly(connection);
  }
}
