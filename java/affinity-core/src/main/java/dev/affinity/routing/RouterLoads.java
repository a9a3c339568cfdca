package dev.affinity.routing;

import dev.affinity.routing.AbstractRouter.Load;
import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The in-flight work a router routes on: per whole worker and per candidate (a rank, by its prefix-index location), its
 * own selections' plus what peer frontends last reported ({@link PeerLoads}), so that its costs are the fleet-wide
 * sums; and its own share of them for its load report. Not thread-safe: the router's lock.
 */
final class RouterLoads {
  private final CandidateSets candidates;
  private final Map<String, Load> byWorker = new HashMap<>();
  private Load[] byLocation = new Load[64];
  private final PeerLoads peers = new PeerLoads();
  /** Rank ties' round robin: a counter of its own, so that they do not disturb the router's worker round robin. */
  private long rankRr;

  RouterLoads(CandidateSets candidates) {
    this.candidates = candidates;
  }

  /** Load of a whole worker. */
  Load worker(String workerId) {
    return byWorker.computeIfAbsent(workerId, x -> new Load());
  }

  /** Load of one candidate: a rank of a worker, or the whole worker when ranks are not visible. */
  Load at(Candidate c) {
    if (c.rank() < 0) {
      return worker(c.workerId());
    }
    int loc = candidates.location(c);
    if (loc >= byLocation.length) {
      byLocation = Arrays.copyOf(byLocation, Math.max(loc + 1, byLocation.length * 2));
    }
    Load l = byLocation[loc];
    if (l == null) {
      l = new Load();
      byLocation[loc] = l;
    }
    return l;
  }

  /** The least loaded candidate of a worker (requests, then tokens; ties round-robin); rank -1 if not visible. */
  Candidate leastLoaded(Worker w) {
    List<Candidate> tied = new ArrayList<>();
    Load best = null;
    for (Candidate c : candidates.candidates(w)) {
      Load l = at(c);
      if (best == null || l.requests < best.requests || (l.requests == best.requests && l.tokens < best.tokens)) {
        best = l;
        tied.clear();
        tied.add(c);
      } else if (l.requests == best.requests && l.tokens == best.tokens) {
        tied.add(c);
      }
    }
    return tied.size() == 1 ? tied.get(0) : tied.get((int) Math.floorMod(rankRr++, (long) tied.size()));
  }

  /** A selection made ({@code sign} +1) or released (-1) at a candidate: one request and its prompt tokens. */
  void add(Candidate c, RoutingRequest r, int sign) {
    Load w = worker(c.workerId());
    w.requests += sign;
    w.tokens += sign * (long) r.numTokens();
    if (c.rank() >= 0) {
      Load l = at(c);
      l.requests += sign;
      l.tokens += sign * (long) r.numTokens();
    }
  }

  /** A peer's share at a known worker's candidate changes its load, and its worker's as a whole, as a selection does. */
  Candidate addPeer(Worker w, LoadShare s, int sign) {
    Candidate c = candidates.candidates(w).get(Math.max(0, s.rank()));
    Load l = at(c);
    l.requests += sign * s.requests();
    l.tokens += sign * s.tokens();
    l.work += sign * s.work();
    l.uncached += sign * s.uncached();
    if (s.rank() >= 0) {
      Load whole = worker(w.id());
      whole.requests += sign * s.requests();
      whole.tokens += sign * s.tokens();
    }
    return c;
  }

  /** The requests and tokens in flight at each candidate of {@code workers} (the metrics' per-rank view). */
  List<CandidateLoad> perCandidate(List<Worker> workers) {
    List<CandidateLoad> out = new ArrayList<>();
    for (Worker w : workers) {
      for (Candidate c : candidates.candidates(w)) {
        Load l = at(c);
        out.add(new CandidateLoad(c.workerId(), c.rank(), l.requests, l.tokens));
      }
    }
    return out;
  }

  /** This router's own share at each candidate of {@code workers} (the loads less the peers'), with its own rates. */
  List<LoadShare> own(List<Worker> workers, Function<Candidate, double[]> ownRates) {
    List<LoadShare> out = new ArrayList<>();
    for (Worker w : workers) {
      for (Candidate c : candidates.candidates(w)) {
        Load l = at(c);
        double[] p = peers.contribution(w.id(), c.rank());
        double[] rates = ownRates.apply(c);
        LoadShare own = new LoadShare(w.id(), c.rank(), l.requests - (int) p[0], l.tokens - (long) p[1],
            l.work - p[2], l.uncached - (long) p[3], rates[0], rates[1]);
        if (!own.isZero()) {
          out.add(own);
        }
      }
    }
    return out;
  }

  /** {@code peer}'s latest report ({@code known}: its shares at workers and ranks this router has) replaces its last. */
  void replacePeer(String peer, List<LoadShare> known, PeerLoads.Target target) {
    peers.replace(peer, known, target);
  }

  void forgetPeer(String peer, PeerLoads.Target target) {
    peers.forget(peer, target);
  }

  /** A worker is leaving: the peers' shares at it are taken back (while the router still knows it). */
  void forgetPeersAt(String workerId, PeerLoads.Target target) {
    peers.forgetWorker(workerId, target);
  }

  /** A worker left: its whole-worker load is dropped. */
  void dropWorker(String workerId) {
    byWorker.remove(workerId);
  }
}
