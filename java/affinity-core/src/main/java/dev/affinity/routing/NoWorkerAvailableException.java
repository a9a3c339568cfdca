package dev.affinity.routing;

/** Every worker of the fleet is dead or excluded (HTTP 503 at the frontend). */
public class NoWorkerAvailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public NoWorkerAvailableException(String message) {
    super(message);
  }
}
