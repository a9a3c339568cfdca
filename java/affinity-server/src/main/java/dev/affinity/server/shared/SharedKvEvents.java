package dev.affinity.server.shared;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.config.SharedStateSettings;
import dev.affinity.executor.KvEvent;
import dev.affinity.kv.TrtllmKvEventCodec;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.Router;
import dev.affinity.server.worker.HttpWorker;
import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.Dispatcher;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.KeyValue;
import io.nats.client.KeyValueManagement;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.KeyValueConfiguration;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers' KV events shared by several frontends through NATS JetStream ({@code affinity.shared_state}): one
 * drain per worker, every event to every frontend.
 *
 * <ul>
 *   <li><b>Drain ownership.</b> For each remote worker it knows ({@link #register}), a frontend competes for the
 *       worker's key in a JetStream KV bucket whose entries live {@code drain_lease_seconds}: a create (put-if-absent)
 *       that succeeds makes it the owner, which starts polling the worker's {@code /kv_cache_events} and refreshes
 *       the key every third of the lease by an update on the revision it holds. An update that fails because the
 *       key moved on means ownership was lost: it stops polling. A refresh that fails for want of NATS stops polling
 *       too (the events stay in the worker's buffer), and polling resumes if a later refresh on the same revision
 *       succeeds. A key whose owner died expires with the lease, and the next create wins.</li>
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
  private static final ObjectMapper JSON = new ObjectMapper();
  public static final String WORKER_HEADER = "Affinity-Worker";
  public static final String FRONTEND_HEADER = "Affinity-Frontend";
  public static final String AUTH_HEADER = "Affinity-Auth";
  /** How often the owner polls its workers' {@code /kv_cache_events} (as each frontend does without sharing). */
  static final Duration KV_POLL = Duration.ofMillis(500);
  /** Batches kept per worker this frontend does not know yet, and workers kept. */
  static final int PENDING_BATCHES = 4096;
  static final int PENDING_WORKERS = 256;

  private final SharedStateSettings settings;
  private final String frontendId;
  private final Optional<InternalAuth> auth;
  private final String clusterToken;
  private final String streamName;
  private final String bucketName;
  private final Connection connection;
  private final JetStream js;
  private final KeyValue drains;
  private final Dispatcher dispatcher;
  private final ScheduledExecutorService ticks = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "affinity-shared-kv");
    t.setDaemon(true);
    return t;
  });
  /** The workers this frontend knows, by id: where their batches go, and their drain state. */
  private final Map<String, Competitor> workers = new ConcurrentHashMap<>();
  /** Batches of workers not (yet) known here, in stream order; guarded by {@code this}. */
  private final Map<String, ArrayDeque<List<KvEvent>>> pending = new LinkedHashMap<>();
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong publishFailures = new AtomicLong();
  private final AtomicLong applied = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicBoolean rejectionLogged = new AtomicBoolean();
  private volatile boolean closed;

  /** One worker: its router, and whether this frontend drains it (revision of its key, 0 when not the owner). */
  private final class Competitor {
    final HttpWorker worker;
    final Router router;
    final String key;
    final String subject;
    long revision;
    boolean polling;

    Competitor(HttpWorker worker, Router router) {
      this.worker = worker;
      this.router = router;
      String token = token(worker.id());
      this.key = token;
      this.subject = "affinity." + clusterToken + ".kv." + token;
    }
  }

  private SharedKvEvents(SharedStateSettings settings, String clusterName, Optional<InternalAuth> auth,
      String frontendId) throws IOException {
    this.settings = settings;
    this.auth = auth;
    this.frontendId = frontendId;
    this.clusterToken = sanitize(clusterName.isBlank() ? "default" : clusterName);
    this.streamName = "AFFINITY_KV_" + clusterToken;
    this.bucketName = "AFFINITY_DRAIN_" + clusterToken;
    try {
      this.connection = Nats.connect(options(settings, frontendId));
    } catch (IOException e) {
      throw new IOException("affinity.shared_state.nats: cannot connect to " + String.join(",", settings.servers())
          + " (" + settings.authKind() + "): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while connecting to NATS", e);
    }
    try {
      ensureStreams();
      this.js = connection.jetStream();
      this.drains = connection.keyValue(bucketName);
      this.dispatcher = connection.createDispatcher();
      JetStreamSubscription sub = js.subscribe("affinity." + clusterToken + ".kv.>", dispatcher, this::onBatch, false,
          PushSubscribeOptions.builder().stream(streamName).ordered(true).build());
      log.debug("consuming {} ({})", streamName, sub.getConsumerName());
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      closeQuietly(connection);
      throw new IOException("affinity.shared_state: setting up the stream " + streamName + " and the bucket "
          + bucketName + " failed (is JetStream on? may this user manage streams?): " + e.getMessage(), e);
    }
    long period = Math.max(100, (long) (settings.drainLeaseSeconds() * 1000 / 3));
    ticks.scheduleWithFixedDelay(this::tick, 0, period, TimeUnit.MILLISECONDS);
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
        settings.servers(), s.streamName, settings.drainLeaseSeconds(), s.bucketName, id);
    return s;
  }

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "frontend";
    }
  }

  static Options options(SharedStateSettings s, String name) throws IOException {
    Options.Builder b = new Options.Builder().servers(s.servers().toArray(String[]::new))
        .connectionName("affinity " + name).maxReconnects(-1).reconnectWait(Duration.ofMillis(500))
        .reconnectJitter(Duration.ofMillis(250)).connectionTimeout(Duration.ofSeconds(5))
        .connectionListener(new Listener());
    s.token().ifPresent(t -> b.token(t.toCharArray()));
    if (s.user().isPresent()) {
      b.userInfo(s.user().get().toCharArray(), s.password().orElse("").toCharArray());
    }
    s.credsFile().ifPresent(f -> b.authHandler(Nats.credentials(f)));
    if (s.tlsCaFile().isPresent()) {
      b.sslContext(sslContext(Path.of(s.tlsCaFile().get())));
    } else if (s.tls()) {
      try {
        b.secure();
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IOException("affinity.shared_state: no TLS: " + e.getMessage(), e);
      }
    }
    return b.build();
  }

  /** A TLS context that trusts the certificates of a PEM file. */
  private static SSLContext sslContext(Path ca) throws IOException {
    try (InputStream in = Files.newInputStream(ca)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("affinity.shared_state.tls_ca_file " + ca + ": " + e.getMessage(), e);
    }
  }

  /** Logs the connection's state changes (reconnects are retried for ever). */
  private static final class Listener implements ConnectionListener {
    @Override
    public void connectionEvent(Connection conn, Events type) {
      switch (type) {
        case DISCONNECTED -> log.warn("NATS disconnected; reconnecting (shared KV events paused)");
        case RECONNECTED -> log.info("NATS reconnected to {}", conn.getConnectedUrl());
        case CONNECTED -> log.info("NATS connected to {}", conn.getConnectedUrl());
        case CLOSED -> log.debug("NATS connection closed");
        default -> log.debug("NATS {}", type);
      }
    }
  }

  /**
   * The stream (file storage: the retained window survives a NATS restart, for frontends that start later, and
   * does not hold NATS's memory; max age = {@code event_retention_seconds}) and the drain bucket (file storage so a
   * restart keeps the bucket; entries live one lease).
   */
  private void ensureStreams() throws IOException, JetStreamApiException {
    JetStreamManagement jsm = connection.jetStreamManagement();
    StreamConfiguration sc = StreamConfiguration.builder().name(streamName)
        .subjects("affinity." + clusterToken + ".kv.>").storageType(StorageType.File)
        .maxAge(Duration.ofMillis((long) (settings.eventRetentionSeconds() * 1000))).build();
    try {
      jsm.getStreamInfo(streamName);
      jsm.updateStream(sc);
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() != 10059) { // stream not found
        throw e;
      }
      try {
        jsm.addStream(sc);
      } catch (JetStreamApiException raced) {
        jsm.updateStream(sc); // another frontend created it first
      }
    }
    KeyValueManagement kvm = connection.keyValueManagement();
    KeyValueConfiguration kc = KeyValueConfiguration.builder().name(bucketName).maxHistoryPerKey(1)
        .storageType(StorageType.File).ttl(Duration.ofMillis((long) (settings.drainLeaseSeconds() * 1000))).build();
    try {
      kvm.getStatus(bucketName);
      kvm.update(kc);
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() != 10059) {
        throw e;
      }
      try {
        kvm.create(kc);
      } catch (JetStreamApiException raced) {
        kvm.update(kc);
      }
    }
  }

  /** A worker this frontend routes to: it competes for its drain, and applies its batches to {@code router}. */
  public void register(HttpWorker worker, Router router) {
    Competitor c = new Competitor(worker, router);
    worker.onKvEvents(events -> publish(c, events));
    List<List<KvEvent>> kept;
    synchronized (this) {
      workers.put(worker.id(), c);
      ArrayDeque<List<KvEvent>> q = pending.remove(worker.id());
      kept = q == null ? List.of() : List.copyOf(q);
      for (List<KvEvent> events : kept) {
        apply(c, events);
      }
    }
    if (!ticks.isShutdown()) {
      ticks.execute(() -> compete(c));
    }
  }

  /** A worker that left: its batches are no longer applied, and its drain is released if this frontend held it. */
  public void unregister(HttpWorker worker) {
    Competitor c;
    synchronized (this) {
      c = workers.remove(worker.id());
    }
    if (c != null && !ticks.isShutdown()) {
      ticks.execute(() -> release(c));
    }
  }

  private void tick() {
    for (Competitor c : workers.values()) {
      compete(c);
    }
  }

  /** Create the key (put-if-absent) when not the owner; refresh it on its revision when the owner. */
  private void compete(Competitor c) {
    if (closed || workers.get(c.worker.id()) != c) {
      return;
    }
    try {
      if (c.revision == 0) {
        c.revision = drains.create(c.key, frontendId.getBytes(StandardCharsets.UTF_8));
        log.info("this frontend drains worker {}'s KV events now", c.worker.id());
      } else {
        c.revision = drains.update(c.key, frontendId.getBytes(StandardCharsets.UTF_8), c.revision);
      }
      if (!c.polling) {
        c.worker.startKvEventPolling(KV_POLL);
        c.polling = true;
      }
    } catch (JetStreamApiException e) {
      if (c.revision != 0) {
        log.info("worker {}: drain ownership lost ({}); another frontend drains it", c.worker.id(), e.getMessage());
        c.revision = 0;
        stopPolling(c);
      } else if (e.getApiErrorCode() == 10059) {
        log.warn("the drain bucket {} is gone; creating it again", bucketName);
        try {
          ensureStreams();
        } catch (IOException | JetStreamApiException again) {
          log.debug("ensuring the stream failed: {}", again.toString());
        }
      }
    } catch (IOException | RuntimeException e) {
      if (c.polling) {
        log.warn("worker {}: cannot refresh the drain lease ({}); polling stops until it can", c.worker.id(),
            e.toString());
        stopPolling(c);
      }
    }
  }

  private void stopPolling(Competitor c) {
    c.worker.stopKvEventPolling();
    c.polling = false;
  }

  private void release(Competitor c) {
    stopPolling(c);
    if (c.revision != 0) {
      try {
        drains.delete(c.key, c.revision);
      } catch (IOException | JetStreamApiException | RuntimeException e) {
        log.debug("worker {}: releasing the drain failed: {}", c.worker.id(), e.toString());
      }
      c.revision = 0;
    }
  }

  /** The owner's sink: each drained batch goes to the stream (on the worker's scheduler thread). */
  private void publish(Competitor c, List<KvEvent> events) {
    byte[] body;
    try {
      body = JSON.writeValueAsBytes(TrtllmKvEventCodec.toJson(events, c.worker.info().tokensPerBlock()));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    Headers h = new Headers().put(WORKER_HEADER, c.worker.id()).put(FRONTEND_HEADER, frontendId);
    auth.ifPresent(a -> h.put(AUTH_HEADER, a.sign(canonical(c.worker.id(), body))));
    try {
      js.publish(NatsMessage.builder().subject(c.subject).headers(h).data(body).build());
      published.incrementAndGet();
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      long n = publishFailures.incrementAndGet();
      if (n == 1 || Long.bitCount(n) == 1) {
        log.warn("worker {}: a KV event batch ({} events) was not published ({}); {} lost so far", c.worker.id(),
            events.size(), e.toString(), n);
      }
    }
  }

  /** What the HMAC covers: a purpose, the worker id and the SHA-256 of the body. */
  static String canonical(String workerId, byte[] body) {
    try {
      return "affinity-kv-events\n" + workerId + "\n"
          + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A batch from the stream (the dispatcher's thread, in stream order). */
  private void onBatch(Message m) {
    String worker = m.getHeaders() == null ? null : m.getHeaders().getFirst(WORKER_HEADER);
    byte[] body = m.getData() == null ? new byte[0] : m.getData();
    if (worker == null) {
      reject(m, "no " + WORKER_HEADER + " header");
      return;
    }
    if (auth.isPresent() && !auth.get().verify(canonical(worker, body), m.getHeaders().getFirst(AUTH_HEADER))) {
      reject(m, "its " + AUTH_HEADER + " HMAC does not match internal_request_auth_key");
      return;
    }
    List<KvEvent> events;
    try {
      JsonNode root = JSON.readTree(body);
      events = TrtllmKvEventCodec.parse(root);
    } catch (IOException | IllegalArgumentException e) {
      reject(m, "its body is not a KV event batch: " + e.getMessage());
      return;
    }
    synchronized (this) {
      Competitor c = workers.get(worker);
      if (c != null) {
        apply(c, events);
        return;
      }
      ArrayDeque<List<KvEvent>> q = pending.get(worker);
      if (q == null) {
        if (pending.size() >= PENDING_WORKERS) {
          pending.remove(pending.keySet().iterator().next());
        }
        q = new ArrayDeque<>();
        pending.put(worker, q);
      }
      if (q.size() >= PENDING_BATCHES) {
        q.removeFirst();
      }
      q.addLast(events);
    }
  }

  private void apply(Competitor c, List<KvEvent> events) {
    try {
      c.router.onKvEvents(c.worker.id(), events);
      applied.incrementAndGet();
    } catch (RuntimeException e) {
      log.warn("worker {}: applying a shared KV event batch failed", c.worker.id(), e);
    }
  }

  private void reject(Message m, String why) {
    long n = rejected.incrementAndGet();
    String from = m.getHeaders() == null || m.getHeaders().getFirst(FRONTEND_HEADER) == null ? "an unnamed publisher"
        : m.getHeaders().getFirst(FRONTEND_HEADER);
    if (rejectionLogged.compareAndSet(false, true)) {
      log.warn("dropped a KV event batch on {} from {}: {} (further drops are logged at debug and counted)",
          m.getSubject(), from, why);
    } else {
      log.debug("dropped KV event batch #{} on {} from {}: {}", n, m.getSubject(), from, why);
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether this frontend drains {@code workerId} now. */
  public boolean drains(String workerId) {
    Competitor c = workers.get(workerId);
    return c != null && c.polling;
  }

  /** Batches this frontend published (as a drain owner). */
  public long published() {
    return published.get();
  }

  /** Batches from the stream applied to a router. */
  public long applied() {
    return applied.get();
  }

  /** Batches from the stream dropped: no worker header, a failed HMAC, or a body that is not a batch. */
  public long rejected() {
    return rejected.get();
  }

  /** This frontend's name in the drain keys and the batches' {@value #FRONTEND_HEADER} header. */
  public String frontendId() {
    return frontendId;
  }

  public String streamName() {
    return streamName;
  }

  /** The subject prefix of the cluster's batches ({@code affinity.<cluster>.kv.}). */
  public String subjectPrefix() {
    return "affinity." + clusterToken + ".kv.";
  }

  /** The token of a worker id in subjects and keys: its characters outside [A-Za-z0-9_-] as _, and a hash. */
  static String token(String workerId) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(workerId.getBytes(StandardCharsets.UTF_8));
      return sanitize(workerId) + "-" + HexFormat.of().formatHex(d, 0, 4);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sanitize(String s) {
    return s.replaceAll("[^A-Za-z0-9_-]", "_");
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
    ticks.shutdownNow();
    try {
      ticks.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Competitor c : workers.values()) {
      if (release) {
        release(c);
      } else {
        stopPolling(c);
      }
    }
    try {
      connection.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
