package dev.affinity.nativebridge;

import dev.affinity.executor.ContextPhaseParams;
import dev.affinity.nativebridge.peer.HandoffDomainPeer;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The in-process context hand-off of one fleet: one embedded deployment, one simulated fleet. Create
 * one per fleet, pass it to {@link NativeExecutor#create(String, String, HandoffDomain)} and to every
 * {@code NativeWorker} of the fleet, and close it after them. Two domains in one JVM never see each
 * other's contexts. It has two halves:
 *
 * <ul>
 *   <li>native ({@code affinity::HandoffDomain}, {@code native/include/affinity/handoff.h}): executors
 *       created in the domain take over each other's held contexts, so a generation-only request
 *       frees the context's KV at once on the executor that holds it. A context held by an executor
 *       of this process outside the domain is not found (error kind
 *       {@link dev.affinity.executor.ExecutorErrorKind#CONTEXT_NOT_FOUND}); one from another process
 *       is trusted. The native object is allocated when the first executor joins;
 *   <li>Java: the generation-first rendezvous. A generation leg that arrives before its context waits
 *       under its disaggregated request id until the context leg of that id finishes on a worker of
 *       the same domain and publishes its context phase params (what TensorRT-LLM's cache
 *       transceiver does across processes).
 * </ul>
 *
 * <p>Closing refuses new executors and fails the generation legs still waiting (their futures
 * complete exceptionally). Executors created in the domain keep its native state alive: they go on
 * handing off among themselves until they are closed, so the order of closing is free.
 */
public final class HandoffDomain extends NativeResource {
  private final ConcurrentHashMap<Long, CompletableFuture<ContextPhaseParams>> contexts = new ConcurrentHashMap<>();
  private HandoffDomainPeer peer;  // guarded by this; null until the first executor joins

  /** A domain; nothing native is allocated until an executor is created in it. */
  public HandoffDomain() {}

  /** Runs fn with the native domain, which cannot be freed meanwhile (NativeExecutor's factory). */
  <T> T withPeer(Function<HandoffDomainPeer, T> fn) {
    return call(() -> fn.apply(peer()));
  }

  private synchronized HandoffDomainPeer peer() {
    if (peer == null) {
      NativeRequirement.system().require("an in-process hand-off domain");
      peer = new HandoffDomainPeer();
    }
    return peer;
  }

  /** The executors of this domain alive now. */
  public int executorCount() {
    return call(() -> {
      synchronized (this) {
        return peer == null ? 0 : peer.executorCount();
      }
    });
  }

  /**
   * The context phase params of the context leg of a disaggregated request, once a worker of this
   * domain publishes them. Fails (exceptionally) when the domain closes first.
   */
  public CompletableFuture<ContextPhaseParams> awaitContext(long disaggRequestId) {
    CompletableFuture<ContextPhaseParams> f = contexts.computeIfAbsent(disaggRequestId, k -> new CompletableFuture<>());
    if (isClosed()) {
      f.completeExceptionally(new CancellationException("the hand-off domain is closed"));
    }
    return f;
  }

  /** Publishes a finished context leg; the generation leg waiting for it (now or later) proceeds. */
  public void publishContext(long disaggRequestId, ContextPhaseParams params) {
    if (!isClosed()) {
      contexts.computeIfAbsent(disaggRequestId, k -> new CompletableFuture<>()).complete(params);
    }
  }

  /** Forgets a request id (its generation leg is gone or has taken the params). */
  public void forgetContext(long disaggRequestId) {
    contexts.remove(disaggRequestId);
  }

  @Override
  protected String describeResource() {
    return "hand-off domain";
  }

  @Override
  protected void interrupt() {
    CancellationException closed = new CancellationException("the hand-off domain is closed");
    contexts.values().forEach(f -> f.completeExceptionally(closed));
    contexts.clear();
  }

  @Override
  protected synchronized void free() {
    if (peer != null) {
      peer.close();  // the domain's executors keep its native state
      peer = null;
    }
  }
}
