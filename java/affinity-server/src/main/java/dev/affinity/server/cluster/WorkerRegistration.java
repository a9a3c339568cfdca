package dev.affinity.server.cluster;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's membership, exactly as a stock worker keeps it ({@code DisaggClusterWorker} upstream): it sets its
 * key ({@link ClusterWorker#toJson()}) with a TTL of {@code inactive_timeout_sec} and without overwriting,
 * retrying every {@code retry} while that fails (the frontend is not up yet, or the key exists); then refreshes
 * the TTL every {@code heartbeat_interval_sec} (only when that is positive and below the TTL); a refresh that
 * fails (the frontend restarted and lost its storage, or the key expired) registers again, overwriting.
 * {@link #deregister()} stops the heartbeat and deletes the key.
 */
public final class WorkerRegistration implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerRegistration.class);
  /** Upstream's {@code retry_interval}. */
  public static final Duration RETRY = Duration.ofSeconds(5);

  private final ClusterStorage storage;
  private final ClusterWorker self;
  private final String key;
  private final long heartbeatSeconds;
  private final long ttlSeconds;
  private final Duration retry;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "affinity-registration");
    t.setDaemon(true);
    return t;
  });
  private volatile boolean registered;
  private volatile boolean stopped;
  private ScheduledFuture<?> heartbeat;

  public WorkerRegistration(ClusterStorage storage, ClusterWorker self, String clusterName, long heartbeatSeconds,
      long ttlSeconds, Duration retry) {
    this.storage = storage;
    this.self = self;
    this.key = self.key(clusterName);
    this.heartbeatSeconds = heartbeatSeconds;
    this.ttlSeconds = ttlSeconds;
    this.retry = retry;
  }

  /** Starts registering in the background (the first attempt at once). */
  public void start() {
    timer.execute(() -> register(false));
  }

  public String key() {
    return key;
  }

  public ClusterWorker worker() {
    return self;
  }

  /** Whether the key is set (as far as the last attempt knows). */
  public boolean registered() {
    return registered;
  }

  private synchronized void register(boolean overwrite) {
    if (stopped) {
      return;
    }
    if (storage.set(key, self.toJson(), overwrite, ttlSeconds)) {
      registered = true;
      LOG.info("worker {} registered as {}", self.address(), key);
      startHeartbeat();
    } else {
      registered = false;
      LOG.warn("worker {}: registration of {} failed; retrying in {} s", self.address(), key, retry.toSeconds());
      timer.schedule(() -> register(overwrite), retry.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  private void startHeartbeat() {
    if (heartbeat != null) {
      return;
    }
    if (heartbeatSeconds <= 0 || heartbeatSeconds >= ttlSeconds) {
      LOG.warn("worker {}: heartbeat interval {} s is not positive or not below the inactive timeout {} s; "
          + "running without a heartbeat", self.address(), heartbeatSeconds, ttlSeconds);
      return;
    }
    heartbeat = timer.scheduleWithFixedDelay(this::beat, heartbeatSeconds, heartbeatSeconds, TimeUnit.SECONDS);
  }

  private synchronized void beat() {
    if (stopped) {
      return;
    }
    if (storage.expire(key, ttlSeconds)) {
      registered = true;
      return;
    }
    LOG.warn("worker {}: heartbeat of {} failed; registering again", self.address(), key);
    registered = false;
    if (storage.set(key, self.toJson(), true, ttlSeconds)) {
      registered = true;
      LOG.info("worker {} registered again as {}", self.address(), key);
    }
  }

  /** Stops the heartbeat and deletes the key; returns whether the delete succeeded. Idempotent. */
  public synchronized boolean deregister() {
    if (stopped) {
      return false;
    }
    stopped = true;
    timer.shutdownNow();
    boolean deleted = storage.delete(key);
    registered = false;
    if (deleted) {
      LOG.info("worker {} deregistered ({})", self.address(), key);
    } else {
      LOG.warn("worker {}: deleting {} failed; it expires within {} s", self.address(), key, ttlSeconds);
    }
    return deleted;
  }

  @Override
  public void close() {
    deregister();
  }
}
