package dev.affinity.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** The striped primitive key → location-set map agrees with a map of BitSets. */
class LocationBitsTest {

  @Test
  void setsClearsAndCopiesAcrossWordBoundaries() {
    LocationBits b = new LocationBits();
    b.set(42, 3);
    b.set(42, 130);  // widens that stripe to 3 words
    long[] out = new long[3];
    b.copy(42, out);
    assertArrayEquals(new long[] {1L << 3, 0, 1L << (130 - 128)}, out);
    long[] narrow = new long[1];
    b.copy(42, narrow);
    assertArrayEquals(new long[] {1L << 3}, narrow, "only the words asked for");
    b.clear(42, 3);
    b.clear(42, 130);
    b.copy(42, out);
    assertArrayEquals(new long[3], out);
    assertEquals(0, b.size(), "an empty set is no entry");
    b.clear(7, 500);  // absent key, bit beyond the width: nothing happens
  }

  /**
   * Random sets and clears over a small key space (keys collide in stripes and buckets, tables grow,
   * deletions shift entries back) and up to 150 locations (bitsets widen) agree with the reference
   * after every operation.
   */
  @Property(tries = 200)
  void agreesWithAMapOfBitSets(@ForAll @Size(max = 300) List<@IntRange(min = 0, max = 1) Integer> ops,
      @ForAll @Size(max = 300) List<@IntRange(min = 0, max = 40) Integer> keys,
      @ForAll @Size(max = 300) List<@IntRange(min = 0, max = 149) Integer> locations) {
    LocationBits bits = new LocationBits();
    Map<Long, BitSet> ref = new HashMap<>();
    int n = Math.min(ops.size(), Math.min(keys.size(), locations.size()));
    for (int i = 0; i < n; i++) {
      long key = keys.get(i) * 0x9E3779B97F4A7C15L;  // spread over all 64 bits
      int loc = locations.get(i);
      if (ops.get(i) == 0) {
        bits.set(key, loc);
        ref.computeIfAbsent(key, k -> new BitSet()).set(loc);
      } else {
        bits.clear(key, loc);
        BitSet r = ref.get(key);
        if (r != null) {
          r.clear(loc);
          if (r.isEmpty()) {
            ref.remove(key);
          }
        }
      }
      assertEquals(ref.size(), bits.size());
    }
    long[] out = new long[3];
    for (int k = 0; k <= 40; k++) {
      long key = k * 0x9E3779B97F4A7C15L;
      bits.copy(key, out);
      BitSet r = ref.getOrDefault(key, new BitSet());
      assertArrayEquals(java.util.Arrays.copyOf(r.toLongArray(), 3), out, "key " + k);
    }
  }

  /**
   * Lookups without the lock (optimistic reads) never miss a key that stays: one thread sets a stripe's keys, whose
   * homes crowd into a few of its entries (long probe chains), then clears them in order, each clear shifting the later
   * keys back over its hole; another looks up keys not yet cleared, which must be found with exactly their location,
   * every time. Rounds change the location (once past 64: the bitsets widen). Without the stamp's validation, or with a
   * lookup that reads the table's fields inconsistently, it fails.
   */
  @Test
  void lookupsWhileEntriesShiftBackFindEveryKeyThatStays() throws Exception {
    long[] keys = new long[2_000];  // one stripe, homes in 256 of its 4,096 entries
    for (long k = 1, n = 0; n < keys.length; k++) {
      long h = OpenAddressing.mix(k);
      if (h >>> 58 == 0 && (h & 4095) < 256) {
        keys[(int) n++] = k;
      }
    }
    LocationBits bits = new LocationBits();
    java.util.concurrent.atomic.AtomicInteger round = new java.util.concurrent.atomic.AtomicInteger(-1);
    java.util.concurrent.atomic.AtomicInteger cleared = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
    int rounds = 150;
    java.util.function.IntUnaryOperator location = r -> r == rounds / 2 ? 200 : r % 64;
    Thread writer = new Thread(() -> {
      try {
        for (int r = 0; r < rounds && failure.get() == null; r++) {
          for (long k : keys) {
            bits.set(k, location.applyAsInt(r));
          }
          cleared.set(0);
          round.set(r);  // keys from cleared + 1 on are there until the round's next value
          for (int i = 0; i < keys.length; i++) {
            bits.clear(keys[i], location.applyAsInt(r));
            cleared.set(i + 1);
          }
          round.set(-1);
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      } finally {
        round.set(Integer.MAX_VALUE);
      }
    });
    long[] checked = new long[1];
    Thread reader = new Thread(() -> {
      long[] out = new long[4];
      java.util.Random random = new java.util.Random(5);
      try {
        while (round.get() != Integer.MAX_VALUE && failure.get() == null) {
          int i = random.nextInt(keys.length);
          int before = round.get();
          bits.touch(keys[(i + 1) % keys.length]);
          bits.copy(keys[i], out);
          int c = cleared.get();
          if (before < 0 || before == Integer.MAX_VALUE || round.get() != before || i <= c) {
            continue;  // not a key known to stay through the lookup
          }
          checked[0]++;
          int loc = location.applyAsInt(before);
          long[] expected = new long[4];
          expected[loc >>> 6] = 1L << loc;
          if (!java.util.Arrays.equals(expected, out)) {
            throw new AssertionError("round " + before + ", key " + i + " (" + c + " cleared): "
                + java.util.Arrays.toString(out));
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    });
    writer.start();
    reader.start();
    writer.join();
    reader.join();
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    assertEquals(0, bits.size());
    org.junit.jupiter.api.Assertions.assertTrue(checked[0] > 0, "some lookups were of keys that stayed");
  }
}
