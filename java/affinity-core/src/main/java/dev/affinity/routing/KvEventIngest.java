package dev.affinity.routing;

import dev.affinity.executor.KvEvent;
import dev.affinity.kv.KvEventApplier;
import dev.affinity.kv.PrefixIndex;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A router's KV-event intake: applies a worker's batches to the prefix index ({@link KvEventApplier}, which clears a
 * location whose event ids skip or start over), counts what it applied and saw missing ({@link KvIngestCounts}), and
 * says so at WARN the first time for each worker (debug after). Thread-safe.
 */
final class KvEventIngest {
  private static final Logger log = LoggerFactory.getLogger(AbstractRouter.class);

  private final KvEventApplier applier;
  private final KvIngestCounts counts = new KvIngestCounts();
  private final Set<String> warned = ConcurrentHashMap.newKeySet();

  KvEventIngest(PrefixIndex index, KvEventApplier.Listener listener) {
    this.applier = new KvEventApplier(index, listener);
  }

  void apply(String workerId, boolean ranksVisible, List<KvEvent> events) {
    long start = System.nanoTime();
    KvEventApplier.Ingest ingest = applier.apply(workerId, ranksVisible, events);
    long spent = System.nanoTime() - start;
    if (ingest != KvEventApplier.Ingest.CLEAN && log.isWarnEnabled()) {
      String message = "worker {}: KV event ids show {} gap(s) ({} events lost) and {} restart(s); the index forgot"
          + " what it held there (counted in affinity_kv_event_gaps_cleared / _restarts; logged once per worker)";
      if (warned.add(workerId)) {
        log.warn(message, workerId, ingest.gaps(), ingest.skipped(), ingest.restarts());
      } else {
        log.debug(message, workerId, ingest.gaps(), ingest.skipped(), ingest.restarts());
      }
    }
    synchronized (counts) {
      counts.record(events.size(), ingest, spent);
    }
  }

  /** A worker left: its event-id sequences and its warning are forgotten. */
  void forget(String workerId) {
    applier.forget(workerId);
    warned.remove(workerId);
  }

  RouterStats.KvIngest snapshot() {
    synchronized (counts) {
      return counts.snapshot();
    }
  }
}
