package dev.affinity.routing;

import dev.affinity.kv.PrefixIndex;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Matched prefix blocks of one request at every candidate (worker and visible rank), looked up in
 * the prefix index before a router takes its lock. Workers that hash alike share one lookup.
 */
final class PrefixMatches {
  private final Map<String, Integer> blocks = new HashMap<>();

  static PrefixMatches lookup(PrefixIndex index, RoutingRequest request, List<Worker> workers) {
    PrefixMatches m = new PrefixMatches();
    if (!request.hasTokens()) {
      return m;
    }
    for (Worker w : workers) {
      WorkerInfo info = w.info();
      long[] keys = request.blockKeys(info.hashAlgorithm(), info.tokensPerBlock());
      List<Candidate> cands = AbstractRouter.candidatesOf(w);
      int[] locs = new int[cands.size()];
      for (int i = 0; i < locs.length; i++) {
        locs[i] = index.location(w.id(), cands.get(i).rank());
      }
      int[] depths = index.matchDepths(keys, locs);
      for (int i = 0; i < locs.length; i++) {
        m.blocks.put(cands.get(i).toString(), depths[i]);
      }
    }
    return m;
  }

  /** Matched blocks at the candidate. */
  int blocks(Candidate c) {
    return blocks.getOrDefault(c.toString(), 0);
  }

  /** The best match among a worker's candidates. */
  int bestOf(Worker w) {
    int best = 0;
    for (Candidate c : AbstractRouter.candidatesOf(w)) {
      best = Math.max(best, blocks(c));
    }
    return best;
  }
}
