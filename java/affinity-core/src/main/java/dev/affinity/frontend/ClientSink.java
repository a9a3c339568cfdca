package dev.affinity.frontend;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;

/**
 * Where orchestration delivers one client's answer: the HTTP frontend (Netty) or the fleet
 * simulator. Exactly one of {@link #respond}, {@link #fail} or a stream ({@link #streamStart}, chunks,
 * then {@link #streamEnd} or {@link #abort}) happens per request. Implementations must be safe to
 * call from any thread, one call at a time per request.
 */
public interface ClientSink {
  /** A whole (non-streamed) response, HTTP 200. */
  void respond(OpenAiResponse response, RouteInfo route);

  /**
   * A whole (non-streamed) response in its client's form ({@link EncodedResponse#forClient}), HTTP 200: a sink that
   * writes the OpenAI answer as it is writes {@link EncodedResponse#json} (for a worker's answer over HTTP, the bytes
   * copied from it, no records built); by default it is parsed and handed to {@link #respond}.
   */
  default void respondEncoded(EncodedResponse response, RouteInfo route) {
    respond(response.parsed(), route);
  }

  /** Opens the SSE stream (HTTP 200, text/event-stream), before the first chunk. */
  void streamStart(RouteInfo route);

  /** One {@code data: {...}} event. */
  void streamChunk(OpenAiStreamChunk chunk);

  /**
   * One chunk as the JSON bytes a worker sent, relayed without re-encoding where the sink writes bytes (the
   * HTTP frontend, through its endpoint's {@link StreamTransformer}); by default parsed and handed to
   * {@link #streamChunk}. A sink that writes to a slow client may pause {@link EncodedChunk#source()} until
   * the client has taken what is buffered.
   */
  default void streamEncoded(EncodedChunk chunk) {
    streamChunk(chunk.parsed());
  }

  /** {@code data: [DONE]} and the end of the response. */
  void streamEnd(RouteInfo route);

  /**
   * An error: before anything was sent, the status and an OpenAI-style JSON body; after {@link #streamStart},
   * the body as the stream's last event (the endpoint's {@link StreamTransformer#error}) and the end of the
   * response, without {@code [DONE]}.
   */
  void fail(int status, ErrorResponse error, RouteInfo route);

  /** Ends the exchange without an answer: the connection is closed (after the stream started: without {@code [DONE]}). */
  void abort(String reason, RouteInfo route);

  /** Runs {@code callback} once if the client goes away before the answer is complete. */
  void onDisconnect(Runnable callback);
}
