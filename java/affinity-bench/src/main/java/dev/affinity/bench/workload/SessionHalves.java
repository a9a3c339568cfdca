package dev.affinity.bench.workload;

import dev.affinity.bench.trace.ClaudeCodeTrace;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * A fixed split of recorded sessions into two halves, for choosing a policy's defaults on one half and reporting on
 * the other (docs/benchmarks.md, "Two halves of the sessions"). Sessions are ordered by SHA-256 of
 * {@code "affinity-halves-<seed>:" + file name}; the first {@code ceil(n / 2)} are half {@code a}, the rest half
 * {@code b}. Each half keeps the directory's file-name order. The split depends only on the file names and the seed:
 * the same directory splits alike on every machine, and a session keeps its half when others are added.
 */
public final class SessionHalves {
  /** The split's seed: the one every table of docs/benchmarks.md uses. */
  public static final int DEFAULT_SEED = 1;

  private SessionHalves() {}

  /**
   * Half {@code half} ({@code "a"} or {@code "b"}) of {@code traces} under {@code seed}.
   *
   * @throws IllegalArgumentException for another half's name, or fewer than two traces
   */
  public static List<ClaudeCodeTrace> half(List<ClaudeCodeTrace> traces, String half, int seed) {
    checkName(half);
    if (traces.size() < 2) {
      throw new IllegalArgumentException("two halves need at least two sessions, got " + traces.size());
    }
    String[] keys = new String[traces.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = digest("affinity-halves-" + seed + ":" + traces.get(i).source());
    }
    Integer[] order = new Integer[keys.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparing(i -> keys[i]));
    boolean[] inA = new boolean[keys.length];
    for (int k = 0; k < (keys.length + 1) / 2; k++) {
      inA[order[k]] = true;
    }
    boolean wantA = half.equals("a");
    List<ClaudeCodeTrace> out = new ArrayList<>();
    for (int i = 0; i < keys.length; i++) {
      if (inA[i] == wantA) {
        out.add(traces.get(i));
      }
    }
    return out;
  }

  /**
   * Checks a half's name.
   *
   * @throws IllegalArgumentException unless it is {@code a} or {@code b}
   */
  public static void checkName(String half) {
    if (!half.equals("a") && !half.equals("b")) {
      throw new IllegalArgumentException("half must be a or b, got \"" + half + "\"");
    }
  }

  private static String digest(String s) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
      return java.util.HexFormat.of().formatHex(d);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
