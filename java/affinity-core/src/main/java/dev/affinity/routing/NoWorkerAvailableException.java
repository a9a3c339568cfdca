package dev.affinity.routing;

import java.util.Objects;

/**
 * A fleet has no worker this request may go to (HTTP 503 at the frontend), and why ({@link #reason()}): each reason has
 * its own wording in the 503 and its own count ({@code affinity_router_unavailable{reason}}).
 */
public class NoWorkerAvailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why no worker was left. */
  public enum Reason {
    /** The fleet has no worker at all (none configured, none registered yet, or all left). */
    NONE_KNOWN("none_known"),
    /** Every worker of the fleet failed its health check. */
    ALL_DEAD("all_dead"),
    /** Every live worker already failed this request (it is not retried on one twice). */
    ALL_EXCLUDED("all_excluded"),
    /** The live workers left the fleet while the request was being routed. */
    LEFT_WHILE_ROUTING("left_while_routing");

    private final String label;

    Reason(String label) {
      this.label = label;
    }

    /** The metric's tag value. */
    public String label() {
      return label;
    }
  }

  private final Reason reason;

  public NoWorkerAvailableException(Reason reason, String message) {
    super(message);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  /**
   * The exception for a fleet's state: its known workers, how many of them are dead, how many live ones this request
   * excluded.
   */
  static NoWorkerAvailableException of(Fleet fleet, int known, int dead, int excludedLive) {
    String f = fleet.name().toLowerCase();
    if (known == 0) {
      return new NoWorkerAvailableException(Reason.NONE_KNOWN, "no " + f + " worker available: the " + f
          + " fleet has no worker (none configured or registered)");
    }
    if (excludedLive == 0 && dead == known) {
      return new NoWorkerAvailableException(Reason.ALL_DEAD, "no " + f + " worker available: all " + known + " " + f
          + " workers are down (failed their health checks)");
    }
    if (dead + excludedLive >= known) {
      return new NoWorkerAvailableException(Reason.ALL_EXCLUDED, "no " + f + " worker available: every live " + f
          + " worker (" + excludedLive + " of " + known + ") already failed this request");
    }
    return new NoWorkerAvailableException(Reason.LEFT_WHILE_ROUTING, "no " + f + " worker available: the " + f
        + " workers left the fleet while this request was routed");
  }

  public Reason reason() {
    return reason;
  }
}
