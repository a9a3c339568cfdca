package dev.affinity.kv;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Which KV blocks each location (a worker, or one attention-DP rank of a worker) holds, for prefix
 * matching. Fed by KV events ({@link KvEventApplier}) and by routed-block backfill. Blocks are 64-bit
 * keys ({@link BlockHasher#keys}).
 *
 * <p>Layout: one map from block key to the set of locations holding it ({@link LocationBits}: striped,
 * primitive, bitsets inline), so a lookup walks the request's blocks once for all locations; and per
 * location a primitive LRU set bounding its entries ({@link LongLruSet}) — the bound matters for
 * backfilled blocks, which no "removed" event will ever retract. Safe under concurrent updates and
 * lookups: each stripe of the map and each location's LRU is guarded by its own lock, and a
 * location's bit only changes under its LRU's lock.
 */
public final class PrefixIndex {
  private final long maxBlocksPerLocation;
  private final LocationBits holders = new LocationBits();
  /**
   * A walk reads this many blocks' entries back to back before it looks them up ({@link LocationBits#touch}): their
   * cache misses overlap. 8-16 halved a 5,500-block walk over 600k keys (600 to about 320 us); 32 and 64 did less.
   */
  private static final int AHEAD = 16;
  /** What the touches read, stored so that the compiler keeps them; never read. */
  @SuppressWarnings("unused")
  private static long touchSink;
  private final Map<String, Integer> locationIds = new HashMap<>();
  private final List<LocationState> locations = new ArrayList<>();
  private final AtomicLong entries = new AtomicLong();

  /** The index of one location: its LRU of block keys, guarded by itself. */
  private static final class LocationState {
    final String worker;
    final int rank;
    final LongLruSet lru = new LongLruSet();
    /** The blocks its cache was created with, as its "created" event said (0: not seen). */
    long createdBlocks;
    /** The most blocks the location held when its worker evicted some (0: never evicted since its cache was made). */
    long heldAtEviction;

    LocationState(String worker, int rank) {
      this.worker = worker;
      this.rank = rank;
    }
  }

  /** @param maxBlocksPerLocation entries kept per location before the least recently used go */
  public PrefixIndex(long maxBlocksPerLocation) {
    if (maxBlocksPerLocation <= 0) {
      throw new IllegalArgumentException("maxBlocksPerLocation must be > 0, got " + maxBlocksPerLocation);
    }
    this.maxBlocksPerLocation = maxBlocksPerLocation;
  }

  /** The dense id of (worker, rank); rank -1 stands for the whole worker (ranks not visible). */
  public synchronized int location(String worker, int rank) {
    String key = rank + "@" + worker;
    Integer id = locationIds.get(key);
    if (id == null) {
      id = locations.size();
      locations.add(new LocationState(worker, rank));
      locationIds.put(key, id);
    }
    return id;
  }

  private synchronized LocationState state(int location) {
    return locations.get(location);
  }

  /** Number of location ids handed out so far (ids are 0 .. count - 1). */
  public synchronized int locationCount() {
    return locations.size();
  }

  /** Number of (block, location) entries. */
  public long size() {
    return entries.get();
  }

  /** Distinct block keys indexed. */
  public int distinctBlocks() {
    return holders.size();
  }

  /** Records that the location holds these blocks (block {@code from} ends up the most recently used). */
  public void store(int location, long[] keys, int from, int to) {
    LocationState st = state(location);
    synchronized (st) {
      // Every change of this location's bit happens under its lock, so the LRU and the holder
      // sets never disagree.
      // Deepest block first, so that a chain's prefix is its most recently used part and the LRU
      // drops suffixes before prefixes (as a KV cache evicts).
      for (int i = to - 1; i >= from; i--) {
        long k = keys[i];
        if (st.lru.add(k)) {
          entries.incrementAndGet();
          holders.set(k, location);
        }
      }
      long over = st.lru.size() - maxBlocksPerLocation;
      while (over-- > 0 && st.lru.size() > 0) {
        long k = st.lru.removeOldest();
        entries.decrementAndGet();
        holders.clear(k, location);
      }
    }
  }

  public void store(int location, long[] keys) {
    store(location, keys, 0, keys.length);
  }

  /**
   * Records that the location no longer holds these blocks: its worker evicted them (TensorRT-LLM removes a block
   * from its reuse tree only to make room), so the cache was full at what it held before.
   */
  public void remove(int location, long[] keys) {
    LocationState st = state(location);
    synchronized (st) {
      if (keys.length > 0) {
        st.heldAtEviction = Math.max(st.heldAtEviction, st.lru.size());
      }
      for (long k : keys) {
        if (st.lru.remove(k)) {
          entries.decrementAndGet();
          holders.clear(k, location);
        }
      }
    }
  }

  /** Forgets everything the location holds (its cache was recreated, or it left). */
  public void clear(int location) {
    created(location, 0);
  }

  /** The location's cache was (re)created empty with room for {@code blocks} blocks (0: not said). */
  public void created(int location, long blocks) {
    LocationState st = state(location);
    synchronized (st) {
      emptyLocked(st, location);
      st.createdBlocks = Math.max(0, blocks);
    }
  }

  /**
   * Forgets every block the location holds and keeps its size: what it held can no longer be trusted (events were
   * lost, or the worker restarted), and the events that follow fill it again.
   */
  public void forgetBlocks(int location) {
    LocationState st = state(location);
    synchronized (st) {
      emptyLocked(st, location);
    }
  }

  private void emptyLocked(LocationState st, int location) {
    st.lru.forEach(k -> {
      entries.decrementAndGet();
      holders.clear(k, location);
    });
    st.lru.clear();
    st.heldAtEviction = 0;
  }

  /** Clears every location of a worker. */
  public void clearWorker(String worker) {
    List<Integer> ids = new ArrayList<>();
    synchronized (this) {
      for (int i = 0; i < locations.size(); i++) {
        if (locations.get(i).worker.equals(worker)) {
          ids.add(i);
        }
      }
    }
    ids.forEach(this::clear);
  }

  /** Marks blocks as just used at the location (keeps a hot prefix from aging out). */
  public void touch(int location, long[] keys, int count) {
    LocationState st = state(location);
    synchronized (st) {
      for (int i = Math.min(count, keys.length) - 1; i >= 0; i--) {
        st.lru.touch(keys[i]);
      }
    }
  }

  /**
   * The blocks the location's KV cache holds: what its "created" event said, else the most it held when its
   * worker evicted (a router that starts after its workers misses their "created" events); 0 while neither is
   * known, so the cache has not been full as far as the events show.
   */
  public long capacity(int location) {
    LocationState st = state(location);
    synchronized (st) {
      return st.createdBlocks > 0 ? st.createdBlocks : st.heldAtEviction;
    }
  }

  /** Entries held by one location. */
  public long size(int location) {
    LocationState st = state(location);
    synchronized (st) {
      return st.lru.size();
    }
  }

  /**
   * For each requested location, the number of leading {@code keys} it holds (stopping at the
   * first block it lacks): {@code result[i]} belongs to {@code candidateLocations[i]}.
   */
  public int[] matchDepths(long[] keys, int[] candidateLocations) {
    int[] out = new int[candidateLocations.length];
    if (keys.length == 0 || candidateLocations.length == 0) {
      return out;
    }
    int maxLoc = 0;
    for (int l : candidateLocations) {
      maxLoc = Math.max(maxLoc, l);
    }
    long[] alive = new long[(maxLoc >>> 6) + 1];
    for (int l : candidateLocations) {
      alive[l >>> 6] |= 1L << l;
    }
    int[] depth = new int[maxLoc + 1];
    long[] h = new long[alive.length];
    Arrays.fill(depth, -1);
    int block = 0;
    long touched = 0;
    for (; block < keys.length; block++) {
      if ((block & (AHEAD - 1)) == 0) {
        for (int b = block, end = Math.min(keys.length, block + AHEAD); b < end; b++) {
          touched += holders.touch(keys[b]);
        }
      }
      holders.copy(keys[block], h);
      boolean any = false;
      for (int w = 0; w < alive.length; w++) {
        long before = alive[w];
        if (before == 0) {
          continue;
        }
        long now = before & h[w];
        long dropped = before & ~now;
        while (dropped != 0) {
          int bit = Long.numberOfTrailingZeros(dropped);
          depth[(w << 6) + bit] = block;
          dropped &= dropped - 1;
        }
        alive[w] = now;
        any |= now != 0;
      }
      if (!any) {
        break;
      }
    }
    touchSink = touched;
    for (int i = 0; i < candidateLocations.length; i++) {
      int d = depth[candidateLocations[i]];
      out[i] = d < 0 ? keys.length : d;
    }
    return out;
  }
}
