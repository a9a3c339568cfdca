package dev.affinity.worker;

import java.util.Objects;

/**
 * Why a worker call failed.
 *
 * @param status the HTTP status the worker answered with, or 0
 * @param afterFirstByte whether part of a streamed answer had already been delivered (never retried)
 */
public record WorkerFailure(Kind kind, int status, String message, boolean afterFirstByte) {

  public enum Kind {
    /** could not connect */
    CONNECT,
    /** connection reset or closed mid-way */
    RESET,
    /** the leg's timeout passed */
    TIMEOUT,
    /** the worker answered 4xx: the request is bad, retrying elsewhere will not help */
    CLIENT_ERROR,
    /** the worker answered 5xx */
    SERVER_ERROR,
    /** the worker's answer could not be understood */
    PROTOCOL,
    /**
     * the worker answered (2xx) without what its leg requires (docs/workers.md): a context answer without
     * {@code choices[0].disaggregated_params}, an answer without a choice; the worker's fault, treated like a 5xx
     */
    INCOMPLETE_ANSWER,
    /** the executor reported an error for the request */
    WORKER_ERROR,
    /** the call was cancelled (client gone, request timeout) */
    CANCELLED
  }

  public WorkerFailure {
    Objects.requireNonNull(kind, "kind");
    message = message == null ? "" : message;
  }

  /**
   * Connection errors, 5xx, an answer without what its leg requires and a stalled worker (its leg timed out) are
   * retried on another worker; never 4xx and never after the first streamed byte.
   */
  public boolean retryable() {
    return !afterFirstByte && (kind == Kind.CONNECT || kind == Kind.RESET || kind == Kind.SERVER_ERROR
        || kind == Kind.INCOMPLETE_ANSWER || kind == Kind.TIMEOUT);
  }

  /**
   * Whether the same worker may well serve a retry: it stalled (the leg timed out), answered 5xx or reset the
   * connection. Not a refused connection (nothing listens there: the worker is down or restarting) and nothing that
   * is not {@link #retryable()}.
   */
  public boolean transientOnWorker() {
    return retryable() && kind != Kind.CONNECT;
  }

  /**
   * Whether a streamed answer this failure cut may continue on another worker: a worker that died, reset its
   * connection, answered 5xx or answered without what its leg requires, whenever it happened; never 4xx, never an
   * error the executor reported for the request, never a cancellation, and never the leg's timeout (its budget is the
   * request's: a continuation would only run into the request timeout).
   */
  public boolean resumable() {
    return kind == Kind.CONNECT || kind == Kind.RESET || kind == Kind.SERVER_ERROR || kind == Kind.INCOMPLETE_ANSWER;
  }

  @Override
  public String toString() {
    return kind + (status > 0 ? " " + status : "") + ": " + message + (afterFirstByte ? " (after the first byte)" : "");
  }
}
