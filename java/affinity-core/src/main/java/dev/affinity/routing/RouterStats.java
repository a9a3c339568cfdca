package dev.affinity.routing;

import java.util.Map;

/**
 * Counters of one router.
 *
 * @param kvEvents what its KV-event ingest applied, saw missing and spent
 * @param unavailable requests it found no worker for, by reason ({@link NoWorkerAvailableException})
 */
public record RouterStats(
    String type,
    int workers,
    long outstandingSelections,
    long expiredSelections,
    long doubleReleases,
    Map<DecisionReason, Long> decisions,
    KvIngest kvEvents,
    Map<NoWorkerAvailableException.Reason, Long> unavailable) {
  public RouterStats {
    decisions = Map.copyOf(decisions);
    unavailable = Map.copyOf(unavailable);
  }

  /** Counters as before, no KV events seen, no request refused. */
  public RouterStats(String type, int workers, long outstandingSelections, long expiredSelections, long doubleReleases,
      Map<DecisionReason, Long> decisions) {
    this(type, workers, outstandingSelections, expiredSelections, doubleReleases, decisions, KvIngest.NONE, Map.of());
  }

  /**
   * The KV events a router ingested since it started: {@code applied} events in {@code batches} batches, taking
   * {@code applyNanos} in all to apply to its prefix index; {@code dropped}, a lower bound of the events it never
   * saw, from the gaps in the workers' per-rank event ids; {@code gaps}, the locations cleared after such a gap, and
   * {@code restarts}, those cleared because a rank's ids started over ({@link dev.affinity.kv.KvEventSequences}).
   */
  public record KvIngest(long applied, long batches, long dropped, long applyNanos, long gaps, long restarts) {
    public static final KvIngest NONE = new KvIngest(0, 0, 0, 0, 0, 0);
  }
}
