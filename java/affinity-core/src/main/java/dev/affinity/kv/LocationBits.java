package dev.affinity.kv;

import java.util.Arrays;

/**
 * Block key → set of location ids holding it, without boxing: 64 stripes, each an open-addressing
 * table (linear probing, backward-shift deletion) of keys with their bitset words stored inline
 * ({@code width} longs per entry, grown when a higher location id arrives). An entry exists exactly
 * while some bit is set, so an all-zero slot is an empty one. Each stripe is guarded by its own
 * lock; readers copy a key's words out under it. About 24 bytes per distinct key at 64 locations or
 * fewer, instead of ≈ 140 for a boxed concurrent map of copy-on-write arrays.
 */
final class LocationBits {
  private static final int STRIPES = 64;
  private final Stripe[] stripes = new Stripe[STRIPES];

  LocationBits() {
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Stripe();
    }
  }

  private Stripe stripe(long h) {
    return stripes[(int) (h >>> 58)];  // the top 6 bits pick the stripe, the low bits the bucket
  }

  /** Adds {@code location} to the key's set. */
  void set(long key, int location) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    synchronized (s) {
      s.set(key, h, location);
    }
  }

  /** Removes {@code location} from the key's set (the key goes when its set is empty). */
  void clear(long key, int location) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    synchronized (s) {
      s.clear(key, h, location);
    }
  }

  /** Copies the key's set into {@code out} (words beyond its width, or all when absent, are 0). */
  void copy(long key, long[] out) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    synchronized (s) {
      s.copy(key, h, out);
    }
  }

  /** Distinct keys held by at least one location. */
  int size() {
    int n = 0;
    for (Stripe s : stripes) {
      synchronized (s) {
        n += s.size;
      }
    }
    return n;
  }

  /** One stripe: keys[slot], words[slot * width .. + width). */
  private static final class Stripe {
    long[] keys = new long[16];
    long[] words = new long[16];
    int width = 1;
    int size;

    private int mask() {
      return keys.length - 1;
    }

    private boolean occupied(int slot) {
      int base = slot * width;
      for (int w = 0; w < width; w++) {
        if (words[base + w] != 0) {
          return true;
        }
      }
      return false;
    }

    /** The slot holding {@code key}, or the empty slot where it would go. */
    private int find(long key, long h) {
      int slot = (int) h & mask();
      while (occupied(slot) && keys[slot] != key) {
        slot = (slot + 1) & mask();
      }
      return slot;
    }

    void set(long key, long h, int location) {
      int word = location >>> 6;
      if (word >= width) {
        rebuild(keys.length, word + 1);
      }
      int slot = find(key, h);
      if (!occupied(slot)) {
        keys[slot] = key;
        size++;
      }
      words[slot * width + word] |= 1L << location;
      if (size * 2 > keys.length) {
        rebuild(keys.length * 2, width);
      }
    }

    void clear(long key, long h, int location) {
      int word = location >>> 6;
      if (word >= width) {
        return;
      }
      int slot = find(key, h);
      if (!occupied(slot)) {
        return;
      }
      words[slot * width + word] &= ~(1L << location);
      if (!occupied(slot)) {
        size--;
        shiftBack(slot);
      }
    }

    void copy(long key, long h, long[] out) {
      Arrays.fill(out, 0);
      int slot = find(key, h);
      if (occupied(slot)) {
        System.arraycopy(words, slot * width, out, 0, Math.min(width, out.length));
      }
    }

    /** Backward-shift deletion of the (now empty) slot {@code hole}: probe chains stay unbroken. */
    private void shiftBack(int hole) {
      int mask = mask();
      int b = hole;
      while (true) {
        b = (b + 1) & mask;
        if (!occupied(b)) {
          return;
        }
        int home = (int) OpenAddressing.mix(keys[b]) & mask;
        if (OpenAddressing.fillsHole(hole, b, home)) {
          keys[hole] = keys[b];
          System.arraycopy(words, b * width, words, hole * width, width);
          Arrays.fill(words, b * width, b * width + width, 0);
          hole = b;
        }
      }
    }

    private void rebuild(int capacity, int newWidth) {
      long[] oldKeys = keys;
      long[] oldWords = words;
      int oldWidth = width;
      keys = new long[capacity];
      words = new long[capacity * newWidth];
      width = newWidth;
      int mask = capacity - 1;
      for (int slot = 0; slot < oldKeys.length; slot++) {
        int base = slot * oldWidth;
        boolean any = false;
        for (int w = 0; w < oldWidth; w++) {
          any |= oldWords[base + w] != 0;
        }
        if (!any) {
          continue;
        }
        int to = (int) OpenAddressing.mix(oldKeys[slot]) & mask;
        while (occupied(to)) {
          to = (to + 1) & mask;
        }
        keys[to] = oldKeys[slot];
        System.arraycopy(oldWords, base, words, to * newWidth, oldWidth);
      }
    }
  }
}
