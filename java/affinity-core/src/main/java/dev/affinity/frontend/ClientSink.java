package dev.affinity.frontend;

import dev.affinity.protocol.ErrorResponse;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;

/**
 * Where orchestration delivers one client's answer: the HTTP frontend (Netty) or the fleet
 * simulator. Exactly one of {@link #respondEncoded}, {@link #fail} or a stream ({@link #streamStart}, chunks,
 * then {@link #streamEnd} or {@link #abort}) happens per request. The answer comes in one form whoever produced it:
 * a worker over HTTP's bytes, or an in-process worker's records ({@link EncodedResponse#parsed()},
 * {@link EncodedChunk#parsed()} read either as records; a sink that writes bytes writes a relayed answer's own). Implementations must be safe to
 * call from any thread, one call at a time per request.
 */
public interface ClientSink {
  /**
   * A whole (non-streamed) response in its client's form ({@link EncodedResponse#forClient}), HTTP 200: a sink that
   * writes the OpenAI answer as it is writes {@link EncodedResponse#json} (for a worker's answer over HTTP, the bytes
   * copied from it, no records built).
   */
  void respondEncoded(EncodedResponse response, RouteInfo route);

  /** Opens the SSE stream (HTTP 200, text/event-stream), before the first chunk. */
  void streamStart(RouteInfo route);

  /**
   * One {@code data: {...}} event: a worker's chunk relayed as its JSON bytes where the sink writes bytes (the HTTP
   * frontend, through its endpoint's {@link StreamTransformer}), an in-process worker's written from its record. A sink
   * that writes to a slow client may pause {@link EncodedChunk#source()} until the client has taken what is buffered.
   */
  void streamEncoded(EncodedChunk chunk);

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
