package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.tokens;
import static dev.affinity.routing.RouterTestSupport.plainWorker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Many threads selecting, releasing and feeding KV events: nothing lost, nothing released twice. */
class RouterConcurrencyTest {

  @ParameterizedTest
  @ValueSource(strings = {"round_robin", "load_balancing", "kv_cache_aware", "conversation", "affinity"})
  void manyThreadsSelectAndReleaseWithoutLostOrDoubleReleases(String type) throws Exception {
    Router r = create(type, Map.of(), RouterContext.of(Fleet.CONTEXT));
    for (int w = 0; w < 8; w++) {
      r.addWorker(plainWorker("w" + w, 4, w % 2 == 0, 2, 64));
    }
    int threads = 8;
    int perThread = 2000;
    AtomicLong released = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
    List<Future<?>> futures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int thread = t;
      futures.add(pool.submit(() -> {
        List<Selection> mine = new ArrayList<>();
        for (int i = 0; i < perThread; i++) {
          String key = i % 3 == 0 ? null : "conv-" + thread + "-" + (i % 17);
          Selection s = r.select(RoutingRequest.builder(thread * 1_000_000L + i, Fleet.CONTEXT).routingKey(key)
              .tokens(tokens(64, (i % 5) * 64)).build(), Set.of());
          mine.add(s);
          if (mine.size() > 8) {
            Selection old = mine.remove(i % mine.size());
            if (old.release(i % 7 == 0 ? Outcome.FAILURE : Outcome.SUCCESS)) {
              released.incrementAndGet();
            }
            old.release(Outcome.SUCCESS);  // a deliberate second release: must be a no-op
          }
        }
        for (Selection s : mine) {
          if (s.release(Outcome.CANCELLED)) {
            released.incrementAndGet();
          }
          s.release(Outcome.SUCCESS);  // a deliberate second release: must be a no-op
        }
      }));
    }
    futures.add(pool.submit(() -> {
      long[] keys = new long[16];
      for (int i = 0; i < 2000; i++) {
        for (int k = 0; k < keys.length; k++) {
          keys[k] = i * 31L + k;
        }
        r.onKvEvents("w" + (i % 8), List.of(new KvEvent(i, i % 4 == 0 ? KvEventType.REMOVED : KvEventType.STORED,
            i % 2, 0, false, 0, keys, null, 0, 0)));
      }
    }));
    for (Future<?> f : futures) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    RouterStats stats = r.stats();
    assertEquals((long) threads * perThread, released.get(), "every selection released exactly once");
    assertEquals(0, stats.outstandingSelections());
    assertEquals((long) threads * perThread, stats.doubleReleases(), "each deliberate second release was refused");
    long decided = stats.decisions().values().stream().mapToLong(Long::longValue).sum();
    assertEquals((long) threads * perThread, decided);
    assertTrue(stats.expiredSelections() == 0);
  }
}
