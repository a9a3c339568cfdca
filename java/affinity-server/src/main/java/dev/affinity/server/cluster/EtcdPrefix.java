package dev.affinity.server.cluster;

import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One prefix of etcd that frontends share state under ({@link SharedPins}, {@link SharedParentLinks}): a watch from
 * the snapshot it starts with, each event handed on with its key relative to the prefix, and the lease its keys are
 * written with, granted for {@code leaseTtlSeconds} and replaced by a new one every {@code renewNanos} (so a key lives
 * at least {@code leaseTtlSeconds - renewNanos} after its last write).
 */
final class EtcdPrefix implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EtcdPrefix.class);

  private final EtcdClusterStorage storage;
  private final String prefix;
  private final long leaseTtlSeconds;
  private final long renewNanos;
  private final LongSupplier clock;
  private long lease;
  private long leaseGrantedNanos;
  private AutoCloseable watch;

  EtcdPrefix(EtcdClusterStorage storage, String prefix, long leaseTtlSeconds, long renewNanos, LongSupplier clock) {
    this.storage = Objects.requireNonNull(storage, "storage");
    this.prefix = prefix;
    this.leaseTtlSeconds = leaseTtlSeconds;
    this.renewNanos = renewNanos;
    this.clock = clock;
  }

  String prefix() {
    return prefix;
  }

  /** The etcd key of {@code relative}. */
  String key(String relative) {
    return prefix + relative;
  }

  /** Loads the prefix and follows its changes: {@code onEvent} gets each key relative to the prefix. */
  synchronized void watch(BiConsumer<String, StorageEvent> onEvent) {
    watch = storage.watch(prefix, e -> onEvent.accept(e.key().substring(prefix.length()), e));
  }

  /** The lease to write keys with: the current one, or a new one once it is due; 0 when etcd granted none. */
  synchronized long lease() {
    long now = clock.getAsLong();
    if (lease != 0 && now - leaseGrantedNanos < renewNanos) {
      return lease;
    }
    long granted = storage.grantLease(leaseTtlSeconds, SharedPins.TIMEOUT_MILLIS);
    if (granted != 0) {
      lease = granted;
      leaseGrantedNanos = now;
    }
    return granted;
  }

  @Override
  public synchronized void close() {
    if (watch != null) {
      try {
        watch.close();
      } catch (Exception e) {
        LOG.debug("closing the watch of {}: {}", prefix, e.toString());
      }
      watch = null;
    }
  }
}
