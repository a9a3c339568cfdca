package dev.affinity.kv;

import java.util.Arrays;
import java.util.concurrent.locks.StampedLock;

/**
 * Block key → set of location ids holding it, without boxing: 64 stripes, each an open-addressing
 * table (linear probing, backward-shift deletion) whose entries are the key followed by its bitset
 * words ({@code 1 + width} longs per entry, in one array so that a lookup touches one cache line;
 * grown when a higher location id arrives). An entry exists exactly while some bit is set, so an
 * all-zero entry is an empty one. About 24 bytes per distinct key at 64 locations or fewer, instead
 * of ≈ 140 for a boxed concurrent map of copy-on-write arrays.
 *
 * <p>Each stripe has its own {@link StampedLock}: changes take its write lock; a lookup reads
 * optimistically (no write to shared memory, so a prefix walk's lookups overlap their cache misses:
 * a lock's atomic instruction orders every load behind it) and takes the read lock only when a change
 * ran meanwhile. An optimistic read may see a table halfway through a change, so it bounds its probe
 * and checks every index against the arrays it read; what it found counts only when the stamp still
 * validates.
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
    long stamp = s.lock.writeLock();
    try {
      s.set(key, h, location);
    } finally {
      s.lock.unlockWrite(stamp);
    }
  }

  /** Removes {@code location} from the key's set (the key goes when its set is empty). */
  void clear(long key, int location) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    long stamp = s.lock.writeLock();
    try {
      s.clear(key, h, location);
    } finally {
      s.lock.unlockWrite(stamp);
    }
  }

  /** Copies the key's set into {@code out} (words beyond its width, or all when absent, are 0). */
  void copy(long key, long[] out) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    long stamp = s.lock.tryOptimisticRead();
    if (stamp != 0) {
      s.copy(key, h, out);
      if (s.lock.validate(stamp)) {
        return;
      }
    }
    stamp = s.lock.readLock();
    try {
      s.copy(key, h, out);
    } finally {
      s.lock.unlockRead(stamp);
    }
  }

  /**
   * Reads the key's home entry without a lock and returns what it read, so that the caller can read several keys'
   * entries back to back before it looks them up: their cache misses overlap (Java has no prefetch).
   */
  long touch(long key) {
    long h = OpenAddressing.mix(key);
    Stripe s = stripe(h);
    long[] t = s.table;
    int i = (int) (((int) h & (s.capacity - 1)) * (long) s.stride);
    return i >= 0 && i < t.length ? t[i] : 0;
  }

  /** Distinct keys held by at least one location. */
  int size() {
    int n = 0;
    for (Stripe s : stripes) {
      long stamp = s.lock.readLock();
      try {
        n += s.size;
      } finally {
        s.lock.unlockRead(stamp);
      }
    }
    return n;
  }

  /**
   * One stripe: entry {@code e} is {@code table[e * stride]} (the key) and its {@code stride - 1} words after it. The
   * fields change under the write lock only; {@link #copy} reads them without it too (see the class comment).
   */
  private static final class Stripe {
    final StampedLock lock = new StampedLock();
    long[] table = new long[16 * 2];
    int stride = 2;
    int capacity = 16;
    int size;

    private static boolean occupied(long[] t, int base, int stride) {
      for (int w = 1; w < stride; w++) {
        if (t[base + w] != 0) {
          return true;
        }
      }
      return false;
    }

    /** The entry holding {@code key}, or the empty one where it would go (under the write lock). */
    private int find(long key, long h) {
      int mask = capacity - 1;
      int e = (int) h & mask;
      while (occupied(table, e * stride, stride) && table[e * stride] != key) {
        e = (e + 1) & mask;
      }
      return e;
    }

    void set(long key, long h, int location) {
      int word = location >>> 6;
      if (word + 1 >= stride) {
        rebuild(capacity, word + 2);
      }
      int e = find(key, h);
      int base = e * stride;
      if (!occupied(table, base, stride)) {
        table[base] = key;
        size++;
      }
      table[base + 1 + word] |= 1L << location;
      if (size * 2 > capacity) {
        rebuild(capacity * 2, stride);
      }
    }

    void clear(long key, long h, int location) {
      int word = location >>> 6;
      if (word + 1 >= stride) {
        return;
      }
      int e = find(key, h);
      int base = e * stride;
      if (!occupied(table, base, stride)) {
        return;
      }
      table[base + 1 + word] &= ~(1L << location);
      if (!occupied(table, base, stride)) {
        size--;
        shiftBack(e);
      }
    }

    /**
     * Copies the key's words into {@code out}; safe without the lock: the arrays and sizes are read once, the probe
     * ends after every entry, and an inconsistent view (a change halfway) copies something the caller's validation
     * throws away.
     */
    void copy(long key, long h, long[] out) {
      Arrays.fill(out, 0);
      long[] t = table;
      int st = stride;
      int cap = capacity;
      if (st < 2 || cap <= 0 || (long) cap * st > t.length || Integer.bitCount(cap) != 1) {
        return;  // a view halfway through a rebuild
      }
      int mask = cap - 1;
      int e = (int) h & mask;
      for (int probes = 0; probes < cap; probes++) {
        int base = e * st;
        if (!occupied(t, base, st)) {
          return;
        }
        if (t[base] == key) {
          System.arraycopy(t, base + 1, out, 0, Math.min(st - 1, out.length));
          return;
        }
        e = (e + 1) & mask;
      }
    }

    /** Backward-shift deletion of the (now empty) entry {@code hole}: probe chains stay unbroken. */
    private void shiftBack(int hole) {
      int mask = capacity - 1;
      int b = hole;
      while (true) {
        b = (b + 1) & mask;
        if (!occupied(table, b * stride, stride)) {
          return;
        }
        int home = (int) OpenAddressing.mix(table[b * stride]) & mask;
        if (OpenAddressing.fillsHole(hole, b, home)) {
          System.arraycopy(table, b * stride, table, hole * stride, stride);
          Arrays.fill(table, b * stride, b * stride + stride, 0);
          hole = b;
        }
      }
    }

    private void rebuild(int newCapacity, int newStride) {
      long[] old = table;
      int oldStride = stride;
      int oldCapacity = capacity;
      long[] t = new long[newCapacity * newStride];
      int mask = newCapacity - 1;
      for (int e = 0; e < oldCapacity; e++) {
        int base = e * oldStride;
        if (!occupied(old, base, oldStride)) {
          continue;
        }
        int to = (int) OpenAddressing.mix(old[base]) & mask;
        while (occupied(t, to * newStride, newStride)) {
          to = (to + 1) & mask;
        }
        System.arraycopy(old, base, t, to * newStride, oldStride);
      }
      table = t;
      stride = newStride;
      capacity = newCapacity;
    }
  }
}
