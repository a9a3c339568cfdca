package dev.affinity.server.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The frontend's own storage on a controlled monotonic clock: TTLs, refreshes, the sweep and the events. */
class InMemoryClusterStorageTest {
  final AtomicLong nanos = new AtomicLong(5_000_000_000L);
  final InMemoryClusterStorage storage = new InMemoryClusterStorage(nanos::get, false);

  void advanceSeconds(double s) {
    nanos.addAndGet((long) (s * 1e9));
  }

  @Test
  void ttlsRefreshesAndTheSweep() throws Exception {
    List<StorageEvent> events = new ArrayList<>();
    storage.set("/p/existing", "e", false, 0);
    storage.watch("/p/", events::add);
    assertTrue(storage.set("/p/a", "va", false, 2));
    assertTrue(storage.set("/p/b", "vb", false, 2));
    assertTrue(storage.set("/q/other", "x", false, 2), "outside the watched prefix");
    advanceSeconds(1.5);
    assertTrue(storage.expire("/p/a", 2), "a refresh");
    advanceSeconds(1.0);
    assertEquals(Map.of("/p/existing", "e", "/p/a", "va"), storage.getPrefix("/p/"), "b expired, not swept yet: left out");
    storage.sweep();
    assertEquals(Optional.empty(), storage.get("/p/b"));
    assertFalse(storage.expire("/p/b", 2), "a refresh of a missing key fails");
    advanceSeconds(2.0);
    assertEquals(Optional.empty(), storage.get("/p/a"), "an expired get deletes the key");
    assertTrue(storage.set("/p/a", "va2", false, 0), "and the worker can register again");
    assertTrue(storage.set("/p/a", "va3", true, 0), "overwriting is a change too");
    assertTrue(storage.delete("/p/existing"));
    storage.awaitEvents();
    assertEquals(List.of(StorageEvent.set("/p/existing", "e"), StorageEvent.set("/p/a", "va"), StorageEvent.set("/p/b", "vb"),
        StorageEvent.delete("/p/b"), StorageEvent.delete("/p/a"), StorageEvent.set("/p/a", "va2"),
        StorageEvent.set("/p/a", "va3"), StorageEvent.delete("/p/existing")), events, "a refresh is no event");
    storage.close();
  }

  @Test
  void anExpireTimeIsReadOnTheStoragesClock() {
    double now = storage.nowSeconds();
    assertTrue(storage.set("/k", "v", false, -1, now + 3));
    advanceSeconds(2.9);
    assertEquals(Optional.of("v"), storage.get("/k"));
    advanceSeconds(0.2);
    assertEquals(Optional.empty(), storage.get("/k"));
  }

  @Test
  void theStoredWorkerIsUpstreamsJson() {
    ClusterWorker w = new ClusterWorker("CONTEXT-localhost:8001-1712345678901-4242-037", "localhost", 8001,
        ServerRole.CONTEXT);
    assertEquals("{\"worker_id\": \"CONTEXT-localhost:8001-1712345678901-4242-037\", \"host\": \"localhost\", "
        + "\"port\": 8001, \"role\": 0}", w.toJson());
    assertEquals(w, ClusterWorker.parse(w.toJson()));
    assertEquals(w, ClusterWorker.parse("{\"worker_id\": \"CONTEXT-localhost:8001-1712345678901-4242-037\","
        + "\"host\":\"localhost\",\"port\":8001,\"role\":0,\"status\":\"active\"}"), "unknown fields are ignored");
    assertEquals("/trtllm-disagg//workers/" + w.workerId(), w.key(""), "upstream's empty cluster name");
    ClusterWorker made = ClusterWorker.create(ServerRole.GENERATION, "0.0.0.0", 9000);
    assertTrue(made.workerId().matches("GENERATION-0\\.0\\.0\\.0:9000-\\d+-\\d+-\\d{3,4}"), made.workerId());
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> ClusterWorker.parse("{\"worker_id\": \"x\", \"host\": \"h\", \"port\": \"80\", \"role\": 0}"));
    assertTrue(bad.getMessage().startsWith("port"), bad.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ClusterWorker.parse("{\"worker_id\": \"x\", \"host\": \"h\", "
        + "\"port\": 80, \"role\": 2}"), "an encoder is not routed here");
  }
}
