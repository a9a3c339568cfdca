package dev.affinity.session;

import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.frontend.ForwardingClientSink;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.worker.EncodedResponse;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Session lifecycle around a handler: every request with a conversation id marks its session active; one whose
 * session-final header ({@code affinity.session_final_header}) is {@code true} (case-insensitive) ends its
 * session as its answer is delivered (a response, the end of a stream, or an error; released just before the
 * client gets it), so that the last turn itself is still routed to the session's pins. Requests without an id pass through untouched.
 */
public final class SessionLifecycleHandler implements CompletionHandler {
  private final CompletionHandler delegate;
  private final SessionRegistry sessions;
  private final String finalHeader;

  /** @param finalHeader the session-final header's name, lower case */
  public SessionLifecycleHandler(CompletionHandler delegate, SessionRegistry sessions, String finalHeader) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.sessions = Objects.requireNonNull(sessions, "sessions");
    this.finalHeader = Objects.requireNonNull(finalHeader, "finalHeader");
  }

  @Override
  public void handle(AdmittedRequest request, ClientSink sink) {
    String id = request.resolution().conversationId();
    if (id == null) {
      delegate.handle(request, sink);
      return;
    }
    sessions.touch(id);
    String fin = request.headers().first(finalHeader);
    if (fin == null || !fin.strip().equalsIgnoreCase("true")) {
      delegate.handle(request, sink);
      return;
    }
    delegate.handle(request, new EndingSink(sink, () -> sessions.end(id)));
  }

  /**
   * A sink that runs {@code end} once, with the answer's last call and just before it is delivered: the request
   * has been routed and served by then, and a client that has its answer finds the session released.
   */
  private static final class EndingSink extends ForwardingClientSink {
    private final Runnable end;
    private final AtomicBoolean done = new AtomicBoolean();

    EndingSink(ClientSink sink, Runnable end) {
      super(sink);
      this.end = end;
    }

    private void ended() {
      if (done.compareAndSet(false, true)) {
        end.run();
      }
    }

    @Override
    public void respondEncoded(EncodedResponse response, RouteInfo route) {
      try {
        ended();
      } finally {
        delegate.respondEncoded(response, route);
      }
    }

    @Override
    public void streamEnd(RouteInfo route) {
      try {
        ended();
      } finally {
        delegate.streamEnd(route);
      }
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      try {
        ended();
      } finally {
        delegate.fail(status, error, route);
      }
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      try {
        ended();
      } finally {
        delegate.abort(reason, route);
      }
    }
  }
}
