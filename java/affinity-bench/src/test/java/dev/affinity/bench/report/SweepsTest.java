package dev.affinity.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.metrics.LoadSeries;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SweepsTest {
  private static RunResult run(String policy, String workload, long seed, int agents, int within) {
    double[] ms = {1, 2, 3};
    RunMetrics m = new RunMetrics(10, 0, ms, ms, ms, 0.5, 0.9, Double.NaN, ms, ms, 1, 1, 1, 1, agents, within, 10, 100, null, 0);
    return new RunResult(policy, workload, seed, m, List.of(), LoadSeries.empty(), 1, 10);
  }

  @Test
  void agentCountsOfOneWorkloadFormASweepWithTheLargestLoadSustained() {
    List<RunResult> runs = List.of(
        run("a", "agentic-8", 1, 8, 8), run("a", "agentic-8", 2, 8, 7),    // 7.5 / 8 = 94%: sustained
        run("a", "agentic-16", 1, 16, 14), run("a", "agentic-16", 2, 16, 15),  // 14.5 / 16 = 91%: sustained
        run("a", "agentic-32", 1, 32, 20), run("a", "agentic-32", 2, 32, 22),  // 66%: not
        run("b", "agentic-8", 1, 8, 5), run("b", "agentic-16", 1, 16, 3), run("b", "agentic-32", 1, 32, 1),
        run("a", "mooncake", 1, 100, 100));
    List<Sweeps.Sweep> sweeps = Sweeps.of(WorkloadRuns.group(runs));
    assertEquals(1, sweeps.size(), "mooncake has no count; agentic has three");
    Table t = sweeps.get(0).table();
    assertEquals("agentic", sweeps.get(0).base());
    assertEquals(List.of("policy", "8 agents", "16 agents", "32 agents", "sustained"), t.header());
    assertEquals(List.of("a", "8 / 8", "15 / 16", "21 / 32", "16"), t.rows().get(0));
    assertEquals(List.of("b", "5 / 8", "3 / 16", "1 / 32", "none"), t.rows().get(1));
  }

  @Test
  void aSingleCountIsNoSweepAndTheReportSaysSoOnlyWithOne(@TempDir Path dir) throws Exception {
    List<RunResult> one = List.of(run("a", "agentic-8", 1, 8, 8));
    assertTrue(Sweeps.of(WorkloadRuns.group(one)).isEmpty());
    String md = Files.readString(ReportWriter.write(dir.resolve("one"), ReportFormat.MARKDOWN, "t", List.of(), one));
    assertFalse(md.contains("Agents sustained"));
    List<RunResult> two = List.of(run("a", "agentic-8", 1, 8, 8), run("a", "agentic-16", 1, 16, 16));
    String html = Files.readString(ReportWriter.write(dir.resolve("two"), ReportFormat.HTML, "t", List.of(), two));
    assertTrue(html.contains("Agents sustained: agentic") && html.contains("<td class=\"n\">16</td>"), html);
  }
}
