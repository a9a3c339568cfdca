package dev.affinity.routing;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Rendezvous (highest random weight) hashing of a key over candidates: independent frontends that see the same
 * candidates place a new key alike, without talking to each other.
 */
final class Rendezvous {
  private Rendezvous() {}

  /**
   * Among the {@code eligible} candidates costing at most {@code limit}, the index of the highest score of key and
   * candidate; -1 when none is.
   */
  static int choose(String key, List<Candidate> cands, List<Integer> eligible, double[] cost, double limit) {
    int best = -1;
    long bestScore = 0;
    long keyHash = fnv1a(key);
    for (int i : eligible) {
      if (cost[i] > limit) {
        continue;
      }
      long score = mix(keyHash ^ fnv1a(cands.get(i).toString()));
      if (best < 0 || Long.compareUnsigned(score, bestScore) > 0) {
        best = i;
        bestScore = score;
      }
    }
    return best;
  }

  /** 64-bit FNV-1a of the string's UTF-8 bytes. */
  static long fnv1a(String s) {
    long h = 0xcbf29ce484222325L;
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xFF;
      h *= 0x100000001b3L;
    }
    return h;
  }

  /** SplitMix64's finalizer. */
  static long mix(long v) {
    v = (v ^ (v >>> 30)) * 0xBF58476D1CE4E5B9L;
    v = (v ^ (v >>> 27)) * 0x94D049BB133111EBL;
    return v ^ (v >>> 31);
  }
}
