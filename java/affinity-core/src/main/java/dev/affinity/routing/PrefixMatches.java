package dev.affinity.routing;

import dev.affinity.kv.PrefixIndex;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Matched prefix blocks of one request at every candidate location, looked up before a router
 * takes its lock. All candidates that hash alike (the usual case: one algorithm and block size per
 * fleet) share one walk of the request's blocks.
 */
final class PrefixMatches {
  private static final int[] NONE = new int[0];
  private final int[] depthByLocation;

  private PrefixMatches(int[] depthByLocation) {
    this.depthByLocation = depthByLocation;
  }

  static PrefixMatches lookup(AbstractRouter router, PrefixIndex index, RoutingRequest request, List<Worker> workers) {
    if (!request.hasTokens()) {
      return new PrefixMatches(NONE);
    }
    Map<WorkerInfo, List<Worker>> groups = new LinkedHashMap<>();
    for (Worker w : workers) {
      groups.computeIfAbsent(hashingOf(w.info()), k -> new ArrayList<>()).add(w);
    }
    int[] depth = new int[index.locationCount()];
    for (Map.Entry<WorkerInfo, List<Worker>> g : groups.entrySet()) {
      int count = 0;
      for (Worker w : g.getValue()) {
        count += router.locationsOf(w).length;
      }
      int[] locs = new int[count];
      int at = 0;
      for (Worker w : g.getValue()) {
        for (int loc : router.locationsOf(w)) {
          locs[at++] = loc;
        }
      }
      int[] d = request.matchDepths(index, g.getKey().hashAlgorithm(), g.getKey().tokensPerBlock(), locs);
      for (int i = 0; i < locs.length; i++) {
        if (locs[i] >= depth.length) {
          depth = java.util.Arrays.copyOf(depth, locs[i] + 1);
        }
        depth[locs[i]] = d[i];
      }
    }
    return new PrefixMatches(depth);
  }

  /** Workers with the same hashing share a lookup: a key made of just those two fields. */
  private static WorkerInfo hashingOf(WorkerInfo info) {
    return new WorkerInfo(info.tokensPerBlock(), info.hashAlgorithm(), 1, false, 1);
  }

  /** Matched blocks at a location id. */
  int blocks(int location) {
    return location < depthByLocation.length ? depthByLocation[location] : 0;
  }

  /** The raw array, indexed by location id (may be shorter than the location count). */
  int[] byLocation() {
    return depthByLocation;
  }
}
