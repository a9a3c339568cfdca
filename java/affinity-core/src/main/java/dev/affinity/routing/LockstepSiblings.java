package dev.affinity.routing;

import java.util.List;
import java.util.function.IntToDoubleFunction;

/**
 * What the lockstep of attention-DP ranks costs a placement: the ranks of an instance iterate together, so each
 * iteration lasts as long as its slowest rank's
 * (TensorRT-LLM docs/source/blogs/tech_blog/blog10_ADP_Balance_Strategy.md).
 * A router's candidates of one worker are its sibling ranks; their loads come from the router's accounting
 * ({@link AbstractRouter#load(Candidate)}), the arrivals behind them from {@link RankQueues}.
 */
final class LockstepSiblings {
  private final AbstractRouter router;
  /** Tokens one rank computes per iteration ({@code max_num_tokens}); 0: each worker's own. */
  private final int maxNumTokens;
  private final RankQueues queues;
  /** Whether each call a sibling's session sends while a placement runs is charged its wait, or only its first. */
  private final boolean everyCall;

  LockstepSiblings(AbstractRouter router, int maxNumTokens, RankQueues queues, boolean everyCall) {
    this.router = router;
    this.maxNumTokens = maxNumTokens;
    this.queues = queues;
    this.everyCall = everyCall;
  }

  /**
   * Per candidate, the largest {@code value} of another attention-DP rank of its worker (0 without visible ranks):
   * the busiest one sets the length of their shared iterations (queued prefill work on the context fleet, the decode
   * load on the generation fleet).
   */
  static double[] onSiblings(List<Candidate> cands, IntToDoubleFunction value) {
    double[] values = new double[cands.size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = value.applyAsDouble(i);
    }
    double[] out = new double[cands.size()];
    for (int from = 0, to; from < cands.size(); from = to) {
      // a worker's candidates are adjacent (candidatesOf adds them together)
      String worker = cands.get(from).workerId();
      double first = 0;
      double second = 0;
      for (to = from; to < cands.size() && cands.get(to).workerId().equals(worker); to++) {
        double w = values[to];
        if (w > first) {
          second = first;
          first = w;
        } else if (w > second) {
          second = w;
        }
      }
      for (int k = from; k < to; k++) {
        out[k] = values[k] == first ? second : first;
      }
    }
    return out;
  }

  /** The tokens candidate {@code c}'s rank computes per iteration. */
  int chunkOf(Candidate c) {
    return maxNumTokens > 0 ? maxNumTokens : c.worker().info().maxNumTokens();
  }

  /** Iterations of at most {@code chunk} tokens that {@code tokens} uncached tokens take (at least 1). */
  static long iterations(long tokens, int chunk) {
    return Math.max(1, (tokens + chunk - 1) / chunk);
  }

  /**
   * The lockstep bound: the work the busiest sibling rank of candidate {@code i} does in the next {@code iterations}
   * iterations, which this rank's queue and request cannot finish sooner than. The sibling goes at the pace of its
   * own iterations ({@code work / ceil(uncached / max_num_tokens)} per iteration, which counts the attention over the
   * depth its chunks are at), and does at most all its queued work.
   */
  double siblingDelay(List<Candidate> cands, Queued[] queued, int i, long iterations) {
    return overBusySiblings(cands, queued, i, (work, perIteration) -> Math.min(work, iterations * perIteration));
  }

  /**
   * What the request's session pays later for staying at candidate {@code i} while a lockstep sibling works through
   * its queue: each of its next calls that comes before the sibling is done ({@code ratePerWork} calls per unit of
   * work, over the sibling's queued work) waits one of the sibling's iterations. The caller caps it at what moving
   * costs now (the session's whole prompt elsewhere): a session that would wait longer moves at its next call.
   */
  double laterSiblingWaits(List<Candidate> cands, Queued[] queued, int i, double ratePerWork) {
    return ratePerWork == 0 ? 0
        : overBusySiblings(cands, queued, i, (work, perIteration) -> ratePerWork * work * perIteration);
  }

  /** A value of a sibling rank's queued prefill work and the work of one of its iterations. */
  private interface SiblingValue {
    double of(double work, double perIteration);
  }

  /**
   * The prefill queued at a candidate still to do: its work and its uncached tokens (what was routed there and not
   * released, less what its rank reports computed of it: {@link ReportedProgress}).
   */
  record Queued(double work, long uncached) {}

  /**
   * The largest {@code value} over the sibling ranks of candidate {@code i} that have prefill queued (0 without any):
   * each at the pace of its own iterations, {@code work / ceil(uncached / max_num_tokens)} of what it has still to do
   * (a prefill's deep chunks, which attend over more, take longer than its first).
   */
  private double overBusySiblings(List<Candidate> cands, Queued[] queued, int i, SiblingValue value) {
    String worker = cands.get(i).workerId();
    double most = 0;
    for (int k = 0; k < cands.size(); k++) {
      Candidate s = cands.get(k);
      if (k == i || !s.workerId().equals(worker)) {
        continue;
      }
      Queued q = queued[k];
      if (q.work() > 0) {
        most = Math.max(most, value.of(q.work(), q.work() / iterations(q.uncached(), chunkOf(s))));
      }
    }
    return most;
  }

  /**
   * The queueing externality of putting {@code own} units of prefill work ({@code ownIterations} iterations) on
   * candidate {@code i}: the wait it imposes on the requests of other sessions that come after it. Prefill is served
   * first come, first served (TensorRT-LLM's chunking policy), so a request arriving at the same rank while its
   * queue and this work are in the system waits {@code own} longer, and its session, with one call in flight, comes
   * at most once meanwhile. A request arriving at a lockstep sibling rank while this request computes waits one of
   * its iterations ({@code own / iterations}; an instance's iteration lasts as long as its slowest rank's,
   * {@code T_iter = overhead + max over ranks}, docs/timing-model.md), and is then served: its session comes back
   * after its answer and its tool, and each of its calls while this work runs waits again
   * ({@link RankQueues#delayedCalls}; {@code sibling_wait: once} counts one). Who arrives comes from the measured
   * rates; no session is charged more than prefilling its own context elsewhere would cost it (the router moves it
   * rather than let it wait longer). {@code queued}: per candidate, the prefill queued there still to do.
   */
  double externality(List<Candidate> cands, Queued[] queued, int i, double own, long ownIterations, String key,
      long now) {
    Candidate c = cands.get(i);
    double ext = queues.delayedWork(router.locationOf(c), key, queued[i].work() + own / 2, own, now);
    double perIteration = own / ownIterations;
    for (int k = 0; k < cands.size(); k++) {
      Candidate s = cands.get(k);
      if (k != i && s.workerId().equals(c.workerId())) {
        int loc = router.locationOf(s);
        ext += everyCall ? queues.delayedCalls(loc, key, own, perIteration, now)
            : queues.delayedWork(loc, key, own, perIteration, now);
      }
    }
    return ext;
  }
}
