package dev.affinity.worker;

import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;

/**
 * Receives the result of one {@link Worker#send} call. Calls are serialized per request; streamed chunks
 * come in order through {@link #onChunk} or {@link #onEncodedChunk}. Exactly one of {@link #onComplete} or
 * {@link #onError} ends every call (also after {@link WorkerCall#cancel()}, which ends it with a
 * {@code CANCELLED} failure unless it already ended).
 */
public interface WorkerListener {
  /** A streamed chunk, in order (streaming requests only). */
  default void onChunk(OpenAiStreamChunk chunk) {}

  /**
   * A streamed chunk as the JSON bytes the worker sent (workers over HTTP deliver chunks this way; in-process
   * workers call {@link #onChunk}). A listener that relays bytes overrides this; by default the chunk is
   * parsed and handed to {@link #onChunk}.
   */
  default void onEncodedChunk(EncodedChunk chunk) {
    onChunk(chunk.parsed());
  }

  /** The whole response of a non-streaming request, just before {@link #onComplete}. */
  default void onResponse(OpenAiResponse response) {}

  /**
   * The whole response of a non-streaming request as a worker over HTTP sent it, scanned rather than parsed (in-process
   * workers call {@link #onResponse}); just before {@link #onComplete}. A listener that relays bytes overrides this;
   * by default the answer is parsed and handed to {@link #onResponse}.
   */
  default void onEncodedResponse(EncodedResponse response) {
    onResponse(response.parsed());
  }

  /** The call succeeded; {@code report} says what the worker actually did. */
  void onComplete(WorkerReport report);

  /** The call failed; {@link WorkerFailure#retryable()} tells whether another worker may be tried. */
  void onError(WorkerFailure failure);
}
