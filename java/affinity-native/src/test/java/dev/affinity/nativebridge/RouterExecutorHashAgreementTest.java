package dev.affinity.nativebridge;

import static dev.affinity.nativebridge.SimTestSupport.SMALL_VIRTUAL;
import static dev.affinity.nativebridge.SimTestSupport.finalOf;
import static dev.affinity.nativebridge.SimTestSupport.runUntilIdle;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.KvEvent;
import dev.affinity.executor.KvEventType;
import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The router's block hashes for a request (Java, {@link BlockHasher}) equal the hashes in the CPU
 * executor's "stored" events for the same request (C++): the prefix index can trust the events.
 */
class RouterExecutorHashAgreementTest {

  @Test
  void storedEventHashesEqualTheRoutersBlockHashes() {
    SplittableRandom rnd = new SplittableRandom(11);
    for (String salt : new String[] {null, "", "tenant-a"}) {
      try (NativeExecutor ex = NativeExecutor.create("sim", SMALL_VIRTUAL)) {
        ex.drainKvEvents(100);
        int[] prompt = rnd.ints(41, 0, 50_000).toArray();  // 40 usable tokens = 10 full blocks of 4
        long id = ex.enqueue(ExecutorRequest.builder(prompt, 1).cacheSalt(salt).adpRankHint(0, false).build());
        finalOf(runUntilIdle(ex), id);
        KvEvent stored = ex.drainKvEvents(100).stream().filter(e -> e.type() == KvEventType.STORED).findFirst().orElseThrow();
        BlockHasher router = new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, ex.tokensPerBlock());
        long[] routerKeys = router.keys(prompt, salt);
        assertEquals(10, routerKeys.length);
        assertArrayEquals(routerKeys, Arrays.copyOf(stored.blockHashes(), routerKeys.length), "salt=" + salt);
      }
    }
  }
}
