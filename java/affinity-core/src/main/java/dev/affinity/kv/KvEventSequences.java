package dev.affinity.kv;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The event-id sequences of workers' KV-cache events: one per attention-DP rank, as TensorRT-LLM numbers them (a
 * {@code KVCacheEventManager} per rank; its {@code tensorrt_llm/serve/kv_event_fanout.py} expects previous + 1 per
 * rank and publishes {@code all_cleared} for the rank on a gap). An id past previous + 1 is a <b>gap</b>: events were
 * lost (the worker's event buffer overflowed between two drains, an answer was lost), so what an index holds for
 * that rank can no longer be trusted. An id at or below the previous one is a <b>restart</b>: the worker's sequence
 * started over, and what was known of its old cache is gone. A rank's first event starts its sequence. Each
 * worker's events come from one drain at a time; the state of different workers may be touched concurrently.
 */
public final class KvEventSequences {
  /** What an event's id says about the events before it. */
  public enum Verdict { IN_SEQUENCE, GAP, RESTART }

  /** Per worker: the last id of each rank (-1: none yet). */
  private final Map<String, long[]> lastIds = new HashMap<>();

  /** Records the event {@code id} of {@code worker}'s {@code rank} (negative ranks count as rank 0): what it says. */
  public Verdict next(String worker, int rank, long id) {
    return next(worker, rank, id, null);
  }

  /**
   * As {@link #next(String, int, long)}; on a gap {@code skippedOut[0]} receives how many ids were skipped.
   */
  public Verdict next(String worker, int rank, long id, long[] skippedOut) {
    int r = Math.max(0, rank);
    long[] last;
    synchronized (lastIds) {
      last = lastIds.get(worker);
      if (last == null || r >= last.length) {
        long[] grown = new long[r + 1];
        Arrays.fill(grown, -1);
        if (last != null) {
          System.arraycopy(last, 0, grown, 0, last.length);
        }
        last = grown;
        lastIds.put(worker, last);
      }
    }
    long previous = last[r];
    last[r] = id;
    if (previous < 0 || id == previous + 1) {
      return Verdict.IN_SEQUENCE;
    }
    if (id <= previous) {
      return Verdict.RESTART;
    }
    if (skippedOut != null) {
      skippedOut[0] = id - previous - 1;
    }
    return Verdict.GAP;
  }

  /** Forgets a worker's sequences (it left: a worker of that id starts afresh). */
  public void forget(String worker) {
    synchronized (lastIds) {
      lastIds.remove(worker);
    }
  }
}
