package dev.affinity.tracing;

import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.ForwardingClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.worker.EncodedResponse;
import java.util.Objects;

/** A client sink that tells a request's trace how the request ended, then passes everything on unchanged. */
public final class TracedSink extends ForwardingClientSink {
  private final RequestTrace trace;

  private TracedSink(ClientSink sink, RequestTrace trace) {
    super(sink);
    this.trace = trace;
  }

  /** {@code sink} itself when there is nothing to trace. */
  public static ClientSink of(ClientSink sink, RequestTrace trace) {
    Objects.requireNonNull(sink, "sink");
    return trace == null || trace == RequestTrace.NONE ? sink : new TracedSink(sink, trace);
  }

  @Override
  public void respondEncoded(EncodedResponse response, RouteInfo route) {
    trace.ended(200, null, route);
    delegate.respondEncoded(response, route);
  }

  @Override
  public void streamStart(RouteInfo route) {
    trace.streamStarted(route);
    delegate.streamStart(route);
  }

  @Override
  public void streamEnd(RouteInfo route) {
    trace.ended(200, null, route);
    delegate.streamEnd(route);
  }

  @Override
  public void fail(int status, ErrorResponse error, RouteInfo route) {
    trace.ended(status, error == null || error.error() == null ? "error " + status : error.error().message(), route);
    delegate.fail(status, error, route);
  }

  @Override
  public void abort(String reason, RouteInfo route) {
    trace.ended(499, reason == null ? "aborted" : reason, route);
    delegate.abort(reason, route);
  }

  @Override
  public void onDisconnect(Runnable callback) {
    delegate.onDisconnect(() -> {
      try {
        callback.run();
      } finally {
        trace.ended(499, "client disconnected", null);
      }
    });
  }
}
