package dev.affinity.frontend;

import dev.affinity.worker.EncodedChunk;
import java.nio.charset.StandardCharsets;

/**
 * How one endpoint turns the generation worker's stream into the bytes its clients read. A frontend asks
 * its endpoint for one transformer per streamed response ({@link Factory}) and calls it in stream order:
 * {@link #open} once, {@link #chunk} for every chunk, {@link #close} at a clean end, or {@link #error}
 * when the request fails after the stream started (an aborted stream, a client gone, ends with neither). The input is the worker's chunk as JSON bytes ({@link EncodedChunk}; chunks of
 * in-process workers are serialized once to get there), so an endpoint whose clients speak the workers'
 * format passes the bytes through untouched ({@link #openAi()}), and one that speaks another format (an
 * Anthropic Messages endpoint, say) reframes them here, parsing only what it must
 * ({@link EncodedChunk#parsed()}). A transformer keeps the state of its one stream and is not shared; the
 * arrays it returns are written as they are and nobody modifies them afterwards.
 */
public interface StreamTransformer {
  byte[] NOTHING = new byte[0];

  /** Makes the transformer of one streamed response. */
  @FunctionalInterface
  interface Factory {
    StreamTransformer newStream();
  }

  /** The bytes sent right after the response head, before any chunk (OpenAI: none). */
  default byte[] open(RouteInfo route) {
    return NOTHING;
  }

  /** The bytes for one chunk: zero or more complete events (an empty array sends nothing). */
  byte[] chunk(EncodedChunk chunk);

  /** The bytes that end a complete stream (OpenAI: {@code data: [DONE]}). */
  byte[] close(RouteInfo route);

  /**
   * The bytes of an error that ends a stream after it started (the response ends after them, without
   * {@link #close}): OpenAI's, and the default, is the error body as one event, {@code data: {"error": ...}}.
   *
   * @param errorJson the error body as JSON (OpenAI's {@code {"error": {...}}})
   */
  default byte[] error(byte[] errorJson) {
    return EncodedChunk.dataEvent(errorJson, 0, errorJson.length);
  }

  /**
   * The bytes written, best effort, before a stream that broke after it started is cut (OpenAI: none, the client
   * sees a truncated stream; Anthropic: an {@code error} event). Nothing the client should not see: no reason is
   * passed in.
   */
  default byte[] broken() {
    return NOTHING;
  }

  /**
   * OpenAI's server-sent events as trtllm-serve writes them: every chunk as {@code data: <json>\n\n}
   * exactly as the worker sent it (its own bytes when it framed them that way), then
   * {@code data: [DONE]\n\n}. Stateless, so one instance serves every stream.
   */
  static StreamTransformer openAi() {
    return OpenAiSse.INSTANCE;
  }

  /** The OpenAI pass-through (see {@link #openAi()}). */
  final class OpenAiSse implements StreamTransformer {
    static final OpenAiSse INSTANCE = new OpenAiSse();
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    private OpenAiSse() {}

    @Override
    public byte[] chunk(EncodedChunk chunk) {
      return chunk.sseEvent();
    }

    @Override
    public byte[] close(RouteInfo route) {
      return DONE;
    }
  }
}
