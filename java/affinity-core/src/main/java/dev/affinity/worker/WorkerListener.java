package dev.affinity.worker;

import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;

/**
 * Receives the result of one {@link Worker#send} call. Calls are serialized per request. Exactly one
 * of {@link #onComplete} or {@link #onError} ends every call (also after {@link WorkerCall#cancel()},
 * which ends it with a {@code CANCELLED} failure unless it already ended).
 */
public interface WorkerListener {
  /** A streamed chunk, in order (streaming requests only). */
  default void onChunk(OpenAiStreamChunk chunk) {}

  /** The whole response of a non-streaming request, just before {@link #onComplete}. */
  default void onResponse(OpenAiResponse response) {}

  /** The call succeeded; {@code report} says what the worker actually did. */
  void onComplete(WorkerReport report);

  /** The call failed; {@link WorkerFailure#retryable()} tells whether another worker may be tried. */
  void onError(WorkerFailure failure);
}
