package dev.affinity.routing;

import dev.affinity.worker.Worker;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A router's decision for one request leg: the worker, the attention-DP rank when the router chose
 * one (else -1), and what it knew (matched blocks, reason). Must be released exactly once with its
 * {@link Outcome}; a second release is a logged no-op, and a selection never released expires after
 * the router's TTL and is counted. Removing its worker from the router releases it at once (as
 * cancelled); the owner's release afterwards returns false without counting a double release.
 */
public final class Selection {
  private final long id;
  private final RoutingRequest request;
  private final Candidate candidate;
  private final int matchedBlocks;
  private final int matchedTokens;
  private final DecisionReason reason;
  private final long deadlineNanos;
  private final AbstractRouter router;
  private final AtomicBoolean released = new AtomicBoolean();
  /** Released by the router because its worker was removed: the owner's release is then a quiet no-op. */
  private volatile boolean detached;

  Selection(long id, RoutingRequest request, Candidate candidate, int matchedBlocks, int matchedTokens,
      DecisionReason reason, long deadlineNanos, AbstractRouter router) {
    this.id = id;
    this.request = request;
    this.candidate = candidate;
    this.matchedBlocks = matchedBlocks;
    this.matchedTokens = matchedTokens;
    this.reason = reason;
    this.deadlineNanos = deadlineNanos;
    this.router = router;
  }

  public long id() {
    return id;
  }

  public RoutingRequest request() {
    return request;
  }

  public Worker worker() {
    return candidate.worker();
  }

  /** The chosen attention-DP rank (the hint for the worker), or -1 when the worker picks. */
  public int rank() {
    return candidate.rank();
  }

  public Candidate candidate() {
    return candidate;
  }

  /** Prompt blocks the router expected the worker to hold. */
  public int matchedBlocks() {
    return matchedBlocks;
  }

  /** The same in tokens (expected prefix reuse). */
  public int matchedTokens() {
    return matchedTokens;
  }

  public DecisionReason reason() {
    return reason;
  }

  long deadlineNanos() {
    return deadlineNanos;
  }

  public boolean isReleased() {
    return released.get();
  }

  /**
   * Releases the selection; returns false (and logs) when it was already released or expired.
   */
  public boolean release(Outcome outcome) {
    if (!released.compareAndSet(false, true)) {
      if (!detached) {
        router.noteDoubleRelease(this, outcome);
      }
      return false;
    }
    router.release(this, outcome);
    return true;
  }

  /** Called by the router when the worker is removed: releases as cancelled, before the owner does. */
  boolean detach() {
    if (!released.compareAndSet(false, true)) {
      return false;
    }
    detached = true;
    router.release(this, Outcome.CANCELLED);
    return true;
  }

  /** Called by the router's expiry sweep. */
  boolean expire() {
    if (!released.compareAndSet(false, true)) {
      return false;
    }
    router.release(this, Outcome.EXPIRED);
    return true;
  }

  @Override
  public String toString() {
    return "Selection[" + id + " -> " + candidate + ", " + reason.label() + ", matched=" + matchedBlocks + "]";
  }
}
