package dev.affinity.worker;

/**
 * A worker (one context or generation instance) as routing sees it. Implementations: in-process
 * native workers, trtllm-serve workers over HTTP, Affinity worker processes. Identity is the
 * {@link #id()}: routers and prefix indexes key their state by it.
 */
public interface Worker {
  /** Stable id: "host:port" for remote workers, a name for in-process ones. */
  String id();

  WorkerInfo info();

  /** False once the worker is known to be dead; routers then skip it and re-pin its keys. */
  boolean isAlive();
}
