package dev.affinity.disagg;

import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.worker.WorkerFailure;

/**
 * What the {@link RetryPolicy} decides from: a leg of the current attempt failed, immutable.
 *
 * @param fleet the failed leg's fleet
 * @param selection where it ran
 * @param failure how it failed
 * @param retries the request's retries so far
 * @param maxRetries how many it may have
 * @param streamStarted whether the client's stream had started
 * @param streamed whether the request is streamed (a cut stream may be continued)
 * @param plan the planned continuation of a cut stream, or null before one is planned
 * @param tokenizing whether a worker is tokenizing the stream's text for the plan
 */
record FailureView(Fleet fleet, Selection selection, WorkerFailure failure, int retries, int maxRetries,
    boolean streamStarted, boolean streamed, StreamResume.Plan plan, boolean tokenizing) {

  FailureView planned(StreamResume.Plan p) {
    return new FailureView(fleet, selection, failure, retries, maxRetries, streamStarted, streamed, p, false);
  }

  FailureView awaitingTokens() {
    return new FailureView(fleet, selection, failure, retries, maxRetries, streamStarted, streamed, plan, true);
  }

  /** The fleet's name as the logs and messages say it. */
  String fleetName() {
    return fleet.name().toLowerCase();
  }
}
