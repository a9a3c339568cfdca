package dev.affinity.session;

/** What ending a session gives back; called once per ended or expired session, outside any registry lock. */
@FunctionalInterface
public interface SessionRelease {
  void release(String sessionId);

  /** This release, then {@code next}. */
  default SessionRelease andThen(SessionRelease next) {
    java.util.Objects.requireNonNull(next, "next");
    return id -> {
      release(id);
      next.release(id);
    };
  }
}
