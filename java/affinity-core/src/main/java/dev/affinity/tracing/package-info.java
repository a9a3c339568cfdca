/**
 * Request tracing hooks of the disaggregated orchestration: {@link dev.affinity.tracing.RequestTracer} starts a
 * {@link dev.affinity.tracing.RequestTrace} per request, told of routing, legs, retries and the ending, and the
 * W3C {@link dev.affinity.worker.TraceContext} each worker leg carries. The OpenTelemetry implementation is the
 * server's ({@code dev.affinity.server.tracing}, docs/tracing.md); this package depends on no tracing library.
 */
package dev.affinity.tracing;
