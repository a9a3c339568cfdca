package dev.affinity.routing;

import java.util.Map;

/** Counters of one router. */
public record RouterStats(
    String type,
    int workers,
    long outstandingSelections,
    long expiredSelections,
    long doubleReleases,
    Map<DecisionReason, Long> decisions) {
  public RouterStats {
    decisions = Map.copyOf(decisions);
  }
}
