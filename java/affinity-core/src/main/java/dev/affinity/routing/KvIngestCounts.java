package dev.affinity.routing;

import dev.affinity.kv.KvEventApplier;

/**
 * What a router's KV-event ingest saw: events and batches applied, the time spent applying them, and what the
 * events' ids said ({@link dev.affinity.kv.KvEventSequences}): gaps that cleared a location, with the events they
 * skipped (a lower bound of the events never seen), and restarts. Not thread-safe: its owner locks.
 */
final class KvIngestCounts {
  private long applied;
  private long batches;
  private long dropped;
  private long gaps;
  private long restarts;
  private long applyNanos;

  void record(int events, KvEventApplier.Ingest ingest, long nanos) {
    batches++;
    applied += events;
    applyNanos += nanos;
    dropped += ingest.skipped();
    gaps += ingest.gaps();
    restarts += ingest.restarts();
  }

  RouterStats.KvIngest snapshot() {
    return new RouterStats.KvIngest(applied, batches, dropped, applyNanos, gaps, restarts);
  }
}
