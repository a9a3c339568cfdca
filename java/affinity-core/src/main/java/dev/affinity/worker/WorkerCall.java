package dev.affinity.worker;

/** A call in flight. */
@FunctionalInterface
public interface WorkerCall {
  /** Cancels the call (idempotent); the worker frees what it holds and the listener gets CANCELLED. */
  void cancel();
}
