package dev.affinity.session;

import dev.affinity.frontend.AdmittedRequest;
import dev.affinity.frontend.ClientSink;
import dev.affinity.frontend.CompletionHandler;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Session lifecycle around a handler: every request with a conversation id marks its session active; one whose
 * session-final header ({@code affinity.session_final_header}) is {@code true} (case-insensitive) ends its
 * session once its answer has been delivered (a response, the end of a stream, or an error), so that the last
 * turn itself is still routed to the session's pins. Requests without an id pass through untouched.
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

  /** A sink that runs {@code end} once, after the answer's last call. */
  private static final class EndingSink implements ClientSink {
    private final ClientSink sink;
    private final Runnable end;
    private final AtomicBoolean done = new AtomicBoolean();

    EndingSink(ClientSink sink, Runnable end) {
      this.sink = sink;
      this.end = end;
    }

    private void ended() {
      if (done.compareAndSet(false, true)) {
        end.run();
      }
    }

    @Override
    public void respond(OpenAiResponse response, RouteInfo route) {
      try {
        sink.respond(response, route);
      } finally {
        ended();
      }
    }

    @Override
    public void streamStart(RouteInfo route) {
      sink.streamStart(route);
    }

    @Override
    public void streamChunk(OpenAiStreamChunk chunk) {
      sink.streamChunk(chunk);
    }

    @Override
    public void streamEncoded(EncodedChunk chunk) {
      sink.streamEncoded(chunk);
    }

    @Override
    public void streamEnd(RouteInfo route) {
      try {
        sink.streamEnd(route);
      } finally {
        ended();
      }
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      try {
        sink.fail(status, error, route);
      } finally {
        ended();
      }
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      try {
        sink.abort(reason, route);
      } finally {
        ended();
      }
    }

    @Override
    public void onDisconnect(Runnable callback) {
      sink.onDisconnect(callback);
    }
  }
}
