package dev.affinity.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The summary's share of the peer-to-bound gap closed. */
class TablesTest {
  private static PolicySummary p95(String policy, double p95, double bound) {
    return summary(policy, p95, bound, Map.of());
  }

  /** A summary whose TTFT p95 and bound p95 are these, with these seeds' own figures. */
  private static PolicySummary summary(String policy, double p95, double bound, Map<Long, double[]> bySeed) {
    return new PolicySummary(policy, 1000, p95, 9000, 5, 2000, 9000, 0.9, 0.95, 0.95, 1, 1, 1, 1, 48, 900, bound, 2000,
        bySeed);
  }

  @Test
  void familiesGroupAPolicysVariants() {
    assertEquals("affinity", Tables.family("affinity"));
    assertEquals("affinity", Tables.family("affinity{ctx.sibling_wait=once}"));
    assertEquals("affinity", Tables.family("affinity-root-pinned"));
    assertEquals("conversation", Tables.family("conversation+header-both"));
    assertEquals("dynamo_kv", Tables.family("dynamo_kv"));
  }

  @Test
  void theGapIsMeasuredFromTheBestPolicyOfAnotherFamily() {
    List<PolicySummary> all = List.of(p95("affinity", 5_000, 4_000), p95("affinity{x=1}", 4_500, 4_000),
        p95("dynamo_kv", 6_000, 4_000), p95("sglang_cache_aware", 7_000, 4_000));
    assertEquals("50%", Tables.gapClosed(all.get(0), all), "(6,000 - 5,000) / (6,000 - 4,000)");
    assertEquals("75%", Tables.gapClosed(all.get(1), all), "its sibling variant is not its peer");
    assertEquals("-300%", Tables.gapClosed(all.get(2), all), "its peer is the best variant of Affinity, (4,500 - 6,000) / 500");
    assertEquals("n/a", Tables.gapClosed(p95("a", 5_000, Double.NaN), List.of(p95("a", 5_000, Double.NaN),
        p95("b", 6_000, Double.NaN))), "no bound");
    assertEquals("n/a", Tables.gapClosed(all.get(0), all.subList(0, 2)), "no peer");
  }

  private static PolicySummary seeds(String policy, double boundP95, double... p95s) {
    Map<Long, double[]> bySeed = new HashMap<>();
    double sum = 0;
    for (int i = 0; i < p95s.length; i++) {
      bySeed.put((long) i + 1, new double[] {p95s[i], boundP95});
      sum += p95s[i];
    }
    return summary(policy, sum / p95s.length, boundP95, bySeed);
  }

  @Test
  void theSeedsRangeOfTheShareFollowsItsMean() {
    // seed 1: (6,000 - 5,000) / 2,000 = 50%; seed 2: (7,000 - 4,500) / 3,000 = 83%; the means: (6,500 - 4,750) / 2,500
    List<PolicySummary> all = List.of(seeds("affinity", 4_000, 5_000, 4_500), seeds("dynamo_kv", 4_000, 6_000, 7_000));
    assertEquals("70% (50 to 83)", Tables.gapClosed(all.get(0), all));
    // a seed the peer did not run is left out: one seed alone gives no range
    List<PolicySummary> one = List.of(seeds("affinity", 4_000, 5_000, 4_500), seeds("dynamo_kv", 4_000, 6_000));
    assertEquals("63%", Tables.gapClosed(one.get(0), one), "(6,000 - 4,750) / 2,000 of the means, no range");
  }
}
