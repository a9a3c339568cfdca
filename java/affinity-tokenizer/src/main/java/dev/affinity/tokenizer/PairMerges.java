package dev.affinity.tokenizer;

/**
 * A BPE model's merges: the pair of token ids {@code (left, right)} to its rank (its index in the merges list) and the
 * id of the merged token. Open addressing over two long arrays, so a look-up allocates nothing.
 */
final class PairMerges {
  /** What {@link #get} answers for a pair that does not merge. */
  static final long NONE = -1L;
  private static final long EMPTY = -1L;

  private final long[] keys;
  private final long[] values;
  private final int mask;
  private int size;

  PairMerges(int expected) {
    int capacity = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
    keys = new long[capacity];
    values = new long[capacity];
    java.util.Arrays.fill(keys, EMPTY);
    mask = capacity - 1;
  }

  /** Adds (or, as a later duplicate in the merges list does in Hugging Face's map, replaces) a merge. */
  void put(int left, int right, int rank, int merged) {
    if (size * 2 >= keys.length) {
      throw new IllegalStateException("more merges than sized for");
    }
    long key = key(left, right);
    int i = slot(key);
    if (keys[i] == EMPTY) {
      keys[i] = key;
      size++;
    }
    values[i] = ((long) rank << 32) | (merged & 0xffffffffL);
  }

  /** {@code rank << 32 | merged id} of the pair, or {@link #NONE}. */
  long get(int left, int right) {
    long key = key(left, right);
    int i = slot(key);
    return keys[i] == key ? values[i] : NONE;
  }

  int size() {
    return size;
  }

  private int slot(long key) {
    int i = (int) mix(key) & mask;
    while (keys[i] != EMPTY && keys[i] != key) {
      i = (i + 1) & mask;
    }
    return i;
  }

  private static long key(int left, int right) {
    return ((long) left << 32) | (right & 0xffffffffL);
  }

  private static long mix(long x) {  // SplitMix64's finalizer
    x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
    x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
    return x ^ (x >>> 31);
  }
}
