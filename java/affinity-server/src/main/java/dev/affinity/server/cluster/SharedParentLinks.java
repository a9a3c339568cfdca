package dev.affinity.server.cluster;

import dev.affinity.conversation.LocalParentLinks;
import dev.affinity.conversation.ParentLinks;
import java.util.LinkedHashMap;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sub-agent parent links several frontends share through etcd, the way they share pins ({@link SharedPins}):
 * under {@code /affinity/{cluster_name}/parents/{child id}} the parent's id (ids as resolution hands them out, so
 * tenant-scoped under tenant isolation). Each frontend reads a local copy ({@link LocalParentLinks}: bounded, each
 * link forgotten {@code ttlSeconds} after it was last written or heard of) fed by a watch of the prefix from the
 * snapshot it starts with, so resolution never waits for etcd. A link this frontend learns (new, changed, or not
 * written for half the TTL while in use) is written to etcd on {@code writer} with a lease of twice the TTL (a new
 * lease every half TTL), so the other frontends' copies stay fresh while the child is active. {@link #unlink}
 * deletes the key, and the watch removes it from every copy. When etcd fails, the frontend keeps its own copy and
 * logs the failure once per outage.
 */
public final class SharedParentLinks implements ParentLinks, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SharedParentLinks.class);

  private final EtcdClusterStorage storage;
  private final EtcdPrefix etcd;
  private final LocalParentLinks local;
  private final Executor writer;
  private final LongSupplier clock;
  private final long ttlSeconds;
  private final long refreshNanos;
  private final int maxLinks;
  /** When this frontend last wrote each child's link to etcd, least recently written first. */
  private final LinkedHashMap<String, Long> written = new LinkedHashMap<>();
  private boolean failing;

  public SharedParentLinks(EtcdClusterStorage storage, String clusterName, int maxLinks, long ttlSeconds,
      LongSupplier clock, Executor writer) {
    this.storage = Objects.requireNonNull(storage, "storage");
    this.local = new LocalParentLinks(maxLinks, ttlSeconds * 1_000_000_000L, clock);
    this.writer = Objects.requireNonNull(writer, "writer");
    this.clock = clock;
    this.ttlSeconds = ttlSeconds;
    this.refreshNanos = Math.max(1, ttlSeconds / 2) * 1_000_000_000L;
    this.maxLinks = maxLinks;
    // links are written with a lease of twice the TTL, a new one every half TTL
    this.etcd = new EtcdPrefix(storage, "/affinity/" + clusterName + "/parents/", 2 * ttlSeconds, refreshNanos, clock);
  }

  public String prefix() {
    return etcd.prefix();
  }

  /** Loads the links and follows their changes. */
  public SharedParentLinks start() {
    etcd.watch(this::onEvent);
    return this;
  }

  private void onEvent(String child, StorageEvent e) {
    if (e.type() == StorageEvent.Type.DELETE) {
      local.unlink(child);
    } else if (e.value() != null && !e.value().isEmpty()) {
      local.link(child, e.value());
    }
  }

  @Override
  public String parentOf(String child) {
    return local.parentOf(child);
  }

  @Override
  public void link(String child, String parent) {
    boolean known = parent.equals(local.parentOf(child));
    local.link(child, parent);
    long now = clock.getAsLong();
    synchronized (this) {
      Long last = written.get(child);
      if (known && last != null && now - last < refreshNanos) {
        return;
      }
      written.remove(child);
      written.put(child, now);
      var it = written.entrySet().iterator();
      while (written.size() > maxLinks && it.hasNext()) {
        it.next();
        it.remove();
      }
    }
    writer.execute(() -> write(child, parent));
  }

  private void write(String child, String parent) {
    long l = etcd.lease();
    boolean ok = l != 0 && storage.putWithLease(etcd.key(child), parent, l, SharedPins.TIMEOUT_MILLIS);
    failed(!ok, "writing the parent link of " + child);
  }

  private synchronized void failed(boolean failed, String what) {
    if (failed && !failing) {
      LOG.warn("shared parent links: etcd did not answer ({}); this frontend keeps its own links meanwhile", what);
    } else if (!failed && failing) {
      LOG.info("shared parent links: etcd answers again");
    }
    failing = failed;
  }

  @Override
  public boolean unlink(String child) {
    boolean had = local.unlink(child);
    synchronized (this) {
      written.remove(child);
    }
    writer.execute(() -> storage.delete(etcd.key(child)));
    return had;
  }

  @Override
  public int size() {
    return local.size();
  }

  @Override
  public void close() {
    etcd.close();
  }
}
