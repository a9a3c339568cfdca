package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.routing.Fleet;
import java.io.IOException;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The conversation pins several frontends share through etcd: under
 * {@code /affinity/{cluster_name}/pins/{context|generation}/{routing key}} the value
 * {@code {"worker": "host:port", "rank": r}}. Each frontend keeps a copy fed by a watch of the prefix (from the
 * revision of the snapshot it starts with, so a restarted frontend knows every pin). A new pin is written
 * put-if-absent and a moved pin compare-and-swap on the revision it was read at, so when two frontends place
 * the same key at once one wins and the other adopts its choice. The copy is only a cache: a key this frontend
 * does not know yet is written put-if-absent, and etcd's answer is the pin. Pins are written with a lease of
 * {@link #PIN_TTL_SECONDS} (a new lease each hour), so a pin lives 23 to 24 hours after it was placed or moved;
 * the conversation's next turn then places it again. When etcd does not answer within {@link #TIMEOUT_MILLIS},
 * the frontend routes on its own choice and does not ask etcd again for {@link #RETRY_NANOS}, so an unreachable
 * etcd costs one request a second, not every request (docs/workers.md, the consistency model).
 */
public final class SharedPins implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SharedPins.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  public static final long PIN_TTL_SECONDS = 86_400;
  static final long LEASE_RENEWAL_NANOS = 3_600_000_000_000L;
  /** The budget of one pin transaction on the routing path. */
  public static final long TIMEOUT_MILLIS = 1000;
  /** After etcd failed to answer, pins are neither read nor written (own choices) for this long. */
  static final long RETRY_NANOS = 5_000_000_000L;

  /** Where a key is pinned, and the etcd revision that says so (0 for a pin not read from etcd). */
  public record Pin(String worker, int rank, long revision) {
    boolean samePlace(Pin other) {
      return other != null && worker.equals(other.worker) && rank == other.rank;
    }
  }

  private final EtcdClusterStorage storage;
  private final EtcdPrefix etcd;
  private final Map<String, Pin> pins = new ConcurrentHashMap<>();
  /** Told the key of every pin deleted in etcd (a session released, or a lease ended). */
  private volatile java.util.function.Consumer<String> onDelete = key -> { };
  /** Whether etcd is paused after a failure (see {@link #RETRY_NANOS}), and since when. */
  private long pausedSinceNanos;
  private boolean paused;

  public SharedPins(EtcdClusterStorage storage, String clusterName, Fleet fleet) {
    this.storage = storage;
    this.etcd = new EtcdPrefix(storage, "/affinity/" + clusterName + "/pins/" + fleet.name().toLowerCase(Locale.ROOT)
        + "/", PIN_TTL_SECONDS, LEASE_RENEWAL_NANOS, System::nanoTime);
  }

  public String prefix() {
    return etcd.prefix();
  }

  /** Loads the pins and follows their changes. */
  public SharedPins start() {
    etcd.watch(this::onEvent);
    return this;
  }

  private void onEvent(String key, StorageEvent e) {
    if (e.type() == StorageEvent.Type.DELETE) {
      // a pin this frontend wrote after the delete (a newer revision) stays
      boolean[] removed = {false};
      pins.computeIfPresent(key, (k, old) -> {
        removed[0] = old.revision() <= e.revision();
        return removed[0] ? null : old;
      });
      if (removed[0]) {
        onDelete.accept(key);
      }
      return;
    }
    parse(e.value(), e.revision()).ifPresent(p -> pins.merge(key, p,
        (old, neu) -> neu.revision() >= old.revision() ? neu : old));
  }

  private static Optional<Pin> parse(String value, long revision) {
    if (value == null) {
      return Optional.empty();
    }
    try {
      JsonNode n = JSON.readTree(value);
      if (n.path("worker").isTextual()) {
        return Optional.of(new Pin(n.get("worker").asText(), n.path("rank").asInt(-1), revision));
      }
    } catch (IOException e) {
      // not a pin
    }
    LOG.warn("shared pins: cannot read {}", value);
    return Optional.empty();
  }

  private static String value(String worker, int rank) {
    return JSON.createObjectNode().put("worker", worker).put("rank", rank).toString();
  }

  /** The pin this frontend knows for a key (from the watch, or its own last write), or null. */
  public Pin get(String key) {
    return pins.get(key);
  }

  /** Whether etcd failed less than {@link #RETRY_NANOS} ago. */
  private synchronized boolean paused() {
    return paused && System.nanoTime() - pausedSinceNanos < RETRY_NANOS;
  }

  private synchronized void pause(String what) {
    if (!paused()) {
      LOG.warn("shared pins: etcd did not answer ({}); routing on this frontend's own choices for {} s", what,
          RETRY_NANOS / 1_000_000_000L);
    }
    paused = true;
    pausedSinceNanos = System.nanoTime();
  }

  /** The lease new pins are written with, or 0 when etcd did not grant one (then etcd is paused). */
  private long lease() {
    long granted = etcd.lease();
    if (granted == 0) {
      pause("lease grant");
    }
    return granted;
  }

  /**
   * Places a key: pins it to {@code worker}/{@code rank} unless another frontend did first ({@code expected}
   * null), or moves it from {@code expected} unless another frontend moved it meanwhile. Returns the pin that
   * holds afterwards, or empty when etcd did not answer (the caller keeps its own choice).
   */
  public Optional<Pin> place(String key, Pin expected, String worker, int rank) {
    if (paused()) {
      return Optional.empty();
    }
    String v = value(worker, rank);
    long lease = lease();
    if (lease == 0) {
      return Optional.empty(); // no pin without a lease: it would never expire
    }
    Optional<EtcdClusterStorage.Versioned> after = expected == null || expected.revision() == 0
        ? storage.putIfAbsent(etcd.key(key), v, lease, TIMEOUT_MILLIS)
        : storage.replace(etcd.key(key), expected.revision(), v, lease, TIMEOUT_MILLIS);
    if (after.isEmpty()) {
      pause("pin of " + key);
      return Optional.empty();
    }
    EtcdClusterStorage.Versioned won = after.get();
    if (won.value() == null) {
      pins.remove(key);
      return Optional.empty(); // deleted meanwhile; the next request places it again
    }
    Optional<Pin> pin = parse(won.value(), won.modRevision());
    pin.ifPresent(p -> pins.merge(key, p, (old, neu) -> neu.revision() >= old.revision() ? neu : old));
    return pin;
  }

  /** Who is told of pins deleted in etcd (the router forgets its own pin of the key). */
  public void onDelete(java.util.function.Consumer<String> listener) {
    this.onDelete = java.util.Objects.requireNonNull(listener, "listener");
  }

  /**
   * Releases a key's pin (its session ended or expired): forgotten here at once, and deleted in etcd, so every
   * frontend's watch forgets it too. Blocks up to {@link #TIMEOUT_MILLIS}; false when etcd did not answer or
   * held no pin.
   */
  public boolean release(String key) {
    pins.remove(key);
    if (paused()) {
      return false;
    }
    return storage.delete(etcd.key(key));
  }

  /** Pins known (tests, metrics). */
  public int size() {
    return pins.size();
  }

  @Override
  public void close() {
    etcd.close();
  }
}
