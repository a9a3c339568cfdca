package dev.affinity.server.cluster;

import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Upstream's cluster storage ({@code ClusterStorage} in {@code tensorrt_llm/serve/cluster_storage.py}): keys with
 * optional TTLs, and a watch of a key prefix. Implementations: {@link InMemoryClusterStorage} (the frontend's own
 * HTTP storage), {@link EtcdClusterStorage}, and {@link HttpClusterStorageClient} (a worker's view of a frontend's
 * HTTP storage, which cannot watch). Calls block (a bounded time) and never throw for storage failures: a
 * failure is false, empty or an empty map, as upstream's.
 */
public interface ClusterStorage extends AutoCloseable {

  /**
   * Sets {@code key}; false when it exists and {@code overwrite} is false (or the storage failed).
   *
   * @param ttlSeconds the key expires this long after the last {@link #expire}; 0 or less for never
   */
  boolean set(String key, String value, boolean overwrite, long ttlSeconds);

  /** Refreshes a key's TTL; false when the key does not exist (or the storage failed). */
  boolean expire(String key, long ttlSeconds);

  Optional<String> get(String key);

  /** False when the key did not exist (or the storage failed). */
  boolean delete(String key);

  /** Every live key under {@code prefix} with its value. */
  Map<String, String> getPrefix(String prefix);

  /**
   * Delivers every change under {@code prefix} to {@code listener}, in order, from one thread at a time,
   * after replaying the keys that exist now as {@link StorageEvent.Type#SET} events. Close the returned
   * handle to stop.
   *
   * @throws UnsupportedOperationException for a storage that cannot watch (the HTTP client)
   */
  AutoCloseable watch(String prefix, Consumer<StorageEvent> listener);

  @Override
  void close();
}
