package dev.affinity.server.cluster;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster storage in etcd ({@code etcd://h:p[,etcd://h2:p2]}), through jetcd, as upstream's
 * {@code Etcd3ClusterStorage}: the same keys, a lease per key with a TTL ({@link #set}), a refresh that keeps the
 * key's lease alive ({@link #expire}; false once the key or its lease is gone, so a worker re-registers), a
 * put-if-absent transaction when not overwriting, and a prefix watch. Unlike upstream's, the watch starts at the
 * revision of the snapshot it replays, so no registration falls between the two. Besides the storage contract,
 * {@link #putIfAbsent} and {@link #replace} are the transactions the shared conversation pins use.
 */
public final class EtcdClusterStorage implements ClusterStorage {
  private static final Logger LOG = LoggerFactory.getLogger(EtcdClusterStorage.class);
  static final long TIMEOUT_SECONDS = 10;

  private final String uri;
  private final Client client;
  /** Leases this storage granted, by key: revoked when the key is deleted through it. */
  private final Map<String, Long> leases = new ConcurrentHashMap<>();

  /** A key's value and the revision it was last written at (compare-and-swap). */
  public record Versioned(String value, long modRevision) {}

  /** @param endpoints {@code host:port} of each etcd member */
  public EtcdClusterStorage(List<String> endpoints) {
    this.uri = String.join(",", endpoints.stream().map(e -> "etcd://" + e).toList());
    this.client = Client.builder().endpoints(endpoints.stream().map(e -> "http://" + e).toArray(String[]::new))
        .connectTimeout(java.time.Duration.ofSeconds(TIMEOUT_SECONDS)).build();
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static String text(ByteSequence b) {
    return b.toString(StandardCharsets.UTF_8);
  }

  private <T> T await(Future<T> f, String what) throws StorageFailure {
    return await(f, what, TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
  }

  private <T> T await(Future<T> f, String what, long timeoutMillis) throws StorageFailure {
    try {
      return f.get(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.cancel(true);
      throw new StorageFailure(what + ": interrupted");
    } catch (ExecutionException | TimeoutException e) {
      f.cancel(true);
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      LOG.warn("etcd {}: {} failed: {}", uri, what, cause.toString());
      throw new StorageFailure(what + ": " + cause);
    }
  }

  /** An etcd call that failed or timed out (already logged). */
  static final class StorageFailure extends Exception {
    private static final long serialVersionUID = 1L;

    StorageFailure(String message) {
      super(message, null, false, false);
    }
  }

  @Override
  public boolean set(String key, String value, boolean overwrite, long ttlSeconds) {
    try {
      long lease = ttlSeconds > 0 ? await(client.getLeaseClient().grant(ttlSeconds), "grant").getID() : 0;
      PutOption put = PutOption.builder().withLeaseId(lease).build();
      boolean done;
      if (overwrite) {
        await(client.getKVClient().put(bytes(key), bytes(value), put), "put " + key);
        done = true;
      } else {
        TxnResponse r = await(client.getKVClient().txn()
            .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.version(0)))
            .Then(Op.put(bytes(key), bytes(value), put)).commit(), "put-if-absent " + key);
        done = r.isSucceeded();
      }
      if (lease != 0) {
        Long old = done ? leases.put(key, lease) : null;
        revoke(done ? old : Long.valueOf(lease));
      }
      return done;
    } catch (StorageFailure e) {
      return false;
    }
  }

  private void revoke(Long lease) {
    if (lease != null && lease != 0) {
      client.getLeaseClient().revoke(lease).exceptionally(t -> null);
    }
  }

  /** Keeps the key's lease alive (its TTL is fixed when granted, as in upstream's etcd storage). */
  @Override
  public boolean expire(String key, long ttlSeconds) {
    try {
      GetResponse got = await(client.getKVClient().get(bytes(key)), "get " + key);
      if (got.getKvs().isEmpty()) {
        return false;
      }
      long lease = got.getKvs().get(0).getLease();
      if (lease == 0) {
        return true; // no TTL: nothing to refresh
      }
      return await(client.getLeaseClient().keepAliveOnce(lease), "keep-alive " + key).getTTL() > 0;
    } catch (StorageFailure e) {
      return false;
    }
  }

  @Override
  public Optional<String> get(String key) {
    return versioned(key).map(Versioned::value);
  }

  /** A key's value with its revision, or empty (absent, or etcd failed). */
  public Optional<Versioned> versioned(String key) {
    try {
      GetResponse got = await(client.getKVClient().get(bytes(key)), "get " + key);
      return got.getKvs().stream().findFirst().map(kv -> new Versioned(text(kv.getValue()), kv.getModRevision()));
    } catch (StorageFailure e) {
      return Optional.empty();
    }
  }

  @Override
  public boolean delete(String key) {
    try {
      long deleted = await(client.getKVClient().delete(bytes(key)), "delete " + key).getDeleted();
      revoke(leases.remove(key));
      return deleted > 0;
    } catch (StorageFailure e) {
      return false;
    }
  }

  @Override
  public Map<String, String> getPrefix(String prefix) {
    try {
      return snapshot(prefix).values;
    } catch (StorageFailure e) {
      return new LinkedHashMap<>();
    }
  }

  private record Snapshot(Map<String, String> values, Map<String, Long> revisions, long revision) {}

  private Snapshot snapshot(String prefix) throws StorageFailure {
    GetResponse got = await(client.getKVClient().get(bytes(prefix), GetOption.builder().isPrefix(true).build()),
        "get prefix " + prefix);
    Map<String, String> out = new LinkedHashMap<>();
    Map<String, Long> revisions = new LinkedHashMap<>();
    for (KeyValue kv : got.getKvs()) {
      out.put(text(kv.getKey()), text(kv.getValue()));
      revisions.put(text(kv.getKey()), kv.getModRevision());
    }
    return new Snapshot(out, revisions, got.getHeader().getRevision());
  }

  /**
   * Writes {@code value} unless the key exists (one transaction) and returns what the key holds afterwards:
   * {@code value} when this call won, the other writer's value when it lost; empty when etcd failed.
   */
  public Optional<Versioned> putIfAbsent(String key, String value, long lease, long timeoutMillis) {
    try {
      TxnResponse r = await(client.getKVClient().txn()
          .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.version(0)))
          .Then(Op.put(bytes(key), bytes(value), PutOption.builder().withLeaseId(lease).build()))
          .Else(Op.get(bytes(key), GetOption.DEFAULT)).commit(), "put-if-absent " + key, timeoutMillis);
      return Optional.of(outcome(r, value));
    } catch (StorageFailure e) {
      return Optional.empty();
    }
  }

  /**
   * Replaces the key's value if it is still at {@code modRevision} (0: if it does not exist) and returns what
   * the key holds afterwards, as {@link #putIfAbsent}.
   */
  public Optional<Versioned> replace(String key, long modRevision, String value, long lease, long timeoutMillis) {
    try {
      Cmp cmp = modRevision == 0 ? new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.version(0))
          : new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.modRevision(modRevision));
      TxnResponse r = await(client.getKVClient().txn().If(cmp)
          .Then(Op.put(bytes(key), bytes(value), PutOption.builder().withLeaseId(lease).build()))
          .Else(Op.get(bytes(key), GetOption.DEFAULT)).commit(), "compare-and-swap " + key, timeoutMillis);
      return Optional.of(outcome(r, value));
    } catch (StorageFailure e) {
      return Optional.empty();
    }
  }

  private static Versioned outcome(TxnResponse r, String written) {
    if (r.isSucceeded()) {
      return new Versioned(written, r.getPutResponses().get(0).getHeader().getRevision());
    }
    List<KeyValue> kvs = r.getGetResponses().isEmpty() ? List.of() : r.getGetResponses().get(0).getKvs();
    if (kvs.isEmpty()) {
      return new Versioned(null, 0); // deleted meanwhile: the caller tries again
    }
    return new Versioned(text(kvs.get(0).getValue()), kvs.get(0).getModRevision());
  }

  /** Writes {@code value} (overwriting) under {@code lease}; false when etcd failed within {@code timeoutMillis}. */
  public boolean putWithLease(String key, String value, long lease, long timeoutMillis) {
    try {
      await(client.getKVClient().put(bytes(key), bytes(value), PutOption.builder().withLeaseId(lease).build()),
          "put " + key, timeoutMillis);
      return true;
    } catch (StorageFailure e) {
      return false;
    }
  }

  /** A lease of {@code ttlSeconds}, or 0 when etcd did not grant one within {@code timeoutMillis}. */
  public long grantLease(long ttlSeconds, long timeoutMillis) {
    try {
      return await(client.getLeaseClient().grant(ttlSeconds), "grant", timeoutMillis).getID();
    } catch (StorageFailure e) {
      return 0;
    }
  }

  @Override
  public AutoCloseable watch(String prefix, Consumer<StorageEvent> listener) {
    ExecutorService delivery = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "affinity-etcd-watch");
      t.setDaemon(true);
      return t;
    });
    Consumer<StorageEvent> ordered = e -> delivery.execute(() -> {
      try {
        listener.accept(e);
      } catch (RuntimeException ex) {
        LOG.warn("etcd watcher failed on {} {}", e.type(), e.key(), ex);
      }
    });
    long revision = 0;
    try {
      Snapshot s = snapshot(prefix);
      s.values().forEach((k, v) -> ordered.accept(new StorageEvent(StorageEvent.Type.SET, k, v, s.revisions().get(k))));
      revision = s.revision() + 1;
    } catch (StorageFailure e) {
      LOG.warn("etcd {}: watching {} without a snapshot: {}", uri, prefix, e.getMessage());
    }
    WatchOption.Builder opt = WatchOption.builder().isPrefix(true);
    if (revision > 0) {
      opt.withRevision(revision);
    }
    Watch.Watcher watcher = client.getWatchClient().watch(bytes(prefix), opt.build(), Watch.listener(response -> {
      for (WatchEvent ev : response.getEvents()) {
        String key = text(ev.getKeyValue().getKey());
        long rev = ev.getKeyValue().getModRevision();
        ordered.accept(ev.getEventType() == WatchEvent.EventType.PUT
            ? new StorageEvent(StorageEvent.Type.SET, key, text(ev.getKeyValue().getValue()), rev)
            : new StorageEvent(StorageEvent.Type.DELETE, key, "", rev));
      }
    }, error -> LOG.warn("etcd {}: the watch of {} failed: {}", uri, prefix, error.toString())));
    return () -> {
      watcher.close();
      delivery.shutdown();
    };
  }

  @Override
  public void close() {
    client.close();
  }

  @Override
  public String toString() {
    return "EtcdClusterStorage[" + uri + "]";
  }
}
