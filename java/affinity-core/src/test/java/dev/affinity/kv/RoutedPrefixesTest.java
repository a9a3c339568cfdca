package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Predict-on-route's depths ({@link RoutedPrefixes#depths}) against a model that tests every position for being
 * sampled (every stride-th and the last) and stops at the first sampled one nobody holds: random prompts routed to
 * random locations, then looked up by prompts that share a random part of them, for strides 1 to 20.
 */
class RoutedPrefixesTest {

  @Test
  void depthsAreThoseOfTheSampledPositionsUpToTheFirstNobodyHolds() {
    Random r = new Random(11);
    for (int round = 0; round < 300; round++) {
      int stride = 1 + r.nextInt(20);
      RoutedPrefixes routed = new RoutedPrefixes(stride, 1_000_000_000L);
      Map<Long, Set<Integer>> model = new HashMap<>();
      List<long[]> prompts = new ArrayList<>();
      for (int p = 0; p < 8; p++) {
        long[] keys = new long[r.nextInt(120)];
        int shared = prompts.isEmpty() ? 0 : r.nextInt(keys.length + 1);
        long[] base = prompts.isEmpty() ? new long[0] : prompts.get(r.nextInt(prompts.size()));
        for (int i = 0; i < keys.length; i++) {
          keys[i] = i < Math.min(shared, base.length) ? base[i] : r.nextLong();
        }
        prompts.add(keys);
        int location = r.nextInt(5);
        int full = r.nextInt(keys.length + 2);
        for (long k : routed.record(location, keys, full, 0)) {
          model.computeIfAbsent(k, x -> new HashSet<>()).add(location);
        }
      }
      for (long[] keys : prompts) {
        int full = r.nextInt(keys.length + 2);
        assertArrayEquals(expected(model, keys, full, stride, 5), routed.depths(keys, full, 5),
            "round " + round + ", stride " + stride);
      }
    }
  }

  private static int[] expected(Map<Long, Set<Integer>> model, long[] keys, int fullBlocks, int stride, int locations) {
    int[] out = new int[locations];
    int n = Math.min(fullBlocks, keys.length);
    for (int i = 0; i < n; i++) {
      if ((i + 1) % stride != 0 && i != n - 1) {
        continue;
      }
      Set<Integer> holders = model.getOrDefault(keys[i], Set.of());
      if (holders.isEmpty()) {
        break;
      }
      for (int loc : holders) {
        out[loc] = i + 1;
      }
    }
    return out;
  }
}
