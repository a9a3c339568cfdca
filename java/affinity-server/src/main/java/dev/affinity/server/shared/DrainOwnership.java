package dev.affinity.server.shared;

import dev.affinity.server.worker.HttpWorker;
import io.nats.client.JetStreamApiException;
import io.nats.client.KeyValue;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which frontend drains each remote worker: for each worker it knows, this frontend competes for the worker's key in
 * the drain bucket, whose entries live {@code drain_lease_seconds}. A create (put-if-absent) that succeeds makes it
 * the owner, which starts polling the worker's {@code /kv_cache_events} and refreshes the key every third of the lease
 * by an update on the revision it holds. An update that fails because the key moved on means ownership was lost: it
 * stops polling. A refresh that fails for want of NATS stops polling too (the events stay in the worker's buffer), and
 * polling resumes if a later refresh on the same revision succeeds. A key whose owner died expires with the lease,
 * and the next create wins. While the NATS connection is down nobody competes and the owner stops polling at once
 * ({@link #pause()}), so the events wait in the worker's buffer; when it is back the owner's next refresh on the
 * revision it holds resumes polling, or fails if the key expired meanwhile, and the next create wins. All of it runs
 * on one thread ({@code affinity-shared-kv}).
 */
final class DrainOwnership {
  private static final Logger log = LoggerFactory.getLogger(DrainOwnership.class);

  private final KeyValue bucket;
  private final String bucketName;
  private final byte[] owner;
  private final Duration poll;
  /** Run when the bucket is gone (NATS lost its store): creates it again. */
  private final Runnable recreate;
  /** Whether the NATS connection is up: requests made while it is down would only time out. */
  private final BooleanSupplier connected;
  private final ScheduledExecutorService ticks = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "affinity-shared-kv");
    t.setDaemon(true);
    return t;
  });
  /** The workers this frontend competes for, by id. */
  private final Map<String, Drain> drains = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** One worker's drain: the revision of its key this frontend holds (0 when not the owner), and whether it polls. */
  private static final class Drain {
    final HttpWorker worker;
    final String key;
    long revision;
    volatile boolean polling;

    Drain(HttpWorker worker) {
      this.worker = worker;
      this.key = KvNames.key(worker.id());
    }
  }

  /**
   * @param frontendId the value of the keys this frontend holds
   * @param lease {@code drain_lease_seconds}: keys are refreshed every third of it
   * @param poll how often the owner polls a worker's {@code /kv_cache_events}
   */
  DrainOwnership(KeyValue bucket, String bucketName, String frontendId, Duration lease, Duration poll,
      Runnable recreate, BooleanSupplier connected) {
    this.connected = connected;
    this.bucket = bucket;
    this.bucketName = bucketName;
    this.owner = frontendId.getBytes(StandardCharsets.UTF_8);
    this.poll = poll;
    this.recreate = recreate;
    long period = Math.max(100, lease.toMillis() / 3);
    ticks.scheduleWithFixedDelay(this::tick, 0, period, TimeUnit.MILLISECONDS);
  }

  /** Competes for {@code worker}'s drain from now on (at once, then every third of the lease). */
  void add(HttpWorker worker) {
    Drain d = new Drain(worker);
    drains.put(worker.id(), d);
    if (!ticks.isShutdown()) {
      ticks.execute(() -> compete(d));
    }
  }

  /** Stops competing for {@code worker}'s drain, and releases it if this frontend holds it. */
  void remove(HttpWorker worker) {
    Drain d = drains.remove(worker.id());
    if (d != null && !ticks.isShutdown()) {
      ticks.execute(() -> release(d));
    }
  }

  /** Whether this frontend drains {@code workerId} now. */
  boolean drains(String workerId) {
    Drain d = drains.get(workerId);
    return d != null && d.polling;
  }

  /** How many workers this frontend drains now. */
  int owned() {
    int n = 0;
    for (Drain d : drains.values()) {
      n += d.polling ? 1 : 0;
    }
    return n;
  }

  private void tick() {
    for (Drain d : drains.values()) {
      compete(d);
    }
  }

  /** Create the key (put-if-absent) when not the owner; refresh it on its revision when the owner. */
  private void compete(Drain d) {
    if (closed || drains.get(d.worker.id()) != d) {
      return;
    }
    if (!connected.getAsBoolean()) {
      if (d.polling) {
        stopPolling(d);
      }
      return;
    }
    try {
      if (d.revision == 0) {
        d.revision = bucket.create(d.key, owner);
        log.info("this frontend drains worker {}'s KV events now", d.worker.id());
      } else {
        d.revision = bucket.update(d.key, owner, d.revision);
      }
      if (!d.polling) {
        d.worker.startKvEventPolling(poll);
        d.polling = true;
      }
    } catch (JetStreamApiException e) {
      if (d.revision != 0) {
        log.info("worker {}: drain ownership lost ({}); another frontend drains it", d.worker.id(), e.getMessage());
        d.revision = 0;
        stopPolling(d);
      } else if (e.getApiErrorCode() == 10059) {
        log.warn("the drain bucket {} is gone; creating it again", bucketName);
        recreate.run();
      }
    } catch (IOException | RuntimeException e) {
      if (d.polling) {
        log.warn("worker {}: cannot refresh the drain lease ({}); polling stops until it can", d.worker.id(),
            e.toString());
        stopPolling(d);
      }
    }
  }

  /**
   * The NATS connection is down: stops polling every worker this frontend drains (their refreshes would fail after
   * a timeout each, one at a time), keeping the revisions for when it is back. On jnats's thread.
   */
  void pause() {
    int n = 0;
    for (Drain d : drains.values()) {
      if (d.polling) {
        stopPolling(d);
        n++;
      }
    }
    if (n > 0) {
      log.warn("NATS is unreachable: this frontend stops draining its {} workers, which keep their KV events until "
          + "it is back", n);
    }
  }

  private static void stopPolling(Drain d) {
    d.worker.stopKvEventPolling();
    d.polling = false;
  }

  private void release(Drain d) {
    stopPolling(d);
    if (d.revision != 0) {
      try {
        bucket.delete(d.key, d.revision);
      } catch (IOException | JetStreamApiException | RuntimeException e) {
        log.debug("worker {}: releasing the drain failed: {}", d.worker.id(), e.toString());
      }
      d.revision = 0;
    }
  }

  /**
   * Stops competing and polling; with {@code release} deletes the keys this frontend holds (others take over at
   * once), else leaves them to expire with the lease (as a frontend that dies).
   */
  void close(boolean release) {
    closed = true;
    ticks.shutdownNow();
    try {
      ticks.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Drain d : drains.values()) {
      if (release) {
        release(d);
      } else {
        stopPolling(d);
      }
    }
  }
}
