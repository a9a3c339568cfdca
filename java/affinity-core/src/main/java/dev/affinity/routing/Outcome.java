package dev.affinity.routing;

/** How a routed request ended; every selection is released with one. */
public enum Outcome {
  SUCCESS,
  FAILURE,
  CANCELLED,
  /** Never released: the selection's TTL ran out (counted in {@link RouterStats#expiredSelections()}). */
  EXPIRED
}
