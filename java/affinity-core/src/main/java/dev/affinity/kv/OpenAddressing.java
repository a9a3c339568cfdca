package dev.affinity.kv;

/**
 * What the index's primitive tables ({@link LongLruSet}, {@link LocationBits}) share: the hash of a
 * {@code long} key, and the rule of backward-shift deletion under linear probing.
 */
final class OpenAddressing {
  private OpenAddressing() {}

  /** A well-mixed hash of {@code key} (its low bits pick a bucket, its top bits a stripe). */
  static long mix(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 29);
  }

  /**
   * Backward-shift deletion: whether the entry found at {@code slot}, whose home bucket is
   * {@code home}, moves into the empty {@code hole} — that is, its home does not lie cyclically in
   * {@code (hole, slot]}, so leaving it would break its probe chain.
   */
  static boolean fillsHole(int hole, int slot, int home) {
    boolean between = hole <= slot ? (home > hole && home <= slot) : (home > hole || home <= slot);
    return !between;
  }
}
