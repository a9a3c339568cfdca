package dev.affinity.routing;

/** The two fleets of a disaggregated deployment. */
public enum Fleet {
  CONTEXT,
  GENERATION
}
