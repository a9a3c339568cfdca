package dev.affinity.server.cluster;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The storage a frontend serves itself when {@code cluster_uri} is {@code http://host:port}
 * ({@code HttpClusterStorageServer} upstream): a map in memory whose TTLs run on a monotonic clock. A sweep
 * each second deletes expired keys; a {@link #get} of an expired key deletes it too; {@link #getPrefix}
 * leaves expired keys out. Watchers see a SET for every {@link #set} (overwrites and re-registrations
 * included) and a DELETE for every delete, expired get and sweep; a refresh ({@link #expire}) is no change.
 * Events are delivered in order on one thread. The HTTP side is {@link ClusterStorageEndpoints}.
 */
public final class InMemoryClusterStorage implements ClusterStorage {
  private static final Logger LOG = LoggerFactory.getLogger(InMemoryClusterStorage.class);
  static final long SWEEP_INTERVAL_MILLIS = 1000;

  /** One key: its value and when it expires (clock nanos), or -1 for never. */
  private record Item(String value, long expiresAtNanos) {
    boolean expired(long now) {
      return expiresAtNanos >= 0 && now - expiresAtNanos > 0;
    }
  }

  private static final class Watcher {
    final String prefix;
    final Consumer<StorageEvent> listener;
    volatile boolean open = true;

    Watcher(String prefix, Consumer<StorageEvent> listener) {
      this.prefix = prefix;
      this.listener = listener;
    }
  }

  private final LongSupplier clock;
  private final Map<String, Item> items = new LinkedHashMap<>();
  private final List<Watcher> watchers = new CopyOnWriteArrayList<>();
  private final ExecutorService events = Executors.newSingleThreadExecutor(daemon("affinity-storage-events"));
  private final ScheduledExecutorService sweeper;

  /** Wall-clock storage with its sweep running. */
  public InMemoryClusterStorage() {
    this(System::nanoTime, true);
  }

  /**
   * @param clock monotonic nanoseconds (tests pass a controllable one)
   * @param sweep whether to sweep each second (tests call {@link #sweep()} themselves)
   */
  InMemoryClusterStorage(LongSupplier clock, boolean sweep) {
    this.clock = clock;
    if (sweep) {
      sweeper = Executors.newSingleThreadScheduledExecutor(daemon("affinity-storage-sweep"));
      sweeper.scheduleWithFixedDelay(this::sweep, SWEEP_INTERVAL_MILLIS, SWEEP_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
    } else {
      sweeper = null;
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /** The storage's monotonic clock in seconds, the clock an {@code expire_time} is read on. */
  public double nowSeconds() {
    return clock.getAsLong() / 1e9;
  }

  @Override
  public boolean set(String key, String value, boolean overwrite, long ttlSeconds) {
    return setAt(key, value, overwrite, ttlSeconds > 0 ? clock.getAsLong() + ttlSeconds * 1_000_000_000L : -1);
  }

  /**
   * Upstream's {@code /set} with an explicit {@code expire_time}: seconds on this storage's clock
   * ({@link #nowSeconds()}), or below 0 to use {@code ttl}.
   */
  public boolean set(String key, String value, boolean overwrite, long ttlSeconds, double expireTimeSeconds) {
    if (expireTimeSeconds >= 0) {
      return setAt(key, value, overwrite, (long) (expireTimeSeconds * 1e9));
    }
    return set(key, value, overwrite, ttlSeconds);
  }

  private synchronized boolean setAt(String key, String value, boolean overwrite, long expiresAt) {
    if (items.containsKey(key) && !overwrite) {
      return false;
    }
    items.put(key, new Item(value, expiresAt));
    publish(StorageEvent.set(key, value));
    return true;
  }

  @Override
  public synchronized boolean expire(String key, long ttlSeconds) {
    Item item = items.get(key);
    if (item == null) {
      return false;
    }
    items.put(key, new Item(item.value(), clock.getAsLong() + ttlSeconds * 1_000_000_000L));
    return true;
  }

  @Override
  public synchronized Optional<String> get(String key) {
    Item item = items.get(key);
    if (item == null) {
      return Optional.empty();
    }
    if (item.expired(clock.getAsLong())) {
      items.remove(key);
      publish(StorageEvent.delete(key));
      return Optional.empty();
    }
    return Optional.of(item.value());
  }

  @Override
  public synchronized boolean delete(String key) {
    if (items.remove(key) == null) {
      return false;
    }
    publish(StorageEvent.delete(key));
    return true;
  }

  @Override
  public synchronized Map<String, String> getPrefix(String prefix) {
    long now = clock.getAsLong();
    Map<String, String> out = new LinkedHashMap<>();
    items.forEach((k, v) -> {
      if (k.startsWith(prefix) && !v.expired(now)) {
        out.put(k, v.value());
      }
    });
    return out;
  }

  @Override
  public synchronized AutoCloseable watch(String prefix, Consumer<StorageEvent> listener) {
    Watcher w = new Watcher(prefix, listener);
    List<StorageEvent> existing = new ArrayList<>();
    getPrefix(prefix).forEach((k, v) -> existing.add(StorageEvent.set(k, v)));
    // queued under the lock: nothing set meanwhile can overtake the replay, and nothing is missed
    events.execute(() -> existing.forEach(e -> deliver(w, e)));
    watchers.add(w);
    return () -> {
      w.open = false;
      watchers.remove(w);
    };
  }

  /** Deletes every expired key (each a DELETE event); runs each second. */
  public synchronized void sweep() {
    long now = clock.getAsLong();
    Iterator<Map.Entry<String, Item>> it = items.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Item> e = it.next();
      if (e.getValue().expired(now)) {
        it.remove();
        LOG.info("cluster storage: {} expired", e.getKey());
        publish(StorageEvent.delete(e.getKey()));
      }
    }
  }

  /** Called under the lock, so events are queued in the order of the changes. */
  private void publish(StorageEvent event) {
    for (Watcher w : watchers) {
      if (event.key().startsWith(w.prefix)) {
        events.execute(() -> deliver(w, event));
      }
    }
  }

  private void deliver(Watcher w, StorageEvent event) {
    if (!w.open) {
      return;
    }
    try {
      w.listener.accept(event);
    } catch (RuntimeException e) {
      LOG.warn("cluster storage watcher failed on {} {}", event.type(), event.key(), e);
    }
  }

  /** Waits until every event queued so far has been delivered (tests). */
  void awaitEvents() throws InterruptedException {
    java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    events.execute(done::countDown);
    done.await(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    watchers.clear();
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
    events.shutdown();
  }
}
