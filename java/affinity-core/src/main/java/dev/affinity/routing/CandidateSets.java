package dev.affinity.routing;

import dev.affinity.kv.PrefixIndex;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A router's candidates per worker (one per visible attention-DP rank, or the worker itself, rank -1) and their
 * prefix-index locations, cached per worker and made again when the worker's info changes. Thread-safe.
 */
final class CandidateSets {
  private record CandidateSet(WorkerInfo info, List<Candidate> candidates, int[] locations) {}

  private final PrefixIndex index;
  private final ConcurrentHashMap<Worker, CandidateSet> sets = new ConcurrentHashMap<>();

  CandidateSets(PrefixIndex index) {
    this.index = index;
  }

  List<Candidate> candidates(Worker w) {
    return set(w).candidates();
  }

  /** The locations of {@link #candidates}, in their order. */
  int[] locations(Worker w) {
    return set(w).locations();
  }

  int location(Candidate c) {
    return set(c.worker()).locations()[Math.max(0, c.rank())];
  }

  /** Forgets a worker that left the router. */
  void remove(Worker w) {
    sets.remove(w);
  }

  private CandidateSet set(Worker w) {
    WorkerInfo info = w.info();
    CandidateSet set = sets.get(w);
    if (set == null || !set.info().equals(info)) {
      List<Candidate> cands = new ArrayList<>();
      if (!info.ranksVisible()) {
        cands.add(new Candidate(w, -1));
      } else {
        for (int r = 0; r < info.numRanks(); r++) {
          cands.add(new Candidate(w, r));
        }
      }
      int[] locs = new int[cands.size()];
      for (int i = 0; i < locs.length; i++) {
        locs[i] = index.location(w.id(), cands.get(i).rank());
      }
      set = new CandidateSet(info, List.copyOf(cands), locs);
      sets.put(w, set);
    }
    return set;
  }
}
