package dev.affinity.executor;

/**
 * What kind of error ended a request ({@link ExecutorResponse#errorKind()}); {@link #NONE} unless it
 * ended with {@link FinishReason#ERROR} or {@link FinishReason#CANCELLED}. The code is the native
 * facade's {@code affinity::ErrorKind}. A caller decides what an error means from its kind, never
 * from its message, which is for people.
 */
public enum ExecutorErrorKind {
  /** Not an error. */
  NONE,
  /**
   * The request itself is invalid (no or negative tokens, {@code max_new_tokens <= 0}, a rank hint
   * out of range, a generation-only request without context phase params), or the model refused
   * its arguments.
   */
  BAD_REQUEST,
  /**
   * Generation-only: the context phase params name no context this executor can take over (expired,
   * cancelled, already pulled, held outside its hand-off domain, or state that does not match).
   */
  CONTEXT_NOT_FOUND,
  /**
   * The executor cannot take the request: it can never fit (prompt plus new tokens beyond a rank's
   * KV cache, a prompt over {@code max_num_tokens} without chunked prefill), or too many requests
   * are in flight.
   */
  CAPACITY,
  /** Cancelled, or the executor shut down. */
  CANCELLED,
  /** The backend failed: an exception in the model's runtime, or its host stopped or lost the request. */
  BACKEND_FAILURE;

  public int code() {
    return ordinal();
  }

  public static ExecutorErrorKind fromCode(int code) {
    ExecutorErrorKind[] all = values();
    if (code < 0 || code >= all.length) {
      throw new IllegalArgumentException("unknown executor error kind code " + code);
    }
    return all[code];
  }
}
