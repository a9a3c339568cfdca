package dev.affinity.kv;

import java.util.Arrays;
import java.util.function.LongConsumer;

/**
 * A set of {@code long} keys in least-recently-used order, without boxing: an open-addressing hash
 * table (linear probing, backward-shift deletion) of slots that form a doubly linked list from the
 * least to the most recently used. Adding, touching, removing and evicting the oldest are O(1). Not
 * thread-safe: {@link PrefixIndex} guards each location's set with the location's lock.
 */
final class LongLruSet {
  private static final int NONE = -1;

  // Slots: the keys and their list links; free slots are chained through next[].
  private long[] keys;
  private int[] prev;
  private int[] next;
  private int freeHead = NONE;
  private int used;  // slots handed out so far (high-water mark)
  private int head = NONE;  // least recently used
  private int tail = NONE;  // most recently used
  private int size;

  // Hash table: slot index + 1 per bucket, 0 = empty.
  private int[] table;

  LongLruSet() {
    keys = new long[16];
    prev = new int[16];
    next = new int[16];
    table = new int[32];
  }

  int size() {
    return size;
  }

  /** Adds {@code key} as the most recently used; true if it was not there (else it is only touched). */
  boolean add(long key) {
    int bucket = find(key);
    if (table[bucket] != 0) {
      moveToTail(table[bucket] - 1);
      return false;
    }
    int slot = allocate();
    keys[slot] = key;
    linkTail(slot);
    table[bucket] = slot + 1;
    size++;
    if (size * 2 > table.length) {
      rehash(table.length * 2);
    }
    return true;
  }

  /** Marks {@code key} as the most recently used if present. */
  void use(long key) {
    int bucket = find(key);
    if (table[bucket] != 0) {
      moveToTail(table[bucket] - 1);
    }
  }

  boolean contains(long key) {
    return table[find(key)] != 0;
  }

  /** Removes {@code key}; true if it was there. */
  boolean remove(long key) {
    int bucket = find(key);
    if (table[bucket] == 0) {
      return false;
    }
    int slot = table[bucket] - 1;
    deleteBucket(bucket);
    unlink(slot);
    free(slot);
    size--;
    return true;
  }

  /** Removes and returns the least recently used key; the set must not be empty. */
  long removeOldest() {
    if (head == NONE) {
      throw new IllegalStateException("empty");
    }
    long key = keys[head];
    remove(key);
    return key;
  }

  /** Calls {@code action} for every key, least recently used first. */
  void forEach(LongConsumer action) {
    for (int s = head; s != NONE; s = next[s]) {
      action.accept(keys[s]);
    }
  }

  void clear() {
    Arrays.fill(table, 0);
    freeHead = NONE;
    used = 0;
    head = NONE;
    tail = NONE;
    size = 0;
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Reads {@code key}'s home bucket and the key its slot holds, and returns it: a caller about to add or touch several
   * keys reads them all first, so that their cache misses overlap ({@link PrefixIndex#store}).
   */
  long touch(long key) {
    int slot = table[(int) OpenAddressing.mix(key) & (table.length - 1)];
    return slot == 0 ? 0 : keys[slot - 1];
  }

  /** The bucket holding {@code key}, or the empty bucket where it would go. */
  private int find(long key) {
    int mask = table.length - 1;
    int b = (int) OpenAddressing.mix(key) & mask;
    while (table[b] != 0 && keys[table[b] - 1] != key) {
      b = (b + 1) & mask;
    }
    return b;
  }

  /** Backward-shift deletion: keeps every probe sequence unbroken without tombstones. */
  private void deleteBucket(int bucket) {
    int mask = table.length - 1;
    int hole = bucket;
    int b = bucket;
    while (true) {
      b = (b + 1) & mask;
      if (table[b] == 0) {
        break;
      }
      int home = (int) OpenAddressing.mix(keys[table[b] - 1]) & mask;
      if (OpenAddressing.fillsHole(hole, b, home)) {
        table[hole] = table[b];
        hole = b;
      }
    }
    table[hole] = 0;
  }

  private void rehash(int capacity) {
    table = new int[capacity];
    int mask = capacity - 1;
    for (int s = head; s != NONE; s = next[s]) {
      int b = (int) OpenAddressing.mix(keys[s]) & mask;
      while (table[b] != 0) {
        b = (b + 1) & mask;
      }
      table[b] = s + 1;
    }
  }

  private int allocate() {
    if (freeHead != NONE) {
      int s = freeHead;
      freeHead = next[s];
      return s;
    }
    if (used == keys.length) {
      int n = keys.length * 2;
      keys = Arrays.copyOf(keys, n);
      prev = Arrays.copyOf(prev, n);
      next = Arrays.copyOf(next, n);
    }
    return used++;
  }

  private void free(int slot) {
    next[slot] = freeHead;
    freeHead = slot;
  }

  private void linkTail(int slot) {
    prev[slot] = tail;
    next[slot] = NONE;
    if (tail != NONE) {
      next[tail] = slot;
    } else {
      head = slot;
    }
    tail = slot;
  }

  private void unlink(int slot) {
    int p = prev[slot];
    int n = next[slot];
    if (p != NONE) {
      next[p] = n;
    } else {
      head = n;
    }
    if (n != NONE) {
      prev[n] = p;
    } else {
      tail = p;
    }
  }

  private void moveToTail(int slot) {
    if (slot != tail) {
      unlink(slot);
      linkTail(slot);
    }
  }
}
