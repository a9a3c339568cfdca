package dev.affinity.nativebridge;

import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Helpers for driving a virtual-clock executor in tests. */
final class SimTestSupport {
  /** A small virtual-clock CPU executor: 2 ranks, 4-token blocks, 64 blocks per rank. */
  static final String SMALL_VIRTUAL = """
      {"clock": {"mode": "virtual"}, "num_ranks": 2, "tokens_per_block": 4, "kv_blocks_per_rank": 64,
       "max_batch_size": 4, "max_num_tokens": 256}""";

  private SimTestSupport() {}

  /** Runs the executor until idle; returns every response produced, in order. */
  static List<ExecutorResponse> runUntilIdle(Executor ex) {
    List<ExecutorResponse> out = new ArrayList<>();
    for (int guard = 0; guard < 1_000_000; guard++) {
      out.addAll(ex.awaitResponses(10_000, Duration.ZERO));
      long next = ex.nextIterationEndMicros();
      if (next < 0) {
        out.addAll(ex.awaitResponses(10_000, Duration.ZERO));
        return out;
      }
      ex.advanceTo(next);
    }
    throw new AssertionError("executor never became idle");
  }

  static int[] tokens(int n, int base) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = base + i;
    }
    return t;
  }

  static ExecutorResponse finalOf(List<ExecutorResponse> rs, long requestId) {
    ExecutorResponse f = null;
    for (ExecutorResponse r : rs) {
      if (r.requestId() == requestId && r.isFinal()) {
        if (f != null) {
          throw new AssertionError("two final responses for request " + requestId);
        }
        f = r;
      }
    }
    if (f == null) {
      throw new AssertionError("no final response for request " + requestId + " in " + rs);
    }
    return f;
  }
}
