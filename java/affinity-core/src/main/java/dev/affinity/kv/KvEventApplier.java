package dev.affinity.kv;

import dev.affinity.executor.KvEvent;
import java.util.List;

/**
 * Applies KV-cache events of one worker to a {@link PrefixIndex}: "created" clears the location (a new cache
 * holds nothing) and records its size, "stored" adds blocks, "removed" retracts them, "updated" (a priority
 * change) keeps them. With {@code ranksVisible} the event's rank selects the location; otherwise the
 * whole worker is one location. Before an event is applied its id is checked against its rank's sequence
 * ({@link KvEventSequences}): after a gap (events lost) or a restart (ids starting over) the location forgets
 * every block it held, as upstream's {@code all_cleared}, and the events go on from there: an index never keeps
 * blocks that a lost "removed" event may have retracted.
 */
public final class KvEventApplier {
  /** Told what the index forgot, right after it did (routers drop what they derived from those blocks). */
  public interface Listener {
    /** The location's KV events removed these blocks. */
    default void removed(int location, long[] keys) {}

    /** The location's cache was recreated empty. */
    default void cleared(int location) {}
  }

  /**
   * What one batch's ids said: the locations cleared after a gap and after a restart, and the events the gaps
   * skipped.
   */
  public record Ingest(int gaps, long skipped, int restarts) {
    public static final Ingest CLEAN = new Ingest(0, 0, 0);
  }

  private static final Listener NONE = new Listener() {};

  private final PrefixIndex index;
  private final Listener listener;
  private final KvEventSequences sequences = new KvEventSequences();

  public KvEventApplier(PrefixIndex index) {
    this(index, NONE);
  }

  public KvEventApplier(PrefixIndex index, Listener listener) {
    this.index = index;
    this.listener = listener;
  }

  /** Applies one batch of {@code worker}'s events, in order; returns what their ids said. */
  public Ingest apply(String worker, boolean ranksVisible, List<KvEvent> events) {
    int gaps = 0;
    int restarts = 0;
    long skipped = 0;
    long[] skippedOut = new long[1];
    for (KvEvent e : events) {
      int location = index.location(worker, ranksVisible ? e.rank() : -1);
      KvEventSequences.Verdict verdict = sequences.next(worker, e.rank(), e.eventId(), skippedOut);
      if (verdict != KvEventSequences.Verdict.IN_SEQUENCE) {
        // without visible ranks the worker is one location: any rank's loss clears it all
        index.forgetBlocks(location);
        listener.cleared(location);
        if (verdict == KvEventSequences.Verdict.GAP) {
          gaps++;
          skipped += skippedOut[0];
        } else {
          restarts++;
        }
      }
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
    return gaps == 0 && restarts == 0 ? Ingest.CLEAN : new Ingest(gaps, skipped, restarts);
  }

  /** Forgets a worker's event sequences (it left; a worker of that id starts afresh). */
  public void forget(String worker) {
    sequences.forget(worker);
  }
}
