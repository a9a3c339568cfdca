package dev.affinity.frontend;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import java.util.Objects;

/**
 * A client sink that passes every call on to another one: the base of sinks that watch a request's answer
 * (tracing, session ends) and override only the calls they watch.
 */
public abstract class ForwardingClientSink implements ClientSink {
  protected final ClientSink delegate;

  protected ForwardingClientSink(ClientSink delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  @Override
  public void respondEncoded(EncodedResponse response, RouteInfo route) {
    delegate.respondEncoded(response, route);
  }

  @Override
  public void streamStart(RouteInfo route) {
    delegate.streamStart(route);
  }

  @Override
  public void streamEncoded(EncodedChunk chunk) {
    delegate.streamEncoded(chunk);
  }

  @Override
  public void streamEnd(RouteInfo route) {
    delegate.streamEnd(route);
  }

  @Override
  public void fail(int status, ErrorResponse error, RouteInfo route) {
    delegate.fail(status, error, route);
  }

  @Override
  public void abort(String reason, RouteInfo route) {
    delegate.abort(reason, route);
  }

  @Override
  public void onDisconnect(Runnable callback) {
    delegate.onDisconnect(callback);
  }
}
