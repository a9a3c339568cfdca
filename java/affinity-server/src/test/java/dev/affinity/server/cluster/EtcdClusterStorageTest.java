package dev.affinity.server.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The etcd storage against a real etcd: upstream's storage contract, leases, the watch, the pin transactions. */
class EtcdClusterStorageTest {
  static EtcdProcess etcd;
  static EtcdClusterStorage storage;

  @BeforeAll
  static void start() throws Exception {
    etcd = EtcdProcess.start();
    storage = new EtcdClusterStorage(List.of(etcd.endpoint()));
  }

  @AfterAll
  static void stop() throws Exception {
    if (storage != null) {
      storage.close();
    }
    if (etcd != null) {
      etcd.close();
    }
  }

  @Test
  void theStorageContract() {
    String key = "/trtllm-disagg/c1/workers/CONTEXT-h:1-1-2-003";
    assertTrue(storage.set(key, "v1", false, 0));
    assertFalse(storage.set(key, "v2", false, 0), "put-if-absent without overwrite");
    assertEquals(Optional.of("v1"), storage.get(key));
    assertTrue(storage.set(key, "v2", true, 0));
    assertEquals(Optional.of("v2"), storage.get(key));
    assertTrue(storage.expire(key, 5), "a key without a lease refreshes trivially");
    assertEquals(Map.of(key, "v2"), storage.getPrefix("/trtllm-disagg/c1/workers/"));
    assertEquals(Map.of(), storage.getPrefix("/trtllm-disagg/other/"), "cluster_name scopes the keys");
    assertTrue(storage.delete(key));
    assertFalse(storage.delete(key));
    assertFalse(storage.expire(key, 5), "a refresh of a missing key fails: the worker registers again");
    assertEquals(Optional.empty(), storage.get(key));
  }

  @Test
  void aKeyWithoutHeartbeatsExpiresAndTheWatchSeesItGo() throws Exception {
    String prefix = "/trtllm-disagg/c2/workers/";
    storage.set(prefix + "old", "existing", false, 0);
    LinkedBlockingQueue<StorageEvent> events = new LinkedBlockingQueue<>();
    try (AutoCloseable w = storage.watch(prefix, events::add)) {
      StorageEvent replayed = events.poll(10, TimeUnit.SECONDS);
      assertEquals(StorageEvent.Type.SET, replayed.type(), "replayed first");
      assertEquals(prefix + "old", replayed.key());
      assertTrue(replayed.revision() > 0);
      assertTrue(storage.set(prefix + "w", "{}", false, 2));
      assertEquals("{}", events.poll(10, TimeUnit.SECONDS).value());
      assertTrue(storage.expire(prefix + "w", 2), "the heartbeat keeps the lease alive");
      // no more heartbeats: the lease ends and etcd deletes the key
      StorageEvent gone = events.poll(15, TimeUnit.SECONDS);
      assertEquals(StorageEvent.Type.DELETE, gone.type());
      assertEquals(prefix + "w", gone.key());
      assertFalse(storage.expire(prefix + "w", 2));
      assertTrue(storage.delete(prefix + "old"));
      assertEquals(prefix + "old", events.poll(10, TimeUnit.SECONDS).key());
    }
  }

  @Test
  void putIfAbsentAndReplaceTellTheWinner() {
    String key = "/affinity/c3/pins/context/conv-1";
    EtcdClusterStorage.Versioned first = storage.putIfAbsent(key, "a", 0, 5000).orElseThrow();
    assertEquals("a", first.value());
    EtcdClusterStorage.Versioned lost = storage.putIfAbsent(key, "b", 0, 5000).orElseThrow();
    assertEquals("a", lost.value(), "the second writer adopts the first one's choice");
    assertEquals(first.modRevision(), lost.modRevision());
    EtcdClusterStorage.Versioned moved = storage.replace(key, first.modRevision(), "c", 0, 5000).orElseThrow();
    assertEquals("c", moved.value());
    EtcdClusterStorage.Versioned stale = storage.replace(key, first.modRevision(), "d", 0, 5000).orElseThrow();
    assertEquals("c", stale.value(), "a move from an old revision loses to the newer one");
    assertEquals(moved.modRevision(), stale.modRevision());
  }
}
