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
  /**
   * Keys each location's removal log holds: a walk that continues an earlier one checks the keys its locations lost
   * since against its blocks, and walks again from the start where more went (a rank evicting 300 blocks a second
   * loses 4,096 in about 14 s, longer than an agent's tool call between two turns).
   */
  static final int REMOVAL_LOG = 4096;
  private final int removalLog;
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
    /** The last {@code removedKeys.length} keys the location lost, {@code removedKeys[n % length]} the n-th. */
    final long[] removedKeys;
    /**
     * How many keys the location has lost (a wipe counts past the log's length): a walk that saw this count knows, from
     * the log, which of its blocks went since ({@link #walk}). Written under the location's lock, after its log entry.
     */
    volatile long removals;

    LocationState(String worker, int rank, int removalLog) {
      this.worker = worker;
      this.rank = rank;
      this.removedKeys = new long[removalLog];
    }

    /** Logs a key the location loses (under its lock), before its bit is cleared. */
    void removing(long key) {
      long n = removals;
      removedKeys[(int) (n % removedKeys.length)] = key;
      removals = n + 1;
    }
  }

  /** @param maxBlocksPerLocation entries kept per location before the least recently used go */
  public PrefixIndex(long maxBlocksPerLocation) {
    this(maxBlocksPerLocation, REMOVAL_LOG);
  }

  /** With a log of the last {@code removalLog} keys each location lost ({@link #walk}; tests make it short). */
  PrefixIndex(long maxBlocksPerLocation, int removalLog) {
    if (maxBlocksPerLocation <= 0) {
      throw new IllegalArgumentException("maxBlocksPerLocation must be > 0, got " + maxBlocksPerLocation);
    }
    if (removalLog <= 0) {
      throw new IllegalArgumentException("removalLog must be > 0, got " + removalLog);
    }
    this.maxBlocksPerLocation = maxBlocksPerLocation;
    this.removalLog = removalLog;
  }

  /** The dense id of (worker, rank); rank -1 stands for the whole worker (ranks not visible). */
  public synchronized int location(String worker, int rank) {
    String key = rank + "@" + worker;
    Integer id = locationIds.get(key);
    if (id == null) {
      id = locations.size();
      locations.add(new LocationState(worker, rank, removalLog));
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
      long touched = 0;
      for (int i = to - 1; i >= from; i--) {
        if ((to - 1 - i) % AHEAD == 0) {  // the next keys' buckets and slots read back to back: their misses overlap
          for (int j = i; j > i - AHEAD && j >= from; j--) {
            touched += st.lru.touch(keys[j]);
          }
        }
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
        st.removing(k);
        holders.clear(k, location);
      }
      touchSink = touched;
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
          st.removing(k);
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
    st.removals += removalLog + 1L;  // more than the log holds: every walk of this location starts again
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
        st.lru.use(keys[i]);
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
    return depthsFrom(keys, candidateLocations, new int[candidateLocations.length]);
  }

  /**
   * {@link #matchDepths}, continuing {@code last} (an earlier walk of this index, of a prompt that may share leading
   * blocks with this one: a conversation's last turn), or whole when it is null. Where a location held the first
   * {@code p} blocks both prompts share when {@code last} looked, and lost none of them since (its removal log, checked
   * against {@code last}'s filter of its keys, and a key the filter may hold looked for among them), those blocks are
   * held still: only the blocks from {@code p} on are looked up for it; a lost block moves {@code p} back to it. An
   * agent's turn re-sends a history of thousands of blocks and adds a few; the walk costs what it adds (a cache miss a
   * block: 355 against 22 us at 5,500 blocks, {@code PrefixWalkBenchmark}). A location that lost more than the log
   * holds since, or was wiped, is walked from the start. The result is the whole walk's, as of the moment each
   * location's removals were read.
   */
  public Walk walk(long[] keys, int[] candidateLocations, Walk last) {
    int n = candidateLocations.length;
    LocationState[] states = new LocationState[n];
    synchronized (this) {
      for (int i = 0; i < n; i++) {
        states[i] = locations.get(candidateLocations[i]);
      }
    }
    long[] seen = new long[n];
    for (int i = 0; i < n; i++) {
      seen[i] = states[i].removals;  // before any lookup: what goes after is checked next time
    }
    int[] start = new int[n];
    if (last != null && last.index == this && keys.length > 0) {
      int shared = Arrays.mismatch(last.keys, keys);
      shared = shared < 0 ? keys.length : shared;
      for (int i = 0; i < n; i++) {
        int j = indexOf(last.locations, candidateLocations[i]);
        int held = j < 0 ? 0 : Math.min(last.depths[j], shared);
        start[i] = held > 0 ? stillHeld(states[i], last.removals[j], seen[i], last, held) : 0;
      }
    }
    int[] depths = depthsFrom(keys, candidateLocations, start);
    return new Walk(this, keys, candidateLocations.clone(), depths, seen, filterOf(keys));
  }

  /**
   * How many of {@code last}'s first {@code held} blocks {@code st} still holds, given the keys it lost from its count
   * {@code then} to {@code now}: {@code held}, or the first position of a lost key among them (a key the filter may
   * hold is looked for in the keys themselves, so a false positive costs a scan, not the walk); 0 when the log no
   * longer holds them all (more were lost, or the location was wiped).
   */
  private static int stillHeld(LocationState st, long then, long now, Walk last, int held) {
    long[] log = st.removedKeys;
    if (now == then) {
      return held;
    }
    if (now < then || now - then >= log.length) {
      return 0;
    }
    int still = held;
    for (long c = then; c < now && still > 0; c++) {
      long key = log[(int) (c % log.length)];
      if (mayHold(last.filter, key)) {
        for (int b = 0; b < still; b++) {
          if (last.keys[b] == key) {
            still = b;
            break;
          }
        }
      }
    }
    // the writer fills entry r % length before it counts r + 1: none of ours was overwritten while r - then < length
    return st.removals - then < log.length ? still : 0;
  }

  private static int indexOf(int[] a, int v) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] == v) {
        return i;
      }
    }
    return -1;
  }

  /** A Bloom filter of {@code keys}: 16 bits a key, two probes (about 1.4% false positives). */
  private static long[] filterOf(long[] keys) {
    int bits = Integer.highestOneBit(Math.max(64, keys.length * 16 - 1)) << 1;
    long[] filter = new long[bits >>> 6];
    for (long k : keys) {
      long h = OpenAddressing.mix(k);
      int a = (int) h & (bits - 1);
      int b = (int) (h >>> 32) & (bits - 1);
      filter[a >>> 6] |= 1L << a;
      filter[b >>> 6] |= 1L << b;
    }
    return filter;
  }

  private static boolean mayHold(long[] filter, long key) {
    int bits = filter.length << 6;
    long h = OpenAddressing.mix(key);
    int a = (int) h & (bits - 1);
    int b = (int) (h >>> 32) & (bits - 1);
    return (filter[a >>> 6] & (1L << a)) != 0 && (filter[b >>> 6] & (1L << b)) != 0;
  }

  /**
   * The depths of {@code keys} at each candidate, each looked up from its {@code start} (the blocks before it known
   * held): one walk for all, each block's holders read once, a block skipped where no candidate needs it.
   */
  private int[] depthsFrom(long[] keys, int[] candidateLocations, int[] start) {
    int n = candidateLocations.length;
    int[] out = new int[n];
    if (keys.length == 0 || n == 0) {
      return out;
    }
    int maxLoc = 0;
    for (int l : candidateLocations) {
      maxLoc = Math.max(maxLoc, l);
    }
    long[] order = new long[n];  // candidates by start
    for (int i = 0; i < n; i++) {
      order[i] = ((long) start[i] << 32) | i;
    }
    Arrays.sort(order);
    long[] alive = new long[(maxLoc >>> 6) + 1];
    int[] depth = new int[maxLoc + 1];
    long[] h = new long[alive.length];
    Arrays.fill(depth, -1);
    int next = 0;
    int touchedTo = 0;
    long touched = 0;
    int block = 0;
    while (true) {
      boolean any = false;
      for (; next < n && (int) (order[next] >>> 32) <= block; next++) {
        int l = candidateLocations[(int) order[next]];
        alive[l >>> 6] |= 1L << l;
      }
      for (long w : alive) {
        any |= w != 0;
      }
      if (!any) {
        if (next == n) {
          break;
        }
        block = (int) (order[next] >>> 32);  // no one needs the blocks before the next start
        continue;
      }
      if (block >= keys.length) {
        break;
      }
      if (block >= touchedTo) {
        touchedTo = Math.min(keys.length, block + AHEAD);
        for (int b = block; b < touchedTo; b++) {
          touched += holders.touch(keys[b]);
        }
      }
      holders.copy(keys[block], h);
      for (int w = 0; w < alive.length; w++) {
        long before = alive[w];
        long now = before & h[w];
        long dropped = before & ~now;
        while (dropped != 0) {
          int bit = Long.numberOfTrailingZeros(dropped);
          depth[(w << 6) + bit] = block;
          dropped &= dropped - 1;
        }
        alive[w] = now;
      }
      block++;
    }
    touchSink = touched;
    for (int i = 0; i < n; i++) {
      int d = depth[candidateLocations[i]];
      out[i] = d < 0 ? keys.length : d;
    }
    return out;
  }

  /**
   * What a walk found ({@link #walk}), for the next walk of a prompt that shares its leading blocks: its keys (not
   * copied), the locations it matched, their depths, how many keys each had lost when it looked, and a filter of its
   * keys. Immutable.
   */
  public static final class Walk {
    private final PrefixIndex index;
    private final long[] keys;
    private final int[] locations;
    private final int[] depths;
    private final long[] removals;
    private final long[] filter;

    private Walk(PrefixIndex index, long[] keys, int[] locations, int[] depths, long[] removals, long[] filter) {
      this.index = index;
      this.keys = keys;
      this.locations = locations;
      this.depths = depths;
      this.removals = removals;
      this.filter = filter;
    }

    /** The depths, {@code [i]} at the walk's {@code candidateLocations[i]} (a copy). */
    public int[] depths() {
      return depths.clone();
    }

    /** What it keeps beyond its keys (its prompt's chain holds them): the filter, about two bytes a key. */
    public long bytes() {
      return 96 + 8L * filter.length + 16L * locations.length;
    }
  }
}
