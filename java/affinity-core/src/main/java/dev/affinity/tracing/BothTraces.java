package dev.affinity.tracing;

import dev.affinity.worker.TraceContext;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerReport;

/**
 * Two traces of one request hearing the same events, in order: the first's trace context is what the legs hand on
 * (the second's when the first has none). Built by {@link RequestTracer#both}.
 */
record BothTraces(RequestTrace first, RequestTrace second) implements RequestTrace {
  @Override
  public Routing routing(Fleet fleet) {
    Routing a = first.routing(fleet);
    Routing b = second.routing(fleet);
    if (b == Routing.NONE) {
      return a;
    }
    if (a == Routing.NONE) {
      return b;
    }
    return new Routing() {
      @Override
      public void selected(Selection selection) {
        a.selected(selection);
        b.selected(selection);
      }

      @Override
      public void noWorker(String message) {
        a.noWorker(message);
        b.noWorker(message);
      }
    };
  }

  @Override
  public LegTrace legSent(Fleet fleet, long attempt, Selection selection) {
    LegTrace a = first.legSent(fleet, attempt, selection);
    LegTrace b = second.legSent(fleet, attempt, selection);
    if (b == LegTrace.NONE) {
      return a;
    }
    if (a == LegTrace.NONE) {
      return b;
    }
    return new LegTrace() {
      @Override
      public TraceContext context() {
        TraceContext c = a.context();
        return c != null ? c : b.context();
      }

      @Override
      public void chunk() {
        a.chunk();
        b.chunk();
      }

      @Override
      public void completed(WorkerReport report) {
        a.completed(report);
        b.completed(report);
      }

      @Override
      public void failed(WorkerFailure failure) {
        a.failed(failure);
        b.failed(failure);
      }
    };
  }

  @Override
  public void retried(int retries, Fleet fleet, String workerId, WorkerFailure failure) {
    first.retried(retries, fleet, workerId, failure);
    second.retried(retries, fleet, workerId, failure);
  }

  @Override
  public void resumed(int generatedTokens) {
    first.resumed(generatedTokens);
    second.resumed(generatedTokens);
  }

  @Override
  public void streamStarted(RouteInfo route) {
    first.streamStarted(route);
    second.streamStarted(route);
  }

  @Override
  public void ended(int status, String error, RouteInfo route) {
    first.ended(status, error, route);
    second.ended(status, error, route);
  }
}
