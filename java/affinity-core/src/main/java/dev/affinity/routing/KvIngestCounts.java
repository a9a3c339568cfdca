package dev.affinity.routing;

import dev.affinity.executor.KvEvent;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a router's KV-event ingest saw: events and batches applied, the time spent applying them, and a lower bound
 * of the events it never saw. Workers number their events either in one sequence per worker (the CPU executor) or
 * one per attention-DP rank (TensorRT-LLM: a {@code KVCacheEventManager} per rank); an event id one past its
 * rank's last or its worker's last is in sequence under either rule, and a jump past both counts the ids skipped
 * (a worker's event buffer overflowed between two polls, or an answer was lost). An id at or below its rank's last
 * is a worker that restarted: its sequences start again. Not thread-safe: its owner locks.
 */
final class KvIngestCounts {
  /** Per worker: the last id of each rank, then (last slot) the last id of the worker. */
  private final Map<String, long[]> lastIds = new HashMap<>();
  private long applied;
  private long batches;
  private long dropped;
  private long applyNanos;

  void record(String workerId, List<KvEvent> events, long nanos) {
    batches++;
    applied += events.size();
    applyNanos += nanos;
    long[] last = lastIds.get(workerId);
    for (KvEvent e : events) {
      int rank = Math.max(0, e.rank());
      if (last == null || rank + 1 >= last.length) {
        int n = last == null ? 0 : last.length - 1;
        long[] grown = new long[rank + 2];
        Arrays.fill(grown, -1);
        if (last != null) {
          System.arraycopy(last, 0, grown, 0, n);
          grown[grown.length - 1] = last[n];
        }
        last = grown;
        lastIds.put(workerId, last);
      }
      int workerSlot = last.length - 1;
      long id = e.eventId();
      if (last[rank] >= 0 && id <= last[rank]) {
        Arrays.fill(last, -1);  // restarted
      } else if (last[rank] >= 0) {
        long skipped = id - Math.max(last[rank], last[workerSlot]) - 1;
        if (skipped > 0) {
          dropped += skipped;
        }
      }
      last[rank] = id;
      last[workerSlot] = Math.max(last[workerSlot], id);
    }
  }

  /** Forgets a worker's sequences (it left; a worker of that id starts afresh). */
  void forget(String workerId) {
    lastIds.remove(workerId);
  }

  RouterStats.KvIngest snapshot() {
    return new RouterStats.KvIngest(applied, batches, dropped, applyNanos);
  }
}
