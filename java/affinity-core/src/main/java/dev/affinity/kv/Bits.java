package dev.affinity.kv;

import java.util.Arrays;

/** Copy-on-write bitsets of location ids (null = empty), for concurrent map values. */
final class Bits {
  private Bits() {}

  static long[] with(long[] set, int bit) {
    int word = bit >>> 6;
    long[] out = set == null ? new long[word + 1] : Arrays.copyOf(set, Math.max(set.length, word + 1));
    out[word] |= 1L << bit;
    return out;
  }

  static long[] without(long[] set, int bit) {
    int word = bit >>> 6;
    if (word >= set.length || (set[word] & (1L << bit)) == 0) {
      return set;
    }
    long[] out = set.clone();
    out[word] &= ~(1L << bit);
    for (long w : out) {
      if (w != 0) {
        return out;
      }
    }
    return null;
  }
}
