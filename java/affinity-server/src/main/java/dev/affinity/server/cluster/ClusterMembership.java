package dev.affinity.server.cluster;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.config.DisaggConfig.DisaggClusterConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A frontend's view of a {@code disagg_cluster} ({@code DisaggClusterManager} upstream): it watches
 * {@code /trtllm-disagg/{cluster_name}/workers/}, replaying the workers registered before it started. A key
 * set is a worker to prepare and add to its role's router ({@link Fleets#join}, in the background, retried
 * while the key lives); a key deleted or expired is a worker to take out ({@link Fleets#leave}). A re-registration
 * with the same value changes nothing; a second key at the same address (a worker restarted on its port)
 * replaces the first. (The frontend is ready when its routers hold {@code minimal_instances} of each role.)
 */
public final class ClusterMembership implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterMembership.class);

  /** Where the workers go: the fleets' routers. */
  public interface Fleets {
    /**
     * Prepares a worker as upstream's router does before routing to it (the steady-clock exchange,
     * {@code /server_info}) and adds it to its role's router; returns what {@link #leave} needs.
     *
     * @throws Exception when it is not ready (the join is retried while its key lives)
     */
    Object join(ClusterWorker worker) throws Exception;

    /** Takes a joined worker out of its router; it finishes what it has in flight. */
    void leave(ClusterWorker worker, Object joined);
  }

  private static final class Member {
    final String key;
    final ClusterWorker info;
    Object joined;
    boolean gone;

    Member(String key, ClusterWorker info) {
      this.key = key;
      this.info = info;
    }
  }

  private final DisaggClusterConfig config;
  private final ClusterStorage storage;
  private final Fleets fleets;
  private final ScheduledExecutorService background;
  private final Duration retry;
  /** Registered workers by key, in registration order; guarded by this. */
  private final Map<String, Member> byKey = new LinkedHashMap<>();
  /** The member that holds each address. */
  private final Map<String, Member> byAddress = new HashMap<>();
  private AutoCloseable watch;

  public ClusterMembership(DisaggClusterConfig config, ClusterStorage storage, Fleets fleets,
      ScheduledExecutorService background, Duration retry) {
    this.config = config;
    this.storage = storage;
    this.fleets = fleets;
    this.background = background;
    this.retry = retry;
  }

  /** Starts watching (the workers registered already come first). */
  public synchronized void start() {
    watch = storage.watch(config.workerKeyPrefix() + "/", this::onEvent);
    LOG.info("watching {} for workers (ready at {} context and {} generation)", config.workerKeyPrefix() + "/",
        config.minimalContextInstances(), config.minimalGenerationInstances());
  }

  void onEvent(StorageEvent e) {
    if (e.type() == StorageEvent.Type.SET) {
      ClusterWorker w;
      try {
        w = ClusterWorker.parse(e.value());
      } catch (IllegalArgumentException ex) {
        LOG.error("cluster key {}: cannot read the worker ({}): {}", e.key(), ex.getMessage(), e.value());
        return;
      }
      onSet(e.key(), w);
    } else {
      onDelete(e.key());
    }
  }

  private synchronized void onSet(String key, ClusterWorker w) {
    Member old = byKey.get(key);
    if (old != null && old.info.equals(w)) {
      return; // a re-registration: nothing changed
    }
    if (old != null) {
      drop(old);
    }
    Member m = new Member(key, w);
    byKey.put(key, m);
    LOG.info("worker {} ({}) registered: {}", w.address(), w.role().name().toLowerCase(), key);
    background.execute(() -> tryJoin(m));
  }

  private synchronized void onDelete(String key) {
    Member m = byKey.remove(key);
    if (m == null) {
      LOG.debug("cluster key {} deleted; not a known worker", key);
      return;
    }
    LOG.info("worker {} ({}) left: {}", m.info.address(), m.info.role().name().toLowerCase(), key);
    drop(m);
  }

  /** Under the lock: takes a member out (now if it joined; its pending join then does nothing). */
  private void drop(Member m) {
    m.gone = true;
    byAddress.remove(m.info.address(), m);
    if (m.joined != null) {
      Object joined = m.joined;
      m.joined = null;
      fleets.leave(m.info, joined);
    }
  }

  private void tryJoin(Member m) {
    synchronized (this) {
      if (m.gone) {
        return;
      }
    }
    Object joined;
    try {
      joined = fleets.join(m.info);
    } catch (Exception e) {
      synchronized (this) {
        if (!m.gone && !background.isShutdown()) {
          LOG.warn("worker {} is not ready ({}); trying again in {} ms", m.info.address(), e.getMessage(), retry.toMillis());
          background.schedule(() -> tryJoin(m), retry.toMillis(), TimeUnit.MILLISECONDS);
        }
      }
      return;
    }
    synchronized (this) {
      if (m.gone) {
        fleets.leave(m.info, joined); // it left while it was being prepared
        return;
      }
      Member previous = byAddress.put(m.info.address(), m);
      if (previous != null && previous != m && previous.joined != null) {
        // the same address registered again under a new key (a restarted worker): the new key owns it
        previous.gone = true;
        Object prior = previous.joined;
        previous.joined = null;
        fleets.leave(previous.info, prior);
        byKey.remove(previous.key, previous);
      }
      m.joined = joined;
    }
  }

  /** Workers of a role in their router (prepared and added). */
  public synchronized int joined(ServerRole role) {
    int n = 0;
    for (Member m : byKey.values()) {
      if (m.joined != null && m.info.role() == role) {
        n++;
      }
    }
    return n;
  }

  /** Registered workers of a role (their keys are live), in registration order. */
  public synchronized List<ClusterWorker> registered(ServerRole role) {
    List<ClusterWorker> out = new ArrayList<>();
    for (Member m : byKey.values()) {
      if (m.info.role() == role) {
        out.add(m.info);
      }
    }
    return out;
  }

  /** Whether a worker at {@code address} (host:port) is registered: its key is live, prepared or not. */
  public synchronized boolean isRegistered(String address) {
    for (Member m : byKey.values()) {
      if (m.info.address().equals(address)) {
        return true;
      }
    }
    return false;
  }

  /** Adds upstream's {@code current_workers} and {@code minimal_instances} to a {@code /cluster_info} body. */
  public void describe(ObjectNode root) {
    ObjectNode current = root.putObject("current_workers");
    for (ServerRole role : ServerRole.values()) {
      ArrayNode list = current.putArray(role == ServerRole.CONTEXT ? "context_servers" : "generation_servers");
      for (ClusterWorker w : registered(role)) {
        list.addObject().put("worker_id", w.workerId()).put("host", w.host()).put("port", w.port())
            .put("role", w.role().value());
      }
    }
    root.putObject("minimal_instances").put("context_servers", config.minimalContextInstances())
        .put("generation_servers", config.minimalGenerationInstances());
  }

  @Override
  public void close() {
    AutoCloseable w;
    synchronized (this) {
      w = watch;
      watch = null;
    }
    if (w != null) {
      try {
        w.close();
      } catch (Exception e) {
        LOG.debug("closing the watch: {}", e.toString());
      }
    }
  }
}
