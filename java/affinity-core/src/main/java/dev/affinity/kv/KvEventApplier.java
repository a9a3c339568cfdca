package dev.affinity.kv;

import dev.affinity.executor.KvEvent;
import java.util.List;

/**
 * Applies KV-cache events of one worker to a {@link PrefixIndex}: "created" clears the location (a new cache
 * holds nothing) and records its size, "stored" adds blocks, "removed" retracts them, "updated" (a priority
 * change) keeps them. With {@code ranksVisible} the event's rank selects the location; otherwise the
 * whole worker is one location.
 */
public final class KvEventApplier {
  /** Told what the index forgot, right after it did (routers drop what they derived from those blocks). */
  public interface Listener {
    /** The location's KV events removed these blocks. */
    default void removed(int location, long[] keys) {}

    /** The location's cache was recreated empty. */
    default void cleared(int location) {}
  }

  private static final Listener NONE = new Listener() {};

  private final PrefixIndex index;
  private final Listener listener;

  public KvEventApplier(PrefixIndex index) {
    this(index, NONE);
  }

  public KvEventApplier(PrefixIndex index, Listener listener) {
    this.index = index;
    this.listener = listener;
  }

  public void apply(String worker, boolean ranksVisible, List<KvEvent> events) {
    for (KvEvent e : events) {
      int location = index.location(worker, ranksVisible ? e.rank() : -1);
      switch (e.type()) {
        case CREATED -> {
          if (ranksVisible) {
            index.created(location, e.value());
            listener.cleared(location);
          }
          // without visible ranks, one rank's new cache says nothing about the others
        }
        case STORED -> index.store(location, e.blockHashes());
        case REMOVED -> {
          index.remove(location, e.blockHashes());
          listener.removed(location, e.blockHashes());
        }
        case UPDATED -> index.touch(location, e.blockHashes(), e.blockHashes().length);
      }
    }
  }
}
