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
}
