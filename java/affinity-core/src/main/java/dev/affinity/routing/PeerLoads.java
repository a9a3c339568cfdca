package dev.affinity.routing;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The in-flight work other frontends reported at a router's candidates ({@link LoadShare}), kept so that their latest
 * report replaces the one before and a frontend's whole contribution can be taken back (it stopped reporting: it
 * died). The router adds every change to the loads it routes on, so its costs are the fleet-wide sums; it reports its
 * own share as those loads less what peers contributed ({@link #contribution}). Not thread-safe: the router's lock.
 */
final class PeerLoads {
  /** What each candidate's load must change by. */
  interface Target {
    /** Adds {@code sign} times the share to the load of its candidate (and its worker's), if the worker is known. */
    void add(LoadShare share, int sign);
  }

  /** Per peer: its last report, by candidate key. */
  private final Map<String, Map<String, LoadShare>> byPeer = new HashMap<>();
  /** Per candidate key: the sum of every peer's share. */
  private final Map<String, double[]> totals = new HashMap<>();

  static String key(String workerId, int rank) {
    return workerId + '\u0000' + rank;
  }

  /** {@code peer}'s new report: its previous one is taken back, this one added; candidates it omits carry nothing. */
  void replace(String peer, List<LoadShare> shares, Target target) {
    Map<String, LoadShare> next = new HashMap<>();
    for (LoadShare s : shares) {
      if (!s.isZero()) {
        next.put(key(s.workerId(), s.rank()), s);
      }
    }
    Map<String, LoadShare> previous = byPeer.remove(peer);
    if (previous != null) {
      previous.values().forEach(s -> change(s, -1, target));
    }
    next.values().forEach(s -> change(s, +1, target));
    if (!next.isEmpty()) {
      byPeer.put(peer, next);
    }
  }

  /** Takes back everything {@code peer} contributed. */
  void forget(String peer, Target target) {
    replace(peer, List.of(), target);
  }

  /** Takes back every peer's share at {@code workerId}'s candidates (the worker left the router). */
  void forgetWorker(String workerId, Target target) {
    for (Map<String, LoadShare> shares : byPeer.values()) {
      Iterator<LoadShare> it = shares.values().iterator();
      while (it.hasNext()) {
        LoadShare s = it.next();
        if (s.workerId().equals(workerId)) {
          change(s, -1, target);
          it.remove();
        }
      }
    }
    byPeer.values().removeIf(Map::isEmpty);
  }

  /** The peers' summed share at a candidate: requests, tokens, work, uncached, arrivals, done work (zeros when none). */
  double[] contribution(String workerId, int rank) {
    double[] t = totals.get(key(workerId, rank));
    return t == null ? new double[6] : t;
  }

  private void change(LoadShare s, int sign, Target target) {
    target.add(s, sign);
    String k = key(s.workerId(), s.rank());
    double[] t = totals.computeIfAbsent(k, x -> new double[6]);
    t[0] += sign * s.requests();
    t[1] += sign * (double) s.tokens();
    t[2] += sign * s.work();
    t[3] += sign * (double) s.uncached();
    t[4] += sign * s.arrivals();
    t[5] += sign * s.doneWork();
    if (t[0] == 0 && t[1] == 0 && Math.abs(t[2]) < 1e-9 && t[3] == 0 && Math.abs(t[4]) < 1e-9
        && Math.abs(t[5]) < 1e-9) {
      totals.remove(k);
    }
  }
}
