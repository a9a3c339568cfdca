package dev.affinity.tracing;

import dev.affinity.worker.TraceContext;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;

/**
 * What orchestration tells the trace of one request: each routing decision, each leg sent and how it ended, each
 * retry, and the request's ending. Called under the request's lock (the ending may come from the client's
 * connection); an implementation must not block. Every method has a no-op default.
 */
public interface RequestTrace {
  /** Routing of one leg in progress. */
  interface Routing {
    Routing NONE = new Routing() { };

    /** The router chose this worker and rank. */
    default void selected(Selection selection) {}

    /** No worker was available: the request fails with 503. */
    default void noWorker(String message) {}
  }

  /** One leg sent to one worker. */
  interface LegTrace {
    LegTrace NONE = new LegTrace() { };

    /** What the worker hears as its trace context (W3C headers on HTTP legs), or null for none. */
    default TraceContext context() {
      return null;
    }

    /** A streamed chunk of this leg arrived (also when the request had moved on). */
    default void chunk() {}

    /** The worker completed the leg. */
    default void completed(WorkerReport report) {}

    /** The leg failed or was cancelled (also when the request had moved on). */
    default void failed(WorkerFailure failure) {}
  }

  /** Tracing off, with nothing to hand on. */
  RequestTrace NONE = new RequestTrace() { };

  /** Tracing off; the legs hand on {@code context} (the client's) unchanged. Null: {@link #NONE}. */
  static RequestTrace propagating(TraceContext context) {
    if (context == null) {
      return NONE;
    }
    LegTrace leg = new LegTrace() {
      @Override
      public TraceContext context() {
        return context;
      }
    };
    return new RequestTrace() {
      @Override
      public LegTrace legSent(Fleet fleet, long attempt, Selection selection) {
        return leg;
      }
    };
  }

  /** The router of {@code fleet} is about to choose a worker. */
  default Routing routing(Fleet fleet) {
    return Routing.NONE;
  }

  /** A leg of attempt {@code attempt} (its disaggregated request id) goes to {@code selection}'s worker. */
  default LegTrace legSent(Fleet fleet, long attempt, Selection selection) {
    return LegTrace.NONE;
  }

  /**
   * The request is tried again from the start ({@code retries} so far) after {@code fleet}'s worker failed.
   */
  default void retried(int retries, Fleet fleet, String workerId, WorkerFailure failure) {}

  /**
   * A stream its worker cut is continued on another worker after {@code generatedTokens} streamed tokens (counted
   * as a retry too, through {@link #retried}).
   */
  default void resumed(int generatedTokens) {}

  /** The client's stream started (the first chunk is on its way). */
  default void streamStarted(RouteInfo route) {}

  /**
   * The request ended: {@code status} 200 for an answer (whole or streamed), else the error's; {@code error} is
   * null on success. Called once; the client going away ends it with 499.
   */
  default void ended(int status, String error, RouteInfo route) {}
}
