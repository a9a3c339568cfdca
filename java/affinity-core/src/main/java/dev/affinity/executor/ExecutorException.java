package dev.affinity.executor;

/** A failure of the executor itself (bad configuration, misuse, a native error), not of a request. */
public class ExecutorException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ExecutorException(String message) {
    super(message);
  }

  public ExecutorException(String message, Throwable cause) {
    super(message, cause);
  }
}
