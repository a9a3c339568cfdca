package dev.affinity.nativebridge;

import static dev.affinity.nativebridge.SimTestSupport.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.FinishReason;
import dev.affinity.executor.ResponseDispatcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Many Java threads against one real-clock executor: enqueue, cancel, poll, close. */
class NativeExecutorConcurrencyTest {
  /** Real clock, 1000x faster than modelled time. */
  private static final String FAST_REAL = """
      {"clock": {"mode": "real", "time_scale": 0.001}, "num_ranks": 2, "tokens_per_block": 8,
       "kv_blocks_per_rank": 512, "max_batch_size": 16}""";

  /**
   * Real clock, 20x faster than modelled time: a 1000-token request decodes for about 165 ms, so its
   * cancel, sent right after it by the same thread, lands first even on a loaded machine (at 1000x the
   * margin was about 3 ms, less than a descheduled thread can lose).
   */
  private static final String CANCEL_REAL = """
      {"clock": {"mode": "real", "time_scale": 0.05}, "num_ranks": 2, "tokens_per_block": 8,
       "kv_blocks_per_rank": 512, "max_batch_size": 16}""";

  @Test
  void manyThreadsEnqueueAndCancelAndEveryRequestEndsExactlyOnce() throws Exception {
    long before = NativeBridge.liveObjectCount();
    int threads = 8;
    int perThread = 40;
    Map<Long, AtomicInteger> finals = new ConcurrentHashMap<>();
    Map<Long, FinishReason> reasons = new ConcurrentHashMap<>();
    CountDownLatch done = new CountDownLatch(threads * perThread);
    try (NativeExecutor ex = NativeExecutor.create("sim", CANCEL_REAL);
        ResponseDispatcher dispatcher = new ResponseDispatcher(ex, "test")) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        final int thread = t;
        futures.add(pool.submit(() -> {
          for (int i = 0; i < perThread; i++) {
            // Requests that get cancelled are long (1000 tokens), so the cancel always lands first.
            ExecutorRequest req = ExecutorRequest.builder(tokens(32 + i, thread * 1000), i % 4 == 0 ? 1000 : 8 + i % 5)
                .clientRequestId(thread * 1000L + i).conversationId("c" + thread).build();
            long id = dispatcher.submit(req, r -> {
              if (r.isFinal()) {
                finals.computeIfAbsent(r.requestId(), k -> new AtomicInteger()).incrementAndGet();
                reasons.put(r.requestId(), r.finishReason());
                done.countDown();
              }
            });
            if (i % 4 == 0) {
              ex.cancel(id);
            }
          }
        }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
      assertTrue(done.await(60, TimeUnit.SECONDS), "every request gets a final response");
      pool.shutdown();
      assertEquals(threads * perThread, finals.size());
      finals.values().forEach(c -> assertEquals(1, c.get(), "exactly one final per request"));
      long cancelled = reasons.values().stream().filter(r -> r == FinishReason.CANCELLED).count();
      long finished = reasons.values().stream().filter(r -> r == FinishReason.LENGTH).count();
      assertEquals(threads * perThread, cancelled + finished, "only cancelled or completed: " + reasons.values());
      assertEquals(threads * perThread / 4, cancelled, "every cancel landed before completion");
      for (int rank = 0; rank < ex.numRanks(); rank++) {
        assertEquals(0, ex.kvCacheStats(rank).usedNumBlocks(), "all KV released");
      }
    }
    assertEquals(before, NativeBridge.liveObjectCount(), "every native object freed");
  }

  @Test
  void closeWhileOtherThreadsCallInIsSafe() throws Exception {
    long before = NativeBridge.liveObjectCount();
    NativeExecutor ex = NativeExecutor.create("sim", FAST_REAL);
    int threads = 6;
    CountDownLatch started = new CountDownLatch(threads);
    AtomicInteger closedSeen = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<?>> futures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int thread = t;
      futures.add(pool.submit(() -> {
        started.countDown();
        try {
          for (int i = 0; ; i++) {
            switch (thread % 3) {
              case 0 -> ex.enqueue(ExecutorRequest.builder(tokens(16, i), 4).build());
              case 1 -> ex.awaitResponses(64, Duration.ofMillis(20));
              default -> {
                ex.kvCacheStats(i % 2);
                ex.drainKvEvents(64);
                ex.iterationStats();
              }
            }
          }
        } catch (IllegalStateException closed) {
          closedSeen.incrementAndGet();
        } catch (dev.affinity.executor.ExecutorException shutDown) {
          // enqueue after the native shutdown began and before close finished
          closedSeen.incrementAndGet();
        }
      }));
    }
    assertTrue(started.await(10, TimeUnit.SECONDS));
    Thread.sleep(200);
    ex.close();
    for (Future<?> f : futures) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertEquals(threads, closedSeen.get(), "every caller saw the executor close");
    assertEquals(before, NativeBridge.liveObjectCount(), "every native object freed");
  }

  @Test
  void responsesArriveInBatchesFromOnePoller() throws Exception {
    try (NativeExecutor ex = NativeExecutor.create("sim", FAST_REAL)) {
      List<ExecutorRequest> reqs = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        reqs.add(ExecutorRequest.builder(tokens(16, i * 16), 4).clientRequestId(i).build());
      }
      long[] ids = ex.enqueueAll(reqs);
      assertEquals(64, ids.length);
      int finals = 0;
      int maxBatch = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (finals < 64 && System.nanoTime() < deadline) {
        List<ExecutorResponse> batch = ex.awaitResponses(1024, Duration.ofMillis(100));
        maxBatch = Math.max(maxBatch, batch.size());
        finals += (int) batch.stream().filter(ExecutorResponse::isFinal).count();
      }
      assertEquals(64, finals);
      assertTrue(maxBatch > 1, "several responses per native call");
    }
  }
}
