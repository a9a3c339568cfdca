package dev.affinity.kv;

import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Predict-on-route: which locations were recently sent which prompt prefixes, before any KV event
 * can say so. Block keys are chained (a key identifies its whole prefix), so it is enough to remember
 * every {@code stride}-th key of a routed prompt, plus its last full block: a request whose key at
 * position i is held by a location shares at least i + 1 blocks with it. Entries expire after a TTL.
 * Thread-safe.
 */
public final class RoutedPrefixes {
  private static final long[] NOTHING_KEPT = new long[0];
  private final int stride;
  private final long ttlNanos;
  private final LocationBits holders = new LocationBits();
  private final ConcurrentLinkedQueue<Entry> expiries = new ConcurrentLinkedQueue<>();

  private record Entry(long expiresNanos, int location, long[] keys) {}

  public RoutedPrefixes(int stride, long ttlNanos) {
    if (stride <= 0) {
      throw new IllegalArgumentException("stride must be > 0, got " + stride);
    }
    this.stride = stride;
    this.ttlNanos = ttlNanos;
  }

  private boolean sampled(int i, int n) {
    return (i + 1) % stride == 0 || i == n - 1;
  }

  /**
   * Remembers that the request's first {@code fullBlocks} blocks were routed to the location; returns the keys it
   * keeps (every {@code stride}-th and the last), which another frontend with the same stride records as they are
   * ({@link #recordSampled}).
   */
  public long[] record(int location, long[] keys, int fullBlocks, long nowNanos) {
    if (ttlNanos <= 0 || fullBlocks <= 0) {
      return NOTHING_KEPT;
    }
    int n = Math.min(fullBlocks, keys.length);
    long[] kept = new long[n / stride + 1];
    int k = 0;
    for (int i = 0; i < n; i++) {
      if (sampled(i, n)) {
        kept[k++] = keys[i];
      }
    }
    kept = Arrays.copyOf(kept, k);
    store(location, kept, nowNanos);
    return kept;
  }

  /** Remembers keys another frontend kept of a prompt it routed to this location ({@link #record}'s answer). */
  public void recordSampled(int location, long[] kept, long nowNanos) {
    if (ttlNanos > 0 && kept.length > 0) {
      store(location, kept.clone(), nowNanos);
    }
  }

  /** {@code kept} is this object's from now on (its entry expires with it). */
  private void store(int location, long[] kept, long nowNanos) {
    for (long key : kept) {
      holders.set(key, location);
    }
    expiries.add(new Entry(nowNanos + ttlNanos, location, kept));
  }

  /**
   * Forgets the predictions that the location holds these blocks: its KV events said they were removed, and
   * events are the truth once they arrive (a prediction only bridges the time until they do).
   */
  public void forget(int location, long[] keys) {
    for (long key : keys) {
      holders.clear(key, location);
    }
  }

  /** Forgets every prediction for the location (its cache was recreated). */
  public void forgetAll(int location) {
    for (Entry e : expiries) {
      if (e.location() == location) {
        forget(location, e.keys());
      }
    }
  }

  /** Drops expired entries. */
  public void expire(long nowNanos) {
    for (Entry e = expiries.peek(); e != null && nowNanos - e.expiresNanos() > 0; e = expiries.peek()) {
      if (expiries.remove(e)) {
        int location = e.location();
        for (long key : e.keys()) {
          holders.clear(key, location);
        }
      }
    }
  }

  /**
   * Predicted matched blocks per location id (the array is indexed by location; 0 where nothing is
   * predicted). Stops at the first sampled position nobody holds: no deeper key can be held then.
   */
  public int[] depths(long[] keys, int fullBlocks, int locationCount) {
    int[] out = new int[locationCount];
    int n = Math.min(fullBlocks, keys.length);
    long[] set = new long[(Math.max(locationCount, 1) + 63) >>> 6];
    // the sampled positions only (every stride-th, and the last), not every position tested for being one
    for (int i = Math.min(stride, n) - 1; i >= 0 && i < n; i = i == n - 1 ? n : Math.min(i + stride, n - 1)) {
      holders.copy(keys[i], set);
      boolean any = false;
      for (long w : set) {
        any |= w != 0;
      }
      if (!any) {
        break;
      }
      for (int w = 0; w < set.length; w++) {
        for (long bits = set[w]; bits != 0; bits &= bits - 1) {
          int loc = (w << 6) + Long.numberOfTrailingZeros(bits);
          if (loc < out.length) {
            out[loc] = i + 1;
          }
        }
      }
    }
    return out;
  }

  /** Keys currently remembered. */
  public int size() {
    return holders.size();
  }
}
