package dev.affinity.routing;

import dev.affinity.kv.RoutedPrefixes;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Predict-on-route for a router: the prompt prefixes it sent to each location count as cached there for a TTL
 * ({@link RoutedPrefixes}) until KV events say what is there; behind several frontends, the prefixes it routed are
 * kept for its peers between two load reports once one asks ({@link #drain}, at most {@value #MAX_TO_SHARE}), and
 * theirs are recorded as its own ({@link #peer}). Under the router's lock.
 */
final class PredictOnRoute {
  /** At most this many kept for the peers between two reports (a report every 20 ms takes them). */
  static final int MAX_TO_SHARE = 4096;

  private final RoutedPrefixes routed;
  private final ArrayDeque<RoutedShare> toShare = new ArrayDeque<>();
  private boolean sharing;

  PredictOnRoute(int stride, long ttlNanos) {
    this.routed = new RoutedPrefixes(stride, ttlNanos);
  }

  void expire(long now) {
    routed.expire(now);
  }

  /** The predicted depth (blocks) of a prompt's prefix at every location. */
  int[] depths(long[] keys, int fullBlocks, int locationCount) {
    return routed.depths(keys, fullBlocks, locationCount);
  }

  /** A prompt's first {@code fullBlocks} blocks went to candidate {@code c} at {@code location}. */
  void routed(Candidate c, int location, long[] keys, int fullBlocks, long now) {
    long[] kept = routed.record(location, keys, fullBlocks, now);
    if (sharing && kept.length > 0) {
      if (toShare.size() >= MAX_TO_SHARE) {
        toShare.removeFirst();
      }
      toShare.add(new RoutedShare(c.workerId(), c.rank(), kept));
    }
  }

  /** The prefixes routed since the last call, for the peers; the first call starts the keeping. */
  List<RoutedShare> drain() {
    sharing = true;
    List<RoutedShare> out = List.copyOf(toShare);
    toShare.clear();
    return out;
  }

  /** A prefix a peer routed to {@code location}: the keys it kept, recorded as they are. */
  void peer(int location, long[] kept, long now) {
    routed.recordSampled(location, kept, now);
  }

  /** KV events said these blocks left the location: its predictions of them end. */
  void removed(int location, long[] keys) {
    routed.forget(location, keys);
  }

  /** The location's cache was (re)created empty. */
  void cleared(int location) {
    routed.forgetAll(location);
  }
}
