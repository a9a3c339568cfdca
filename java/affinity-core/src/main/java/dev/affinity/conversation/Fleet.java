package dev.affinity.conversation;

/** The two fleets of a disaggregated deployment. */
public enum Fleet {
  CONTEXT,
  GENERATION
}
