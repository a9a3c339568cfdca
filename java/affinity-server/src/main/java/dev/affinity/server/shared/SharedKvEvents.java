package dev.affinity.server.shared;

import dev.affinity.config.SharedStateSettings;
import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Router;
import dev.affinity.server.worker.HttpWorker;
import dev.affinity.server.worker.HttpWorkerSettings;
import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.Dispatcher;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.KeyValue;
import io.nats.client.Message;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamState;
import java.io.IOException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers' KV events shared by several frontends through NATS JetStream ({@code affinity.shared_state}): one
 * drain per worker, every event to every frontend.
 *
 * <ul>
 *   <li><b>Drain ownership.</b> For each remote worker it knows ({@link #register}), a frontend competes for the
 *       worker's key in a JetStream KV bucket whose entries live {@code drain_lease_seconds}; the owner polls the
 *       worker's {@code /kv_cache_events} ({@link DrainOwnership}).</li>
 *   <li><b>Publishing.</b> The owner publishes every drained batch to the cluster's stream, subject
 *       {@code affinity.<cluster>.kv.<worker token>}, the worker id in the {@value #WORKER_HEADER} header, the body
 *       the events in TensorRT-LLM's {@code /kv_cache_events} JSON ({@link TrtllmKvEventCodec}), and with
 *       {@code internal_request_auth_key} an HMAC ({@value #AUTH_HEADER}) over the worker id and the body.</li>
 *   <li><b>Consuming.</b> Every frontend, the owner included, reads the whole stream with an ordered consumer from
 *       the start of its retention and hands each batch to the router that holds the worker ({@code
 *       router.onKvEvents}). The owner does not apply its batches locally: one path, one order. Batches of a worker
 *       this frontend does not know yet are kept (bounded) until it joins. Batches that fail the HMAC or do not
 *       parse are dropped, counted and logged (a warning at the first, debug after).</li>
 * </ul>
 */
public final class SharedKvEvents implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SharedKvEvents.class);
  public static final String WORKER_HEADER = KvBatches.WORKER_HEADER;
  public static final String FRONTEND_HEADER = KvBatches.FRONTEND_HEADER;
  public static final String AUTH_HEADER = KvBatches.AUTH_HEADER;
  /**
   * The ordered consumer's idle heartbeat: after a NATS restart jnats re-creates the consumer when three are missed,
   * so this bounds how long a restart delays the stream (jnats's default, 5 s, made it about 30 s).
   */
  static final Duration CONSUMER_HEARTBEAT = Duration.ofSeconds(1);

  private final SharedStateSettings settings;
  private final String frontendId;
  private final Optional<InternalAuth> auth;
  private final KvNames names;
  private final Connection connection;
  private final JetStream js;
  private final Dispatcher dispatcher;
  /** Null only while the constructor runs (the connection's listener may be called before). */
  private volatile DrainOwnership ownership;
  /** Where the stream's batches go: the routers of the workers this frontend knows. */
  private final KvBatchIntake intake;
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong publishFailures = new AtomicLong();
  private volatile boolean closed;

  /** Why a batch from the stream was dropped ({@code reason} on {@code affinity_shared_kv_batches_rejected}). */
  public enum Rejection {
    NO_WORKER_HEADER("no_worker_header"),
    BAD_HMAC("bad_hmac"),
    UNPARSABLE("unparsable");

    private final String label;

    Rejection(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /** Hears every batch applied from the stream (metrics, benchmarks); on the consumer's thread, so it must be quick. */
  public interface Observer {
    /**
     * @param workerId the worker's id in this frontend
     * @param events the batch's events
     * @param lagMicros from the publisher's stamp to applied, or -1 when the batch has no stamp
     */
    void applied(String workerId, int events, long lagMicros);
  }

  /** The stream's last sequence when this frontend started consuming (0: it was empty). */
  private long replayTarget;
  private final long startNanos = System.nanoTime();
  /** Whether the consumer has read the stream up to {@link #replayTarget}: the index is rebuilt. */
  private volatile boolean replayed;
  private volatile long replayMillis = -1;
  private final AtomicLong replayedBatches = new AtomicLong();

  private SharedKvEvents(SharedStateSettings settings, String clusterName, Optional<InternalAuth> auth,
      String frontendId) throws IOException {
    this.settings = settings;
    this.auth = auth;
    this.frontendId = frontendId;
    this.names = new KvNames(clusterName);
    this.intake = new KvBatchIntake(auth);
    this.connection = NatsConnections.connect(settings, frontendId, this::onConnectionEvent);
    try {
      SharedKvStreams.ensure(connection, names, settings);
      this.js = connection.jetStream();
      KeyValue bucket = connection.keyValue(names.bucketName);
      this.dispatcher = connection.createDispatcher();
      // what the stream holds now: the index is rebuilt once the consumer has read up to it
      StreamState state = connection.jetStreamManagement().getStreamInfo(names.streamName).getStreamState();
      this.replayTarget = state.getMsgCount() == 0 ? 0 : state.getLastSequence();
      if (replayTarget == 0) {
        replayed(0);
      }
      JetStreamSubscription sub = js.subscribe(names.subjects(), dispatcher, this::onBatch, false,
          PushSubscribeOptions.builder().stream(names.streamName).ordered(true)
              .configuration(ConsumerConfiguration.builder().idleHeartbeat(CONSUMER_HEARTBEAT).build()).build());
      log.debug("consuming {} ({})", names.streamName, sub.getConsumerName());
      this.ownership = new DrainOwnership(bucket, names.bucketName, frontendId,
          Duration.ofMillis((long) (settings.drainLeaseSeconds() * 1000)), HttpWorkerSettings.KV_EVENT_POLL, this::recreateStreams,
          () -> connection.getStatus() == Connection.Status.CONNECTED);
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      NatsConnections.closeQuietly(connection);
      throw new IOException("affinity.shared_state: setting up the stream " + names.streamName + " and the bucket "
          + names.bucketName + " failed (is JetStream on? may this user manage streams?): " + e.getMessage(), e);
    }
  }

  /**
   * Connects to NATS, ensures the cluster's stream and drain bucket, and starts consuming the stream.
   *
   * @param clusterName {@code disagg_cluster.cluster_name}, or "" (static urls): scopes the stream and the bucket
   * @param authKey {@code internal_request_auth_key}: batches are signed with it and unsigned ones dropped
   */
  public static SharedKvEvents start(SharedStateSettings settings, String clusterName, Optional<String> authKey)
      throws IOException {
    String id = hostName() + "/" + ProcessHandle.current().pid() + "/"
        + HexFormat.of().toHexDigits((int) (Math.random() * Integer.MAX_VALUE));
    SharedKvEvents s = new SharedKvEvents(settings, clusterName, authKey.flatMap(InternalAuth::ofNullable), id);
    log.info("KV events shared through NATS ({}): stream {}, drain leases of {} s in {}, frontend {}",
        settings.servers(), s.names.streamName, settings.drainLeaseSeconds(), s.names.bucketName, id);
    return s;
  }

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "frontend";
    }
  }

  private void onConnectionEvent(ConnectionListener.Events type) {
    DrainOwnership o = ownership;
    if (type == ConnectionListener.Events.DISCONNECTED && o != null) {
      o.pause();
    }
  }

  private void recreateStreams() {
    try {
      SharedKvStreams.ensure(connection, names, settings);
    } catch (IOException | JetStreamApiException again) {
      log.debug("ensuring the stream failed: {}", again.toString());
    }
  }

  /**
   * A worker this frontend routes to: its batches are applied to {@code router}. A worker that publishes its own
   * events ({@link #publisherKey}) is not drained; for any other this frontend competes for its drain.
   */
  public void register(HttpWorker worker, Router router) {
    Optional<String> own = publisherKey(worker);
    if (own.isPresent()) {
      intake.add(worker.id(), router, own.get());
      log.info("worker {} publishes its own KV events (as {}): not drained", worker.id(), own.get());
      return;
    }
    String subject = names.subject(worker.id());
    worker.onKvEvents(events -> publish(worker, subject, events));
    intake.add(worker.id(), router, worker.id());
    ownership.add(worker);
  }

  /**
   * The key a worker publishes its own events under, when its {@code /server_info} says it does on this cluster's
   * stream; empty when it does not (a frontend drains it). One that publishes on another cluster's subjects is named
   * at WARN: this frontend will see none of its events.
   */
  private Optional<String> publisherKey(HttpWorker worker) {
    Optional<String> subject = worker.features().kvEventsSubject();
    if (subject.isEmpty()) {
      return Optional.empty();
    }
    if (!subject.get().startsWith(names.subjectPrefix())) {
      log.warn("worker {} publishes its KV events on {}, outside this frontend's stream {} ({}>): is its "
          + "--disagg-cluster-name this cluster's? Its prefix index here stays empty", worker.id(), subject.get(),
          names.streamName, names.subjectPrefix());
    }
    return worker.features().kvEventsPublisher();
  }

  /**
   * A worker known by {@code workerId} here whose batches carry {@code publisherKey} (a worker that publishes its own
   * events, or a benchmark's publisher): they are applied to {@code router}; nothing is drained.
   */
  public void registerPublisher(String publisherKey, String workerId, Router router) {
    intake.add(workerId, router, publisherKey);
  }

  /** A worker that left: its batches are no longer applied, and its drain is released if this frontend held it. */
  public void unregister(HttpWorker worker) {
    intake.remove(worker.id());
    ownership.remove(worker);
  }

  /** The owner's sink: each drained batch goes to the stream (on the worker's scheduler thread). */
  private void publish(HttpWorker worker, String subject, List<KvEvent> events) {
    if (KvBatches.publish(js, KvBatches.message(subject, worker.id(), frontendId, auth, worker.info().tokensPerBlock(),
        events), events.size(), publishFailures, "worker " + worker.id())) {
      published.incrementAndGet();
    }
  }

  /** A batch from the stream (the dispatcher's thread, in stream order). */
  private void onBatch(Message m) {
    if (!replayed) {
      replayedBatches.incrementAndGet();
      if (m.isJetStream() && m.metaData().streamSequence() >= replayTarget) {
        replayed(replayedBatches.get());
      }
    }
    intake.accept(m);
  }

  /** The consumer reached the stream's end as it was at start: the index holds the retained window. */
  private void replayed(long batches) {
    replayMillis = (System.nanoTime() - startNanos) / 1_000_000;
    replayed = true;
    log.info("KV index rebuilt from {}: {} batches (up to sequence {}) in {} ms", names.streamName, batches,
        replayTarget, replayMillis);
  }

  /**
   * Whether this frontend has read the stream up to where it stood when the frontend started, so its index holds what
   * the stream retained (the frontend is not ready before: {@code /health} answers 503).
   */
  public boolean replayed() {
    return replayed;
  }

  /** How long reading the retained stream took at start, in ms; -1 until it is done. */
  public long replayMillis() {
    return replayMillis;
  }

  /** Whether this frontend drains {@code workerId} now. */
  public boolean drains(String workerId) {
    return ownership.drains(workerId);
  }

  /** Batches this frontend published (as a drain owner). */
  public long published() {
    return published.get();
  }

  /** Batches from the stream applied to a router. */
  public long applied() {
    return intake.applied();
  }

  /** Batches from the stream dropped: no worker header, a failed HMAC, or a body that is not a batch. */
  public long rejected() {
    return intake.rejected();
  }

  /** Batches dropped for {@code reason}. */
  public long rejected(Rejection reason) {
    return intake.rejected(reason);
  }

  /** From now on {@code o} hears every batch applied (one observer: the last set). */
  public void observe(Observer o) {
    intake.observe(o);
  }

  /** Drained batches that could not be published (NATS unavailable or refusing). */
  public long publishFailures() {
    return publishFailures.get();
  }

  /** How many workers this frontend drains now. */
  public int drainsOwned() {
    return ownership.owned();
  }

  /** Whether the NATS connection is up now (it reconnects for ever when it is not). */
  public boolean connected() {
    return !closed && connection.getStatus() == Connection.Status.CONNECTED;
  }

  /** This frontend's name in the drain keys and the batches' {@value #FRONTEND_HEADER} header. */
  public String frontendId() {
    return frontendId;
  }

  public String streamName() {
    return names.streamName;
  }

  /** The subject prefix of the cluster's batches ({@code affinity.<cluster>.kv.}). */
  public String subjectPrefix() {
    return names.subjectPrefix();
  }

  /**
   * Starts sharing this frontend's load with the other frontends of the cluster on this connection
   * ({@link SharedLoads}: reports every {@link SharedLoads#PERIOD}, a silent peer forgotten after
   * {@link SharedLoads#EXPIRY}); the caller closes it before this.
   */
  public SharedLoads shareLoads(Map<dev.affinity.routing.Fleet, Router> routers) {
    return new SharedLoads(connection, names.loadSubjectPrefix(), frontendId, auth, routers, SharedLoads.PERIOD,
        SharedLoads.EXPIRY);
  }

  /** Releases the drains this frontend holds (others take over at once), stops consuming, disconnects. */
  @Override
  public void close() {
    stop(true);
  }

  /**
   * As a frontend that dies: stops polling and disconnects without releasing its drains, which other frontends take
   * over when the lease runs out (tests).
   */
  public void abandon() {
    stop(false);
  }

  private void stop(boolean release) {
    if (closed) {
      return;
    }
    closed = true;
    ownership.close(release);
    try {
      connection.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
