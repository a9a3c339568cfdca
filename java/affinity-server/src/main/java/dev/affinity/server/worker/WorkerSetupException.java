package dev.affinity.server.worker;

/**
 * A worker could not be prepared ({@code /server_info} unreachable, failing or unusable, e.g. an unknown
 * {@code kv_cache_hash_algo}); upstream's router does not add such a server.
 */
public final class WorkerSetupException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String workerId;

  public WorkerSetupException(String workerId, String message, Throwable cause) {
    super("worker " + workerId + ": " + message, cause);
    this.workerId = workerId;
  }

  public String workerId() {
    return workerId;
  }
}
