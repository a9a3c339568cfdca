package dev.affinity.bench.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RunMetricsTest {
  private static RequestRecord rec(String agent, long ttftMs, long e2eMs, int tokens, int prompt, int reused, int ideal) {
    return new RequestRecord(0, agent, null, agent, 0, ttftMs * 1000, e2eMs * 1000, tokens, prompt, reused, ideal, -1, "ctx-0", 0,
        "gen-0", 0, 200, null);
  }

  @Test
  void agentWithinSloNeedsP95TtftAndP25SpeedAndNoErrors() {
    Slo slo = new Slo(1000, 20);
    // 20 requests: 19 with TTFT 100 ms, one with 5 s. P95 (nearest rank 19 of 20) = 100 ms: within.
    List<RequestRecord> agent = new ArrayList<>();
    for (int i = 0; i < 19; i++) {
      agent.add(rec("a", 100, 100 + 1000, 51, 1000, 0, 0));  // 50 tokens in 1 s after the first: 50 tokens/s
    }
    agent.add(rec("a", 5000, 6000, 51, 1000, 0, 0));
    assertTrue(RunMetrics.withinSlo(agent, slo));
    agent.add(rec("a", 5000, 6000, 51, 1000, 0, 0));  // now 2 of 21 are slow: P95 (rank 20) = 5 s
    assertFalse(RunMetrics.withinSlo(agent, slo));
    List<RequestRecord> slowTokens = List.of(rec("b", 100, 10_100, 51, 1000, 0, 0));  // 5 tokens/s
    assertFalse(RunMetrics.withinSlo(slowTokens, slo));
    List<RequestRecord> failed = List.of(new RequestRecord(0, "c", null, "c", 0, -1, 10, 0, 10, -1, 0, -1, null, -1, null, -1, 503,
        "no worker"));
    assertFalse(RunMetrics.withinSlo(failed, slo));
  }

  @Test
  void summarizesLatencyReuseAndAgents() {
    List<RequestRecord> records = List.of(rec("a", 100, 1100, 11, 1000, 500, 800), rec("b", 300, 1300, 11, 1000, 0, 200));
    RunMetrics m = RunMetrics.of(records, LoadSeries.empty(), null, null, new Slo(200, 1));
    assertEquals(2, m.requests());
    assertEquals(0.25, m.hitRatio(), 1e-9);
    assertEquals(0.5, m.idealHitRatio(), 1e-9);
    assertEquals(100, m.ttftMs()[0], 0.5);
    assertEquals(300, m.ttftMs()[2], 0.5);
    assertEquals(100, m.itlMs()[0], 0.5, "1 s over 10 tokens after the first");
    assertEquals(2, m.agents());
    assertEquals(1, m.agentsWithinSlo(), "b's TTFT is over 200 ms");
  }

  @Test
  void imbalanceIsMaxOverMeanAveragedOverBusySamples() {
    int[][][] load = {
        {{2, 2}, {0, 0}, {1, 1}},   // context: 4 vs 0 -> max/mean 2.0; ranks of ctx-0 even
        {{0, 0}, {0, 0}, {0, 0}},   // idle: skipped
        {{1, 1}, {1, 1}, {0, 2}}};  // context even -> 1.0; generation ranks 0 vs 2 -> 2.0
    LoadSeries s = new LoadSeries(List.of("ctx-0", "ctx-1", "gen-0"), 2, new long[] {0, 1, 2}, load);
    assertEquals(1.5, s.instanceImbalance(true), 1e-9);
    assertEquals(1.0, s.instanceImbalance(false), 1e-9, "one generation instance is always balanced");
    assertEquals(1.0, s.rankImbalance(true), 1e-9);
    assertEquals(1.5, s.rankImbalance(false), 1e-9);
  }

  @Test
  void sessionTimeRunsFromAnAgentsFirstSendToItsLastAnswer() {
    List<RequestRecord> records = List.of(
        new RequestRecord(0, "a", null, "a", 1_000_000, 100_000, 2_000_000, 5, 100, 0, 0, -1, "c", 0, "g", 0, 200, null),
        new RequestRecord(1, "a-sub", "a", "a", 5_000_000, 100_000, 4_000_000, 5, 100, 0, 0, -1, "c", 0, "g", 0, 200, null),
        new RequestRecord(2, "b", null, "b", 0, 100_000, 1_000_000, 5, 100, 0, 0, -1, "c", 0, "g", 0, 200, null));
    RunMetrics m = RunMetrics.of(records, LoadSeries.empty(), null, null, Slo.defaults());
    // a: 1 s to 9 s (its sub-agent's answer); b: 0 to 1 s
    assertEquals((8.0 + 1.0) / 2, m.sessionTimeMeanS(), 1e-9);
    assertEquals(null, m.boundTtftMs(), "no bound without the fleet's timing");
  }
}
