package dev.affinity.worker;

import dev.affinity.protocol.OpenAiStreamChunk;

/**
 * Receives the result of one {@link Worker#send} call. Calls are serialized per request; streamed chunks
 * come in order through {@link #onEncodedChunk}, a whole answer through {@link #onEncodedResponse}, in one form
 * whatever the worker: the bytes a worker over HTTP sent, or an in-process worker's records
 * ({@link EncodedChunk#of(dev.affinity.protocol.OpenAiStreamChunk)}, {@link EncodedResponse#of}). Exactly one of {@link #onComplete} or
 * {@link #onError} ends every call (also after {@link WorkerCall#cancel()}, which ends it with a
 * {@code CANCELLED} failure unless it already ended).
 */
public interface WorkerListener {
  /** A streamed chunk, in order (streaming requests only); {@link EncodedChunk#parsed()} reads it as a record. */
  default void onEncodedChunk(EncodedChunk chunk) {}

  /**
   * The whole response of a non-streaming request, just before {@link #onComplete}: a worker over HTTP's answer
   * scanned rather than parsed, an in-process worker's records; {@link EncodedResponse#parsed()} reads it as records.
   */
  default void onEncodedResponse(EncodedResponse response) {}

  /** The call succeeded; {@code report} says what the worker actually did. */
  void onComplete(WorkerReport report);

  /** The call failed; {@link WorkerFailure#retryable()} tells whether another worker may be tried. */
  void onError(WorkerFailure failure);
}
