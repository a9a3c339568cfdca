package dev.affinity.tracing;

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
}
