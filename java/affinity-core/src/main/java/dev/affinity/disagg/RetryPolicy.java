package dev.affinity.disagg;

import dev.affinity.worker.WorkerFailure;
import java.time.Duration;

/**
 * The retry and resume policy: what a request does when a leg of its current attempt failed, decided from plain
 * values. Before the client has a byte, the request is retried from the start on other workers when the failure
 * allows it (connection errors, 5xx, a stalled worker; never 4xx; at most {@code max_retries} times), else the client
 * hears why. A client stream cut after its first byte is continued on other workers ({@link StreamResume}: a new
 * attempt whose prompt is the original prompt followed by the tokens the client has, counted as a retry), ended
 * cleanly when the client already has the whole answer, or ended with an error event.
 */
final class RetryPolicy {
  /** The first back-off before a retry on the worker that just failed (the fleet's only live one). */
  static final Duration FIRST_BACKOFF = Duration.ofMillis(100);

  private RetryPolicy() {}

  static Step decide(FailureView f) {
    WorkerFailure failure = f.failure();
    boolean afterBytes = failure.afterFirstByte() || f.streamStarted();
    boolean retriesLeft = f.retries() < f.maxRetries();
    if (!afterBytes) {
      return failure.retryable() && retriesLeft ? new Step.Retry(null) : new Step.Fail(status(failure), message(f));
    }
    if (!f.streamed() || !failure.resumable() || !retriesLeft) {
      return new Step.EndCutStream(null);
    }
    if (f.tokenizing()) {
      return Step.WAIT;
    }
    StreamResume.Plan plan = f.plan();
    if (plan == null) {
      return Step.PLAN_RESUME;
    }
    return switch (plan.kind()) {
      case FINISHED -> Step.END_STREAM;
      case CONTINUE -> new Step.Retry(plan);
      case NEEDS_TOKENS -> new Step.Tokenize(plan.text());
      case IMPOSSIBLE -> new Step.EndCutStream(plan.reason());
    };
  }

  /**
   * The back-off before the {@code retries}-th retry goes back to the worker that failed, the fleet's only live one,
   * after a transient failure (a stall, a 5xx, a reset): doubling from {@link #FIRST_BACKOFF}, at most a tenth of an
   * attempt's {@code legTimeout} (its share of the request's budget), so the attempt keeps its time and the request's
   * own timeout still ends the request.
   */
  static Duration backoff(int retries, Duration legTimeout) {
    Duration backoff = FIRST_BACKOFF.multipliedBy(1L << Math.min(Math.max(retries - 1, 0), 10));
    Duration cap = LegInputs.share(legTimeout, 10);
    return backoff.compareTo(cap) > 0 ? cap : backoff;
  }

  /** The client's status for a failure that ends the request before its first byte. */
  static int status(WorkerFailure failure) {
    return switch (failure.kind()) {
      case CLIENT_ERROR -> failure.status() >= 400 && failure.status() < 500 ? failure.status() : 400;
      case TIMEOUT -> 504;
      case CANCELLED -> 499;
      default -> 502;
    };
  }

  private static String message(FailureView f) {
    int retries = f.retries();
    return f.fleetName() + " worker " + f.selection().worker().id() + ": " + f.failure().message()
        + (retries > 0 ? " (after " + retries + (retries == 1 ? " retry)" : " retries)") : "");
  }
}
