package dev.affinity.server.cluster;

import dev.affinity.routing.Fleet;
import java.util.Locale;

/** Upstream's {@code ServerRole} values a worker registers with (an integer in the stored JSON). */
public enum ServerRole {
  CONTEXT(0),
  GENERATION(1);

  private final int value;

  ServerRole(int value) {
    this.value = value;
  }

  /** The integer upstream stores ({@code ServerRole.CONTEXT = 0}, {@code GENERATION = 1}). */
  public int value() {
    return value;
  }

  public Fleet fleet() {
    return this == CONTEXT ? Fleet.CONTEXT : Fleet.GENERATION;
  }

  /** The role of a stored integer; other roles (encoders, ...) are not routed by a disaggregated frontend. */
  public static ServerRole of(int value) {
    for (ServerRole r : values()) {
      if (r.value == value) {
        return r;
      }
    }
    throw new IllegalArgumentException("role " + value + " is neither context (0) nor generation (1)");
  }

  /** {@code context} or {@code generation}, any case, as upstream's {@code --server_role}. */
  public static ServerRole parse(String name) {
    return switch (name.strip().toLowerCase(Locale.ROOT)) {
      case "context" -> CONTEXT;
      case "generation" -> GENERATION;
      default -> throw new IllegalArgumentException("server role must be context or generation, not \"" + name + "\"");
    };
  }
}
