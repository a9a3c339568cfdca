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
        ended();
      } finally {
        sink.respond(response, route);
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
        ended();
      } finally {
        sink.streamEnd(route);
      }
    }

    @Override
    public void fail(int status, ErrorResponse error, RouteInfo route) {
      try {
        ended();
      } finally {
        sink.fail(status, error, route);
      }
    }

    @Override
    public void abort(String reason, RouteInfo route) {
      try {
        ended();
      } finally {
        sink.abort(reason, route);
      }
    }

    @Override
    public void onDisconnect(Runnable callback) {
      sink.onDisconnect(callback);
    }
  }
}
