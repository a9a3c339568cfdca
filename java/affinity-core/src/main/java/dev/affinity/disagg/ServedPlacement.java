package dev.affinity.disagg;

import dev.affinity.frontend.RouteInfo.Placement;
import dev.affinity.routing.Selection;
import dev.affinity.worker.WorkerReport;

/** Where a completed leg ran, as the route records it: the worker, and the rank the executor served on. */
final class ServedPlacement {
  private ServedPlacement() {}

  /**
   * The context leg's: the rank the executor reports, else the router's; the rank's source unless the executor
   * reported it ("router" when the worker could not say); the tokens it reused.
   */
  static Placement context(Selection s, WorkerReport report) {
    return new Placement(s.worker().id(), servedRank(report, s), report.reusedTokens(),
        report.rank() >= 0 ? report.rankSource() : s.rank() >= 0 ? "router" : null);
  }

  /** The generation leg's: the rank the executor reports, else the router's. */
  static Placement generation(Selection s, WorkerReport report) {
    return new Placement(s.worker().id(), servedRank(report, s), -1, report.rank() >= 0 ? report.rankSource() : null);
  }

  private static int servedRank(WorkerReport report, Selection sel) {
    return report.rank() >= 0 ? report.rank() : sel.rank();
  }
}
