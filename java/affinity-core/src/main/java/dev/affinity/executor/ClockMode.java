package dev.affinity.executor;

/** How an executor's clock advances. */
public enum ClockMode {
  /** A driver thread runs iterations and waits their modelled duration (optionally scaled). */
  REAL,
  /** The caller advances the clock with {@link Executor#advanceTo(long)}; nothing runs on its own. */
  VIRTUAL;

  public static ClockMode fromCode(int code) {
    return code == 1 ? VIRTUAL : REAL;
  }
}
