package dev.affinity.routing;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * How far each rank has got through the prefills a router sent it, from the rank's own count of the prompt tokens it
 * has computed ({@link dev.affinity.executor.KvCacheStats#contextTokensComputed}, cumulative; TensorRT-LLM reports
 * it per iteration as {@code inflightBatchingStats.numCtxTokens}). A router counts a context request's work at its
 * rank from the moment it routes it until it is released: counted whole, a long prefill that is nearly done looks as
 * long as when it started, and the sessions beside it move off their cached contexts to avoid a wait that is almost
 * over. Counted from the rank's word, a prefill that waits for free KV blocks makes no progress, and one whose chunks
 * ran does.
 *
 * <p>The tokens a rank computed since the last look go to the requests routed there in the order they were routed
 * (prefill is first come, first served: TensorRT-LLM's capacity scheduler admits in order and its chunking policy
 * fills an iteration's budget first come, first served), each up to its uncached tokens; what is left over was
 * computed for requests this router did not route (another frontend's) and is not counted. Not thread-safe: the
 * router calls it under its lock.
 */
final class ReportedProgress {
  /** A routed prefill: its cached prefix, its uncached tokens, and the tokens computed of them so far. */
  private static final class Prefill {
    final long id;
    final long prefix;
    final long uncached;
    long computed;

    Prefill(long id, long prefix, long uncached) {
      this.id = id;
      this.prefix = prefix;
      this.uncached = uncached;
    }
  }

  /** One rank's prefills in routing order, and its count when last seen (-1: never). */
  private static final class Rank {
    final ArrayDeque<Prefill> queue = new ArrayDeque<>();
    long lastCount = -1;
  }

  /** The prefill work of {@code n} tokens after a prefix of {@code p} (the router's work units). */
  interface WorkOf {
    double of(long p, long n);
  }

  /**
   * What is still to do of the prefills routed to a rank ({@code work}, {@code uncached} tokens), and what they were
   * when routed ({@code routedWork}, {@code routedUncached}).
   */
  record Remaining(double work, long uncached, double routedWork, long routedUncached) {}

  private final Map<Integer, Rank> ranks = new HashMap<>();

  /**
   * A prefill routed to location {@code loc}, whose rank has computed {@code count} prompt tokens so far (what it
   * computed before goes to the prefills routed before this one).
   */
  void routed(int loc, long id, long prefix, long uncached, long count) {
    Rank r = ranks.computeIfAbsent(loc, k -> new Rank());
    advance(r, count);
    r.queue.addLast(new Prefill(id, prefix, Math.max(0, uncached)));
  }

  /** The prefill {@code id} was released (its first token came, or it failed): it is no longer queued. */
  void released(int loc, long id, long count) {
    Rank r = ranks.get(loc);
    if (r == null) {
      return;
    }
    advance(r, count);
    r.queue.removeIf(p -> p.id == id);
    if (r.queue.isEmpty()) {
      ranks.remove(loc);
    }
  }

  /**
   * The work still to do of the prefills routed to {@code loc}, whose rank has computed {@code count} prompt tokens:
   * each prefill from the depth its chunks reached ({@code work.of(prefix + computed, uncached - computed)}).
   */
  Remaining remaining(int loc, long count, WorkOf work) {
    Rank r = ranks.get(loc);
    if (r == null) {
      return new Remaining(0, 0, 0, 0);
    }
    advance(r, count);
    double w = 0;
    long left = 0;
    double routedWork = 0;
    long routedUncached = 0;
    for (Prefill p : r.queue) {
      long n = p.uncached - p.computed;
      w += work.of(p.prefix + p.computed, n);
      left += n;
      routedWork += work.of(p.prefix, p.uncached);
      routedUncached += p.uncached;
    }
    return new Remaining(w, left, routedWork, routedUncached);
  }

  /** Forgets a location's prefills (its worker removed, its cache recreated: the count starts again). */
  void forget(int loc) {
    ranks.remove(loc);
  }

  private static void advance(Rank r, long count) {
    if (count < 0) {
      return;
    }
    long delta = r.lastCount < 0 || count < r.lastCount ? 0 : count - r.lastCount;
    r.lastCount = count;
    for (Prefill p : r.queue) {
      if (delta == 0) {
        break;
      }
      long take = Math.min(delta, p.uncached - p.computed);
      p.computed += take;
      delta -= take;
    }
  }
}
