package dev.affinity.tracing;

import dev.affinity.worker.TraceContext;
import dev.affinity.frontend.AdmittedRequest;

/**
 * Starts the trace of each request the disaggregated orchestration serves ({@link dev.affinity.disagg.DisaggService}).
 * The OpenTelemetry implementation lives in the server ({@code dev.affinity.server.tracing}); {@link #NONE} is
 * tracing off.
 */
@FunctionalInterface
public interface RequestTracer {
  /** The trace of one admitted request, from its first attempt to its ending. Never null. */
  RequestTrace start(AdmittedRequest request);

  /**
   * Tracing off: no spans; a request's own {@code traceparent}/{@code tracestate}, when it sent a well-formed one,
   * still goes on to its workers unchanged, so that the workers' spans join the client's trace.
   */
  RequestTracer NONE = request -> RequestTrace.propagating(TraceContext.from(request.headers()));

  /**
   * Both tracers hear every request (tracing and metrics, say): {@code first}'s trace context goes to the workers,
   * {@code second}'s only when the first has none.
   */
  static RequestTracer both(RequestTracer first, RequestTracer second) {
    return request -> {
      RequestTrace a = first.start(request);
      RequestTrace b = second.start(request);
      return b == RequestTrace.NONE ? a : a == RequestTrace.NONE ? b : new BothTraces(a, b);
    };
  }
}
