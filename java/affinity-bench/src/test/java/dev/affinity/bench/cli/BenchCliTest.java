package dev.affinity.bench.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.live.LiveFixtures;
import dev.affinity.bench.sim.SimFixtures;
import dev.affinity.bench.trace.AffinityTrace;
import dev.affinity.bench.trace.TraceRequest;
import dev.affinity.bench.workload.AgenticParams;
import dev.affinity.bench.workload.AgenticWorkload;
import dev.affinity.server.fleet.AffinityServer;
import dev.affinity.server.http.FrontendOptions;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code affinity bench}: compare writes its report files; workload writes a trace; bad input is an error. */
class BenchCliTest {
  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    CommandLine cli = BenchCli.commandLine();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = cli.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  private static Path smallTrace(Path dir) throws Exception {
    AgenticParams p = SimFixtures.smallAgentic(3, AgenticParams.SubAgentStyle.FORK);
    Path trace = dir.resolve("small.jsonl");
    AffinityTrace.write(AgenticWorkload.openLoop(AgenticWorkload.generate(p, 5), p.blockSize()), trace);
    return trace;
  }

  @Test
  void compareWritesAReportACsvAndPlots(@TempDir Path dir) throws Exception {
    Path trace = smallTrace(dir);
    Path out = dir.resolve("report");
    Run r = run("compare", "--config", SimFixtures.smallFleetFile().toString(), "--policies", "round_robin,conversation+header",
        "--workloads", "trace:" + trace, "--seeds", "1,2", "--out", out.toString(), "--quiet");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("report: "), r.out());
    String md = Files.readString(out.resolve("report.md"));
    assertTrue(md.contains("round_robin") && md.contains("conversation+header"), md);
    List<String> csv = Files.readAllLines(out.resolve("results.csv"));
    assertEquals(1 + 2 * 2, csv.size(), "a header and one row per policy x seed");
    assertTrue(Files.list(out).anyMatch(p -> p.getFileName().toString().endsWith(".svg")), "plots written");
  }

  @Test
  void compareWritesHtml(@TempDir Path dir) throws Exception {
    Path trace = smallTrace(dir);
    Run r = run("compare", "--config", SimFixtures.smallFleetFile().toString(), "--policies", "affinity", "--workloads",
        "trace:" + trace, "--out", dir.resolve("html").toString(), "--format", "html", "--quiet");
    assertEquals(0, r.code(), r.err());
    String html = Files.readString(dir.resolve("html").resolve("report.html"));
    assertTrue(html.contains("<svg") && html.contains("affinity"));
  }

  @Test
  void severalAgentCountsMakeALoadSweep(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("sweep");
    Run r = run("compare", "--policies", "affinity", "--workloads", "agentic", "--agents", "1,2", "--out", out.toString(),
        "--quiet");
    assertEquals(0, r.code(), r.err());
    List<String> csv = Files.readAllLines(out.resolve("results.csv"));
    assertEquals(3, csv.size());
    assertTrue(csv.get(1).startsWith("affinity,agentic-1,") && csv.get(2).startsWith("affinity,agentic-2,"), csv.toString());
  }

  @Test
  void liveRunsATraceAgainstARunningFrontend(@TempDir Path dir) throws Exception {
    Path trace = dir.resolve("burst.jsonl");
    List<TraceRequest> burst = new java.util.ArrayList<>();
    for (int i = 0; i < 6; i++) {
      burst.add(new TraceRequest(i * 10, "s" + (i % 2), i >= 2 ? "s" + (i % 2) + "-parent" : null, 300, 5, 64,
          List.of(1L, 2L, 3L + i, 100L + i, 200L + i)));
    }
    AffinityTrace.write(burst, trace);
    var config = LiveFixtures.zeroCostFleet();
    try (AffinityServer server = AffinityServer.start(config, FrontendOptions.fromConfig(config, "test").withPort(0))) {
      Run r = run("live", "--url", "http://127.0.0.1:" + server.port(), "--workloads", "trace:" + trace, "--out",
          dir.resolve("live").toString(), "--quiet");
      assertEquals(0, r.code(), r.err() + r.out());
      List<String> csv = Files.readAllLines(dir.resolve("live").resolve("results.csv"));
      assertEquals(2, csv.size());
      assertTrue(csv.get(1).startsWith("live,trace-burst,1,6,0,"), csv.get(1));
    }
  }

  private static Path claudeTraces() throws Exception {
    return Path.of(BenchCliTest.class.getResource("/traces/claude-code/trace_0026.json").toURI()).getParent();
  }

  @Test
  void compareReplaysClaudeCodeTracesAndCountsCallsThatCannotFitAsErrors(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("claude");
    Run r = run("compare", "--config", SimFixtures.smallFleetFile().toString(), "--policies", "dynamo_kv,llmd_scorer",
        "--workloads", "claude-code:" + claudeTraces(), "--users", "3", "--think-cap-s", "1", "--out", out.toString(),
        "--quiet");
    assertEquals(0, r.code(), r.err());
    List<String> csv = Files.readAllLines(out.resolve("results.csv"));
    List<String> header = List.of(csv.get(0).split(","));
    assertEquals(3, csv.size());
    for (String line : csv.subList(1, 3)) {
      String[] row = line.split(",");
      assertEquals("claude-code-3", row[header.indexOf("workload")]);
      assertEquals("15", row[header.indexOf("requests")]);
      // trace_0058's four calls (48k-57k tokens) exceed a 32k-token rank of the small fleet
      assertEquals("4", row[header.indexOf("errors")], line);
      assertEquals("3", row[header.indexOf("agents")], "the users");
      assertFalse(row[header.indexOf("pooled_hit_ratio")].isEmpty());
    }
  }

  @Test
  void liveReplaysClaudeCodeTracesAgainstARunningFrontend(@TempDir Path dir) throws Exception {
    Path traces = Files.createDirectories(dir.resolve("traces"));
    Files.copy(claudeTraces().resolve("trace_0026.json"), traces.resolve("trace_0026.json"));
    var config = LiveFixtures.zeroCostFleet();
    try (AffinityServer server = AffinityServer.start(config, FrontendOptions.fromConfig(config, "test").withPort(0))) {
      Run r = run("live", "--url", "http://127.0.0.1:" + server.port(), "--workloads", "claude-code:" + traces,
          "--think-cap-s", "0", "--out", dir.resolve("live").toString(), "--quiet");
      assertEquals(0, r.code(), r.err() + r.out());
      List<String> csv = Files.readAllLines(dir.resolve("live").resolve("results.csv"));
      assertTrue(csv.get(1).startsWith("live,claude-code-1,1,3,0,"), csv.get(1));
    }
  }

  @Test
  void workloadWritesClaudeCodeTracesAsAnOpenLoopTrace(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("cc.jsonl");
    Run r = run("workload", "claude-code:" + claudeTraces(), "--users", "4", "--out", f.toString());
    assertEquals(0, r.code(), r.err());
    assertEquals(3 + 8 + 4 + 3, AffinityTrace.read(f).size());
  }

  @Test
  void workloadWritesTheAgenticWorkloadAsATrace(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("agentic.jsonl");
    Run r = run("workload", "agentic", "--agents", "2", "--seed", "3", "--out", f.toString());
    assertEquals(0, r.code(), r.err());
    int expected = AgenticWorkload.generate(AgenticParams.defaults().withAgents(2), 3).stream().mapToInt(a -> a.totalCalls()).sum();
    assertEquals(expected, AffinityTrace.read(f).size());
  }

  @Test
  void compareRunsSeveralFrontendsSharedAndUnshared(@TempDir Path dir) throws Exception {
    Path trace = smallTrace(dir);
    Path out = dir.resolve("report");
    Run r = run("compare", "--config", SimFixtures.smallFleetFile().toString(), "--policies", "affinity",
        "--workloads", "trace:" + trace, "--frontends", "1,2", "--shared-state", "true,false", "--share-delay-ms", "50",
        "--out", out.toString(), "--quiet");
    assertEquals(0, r.code(), r.err());
    String md = Files.readString(out.resolve("report.md"));
    assertTrue(md.contains("affinity x2 shared every 50ms") && md.contains("affinity x2 unshared"), md);
    List<String> csv = Files.readAllLines(out.resolve("results.csv"));
    assertEquals(1 + 3, csv.size(), "one frontend once, two frontends shared and unshared: " + csv);
  }

  @Test
  void badFrontendSettingsNameTheirFlag(@TempDir Path dir) {
    for (String[] bad : List.of(new String[] {"--frontends", "0"}, new String[] {"--frontends", "65"},
        new String[] {"--shared-state", "maybe"}, new String[] {"--share-delay-ms", "0"},
        new String[] {"--frontends", "two"})) {
      List<String> args = new java.util.ArrayList<>(List.of("compare", "--policies", "affinity", "--out", dir.toString(),
          "--quiet"));
      args.addAll(List.of(bad));
      Run r = run(args.toArray(String[]::new));
      assertEquals(2, r.code(), String.join(" ", bad) + ": " + r.err());
      assertTrue(r.err().contains(bad[0]), String.join(" ", bad) + ": " + r.err());
    }
    assertEquals(List.of(dev.affinity.bench.sim.Frontends.ONE), CompareCommand.frontendSettings(null, null, 20));
    assertEquals(3, CompareCommand.frontendSettings(List.of(1, 4), List.of("true", "false"), 20).size());
  }

  @Test
  void badInputIsAClearError(@TempDir Path dir) throws Exception {
    Run policy = run("compare", "--policies", "fastest", "--out", dir.toString(), "--quiet");
    assertEquals(2, policy.code());
    assertTrue(policy.err().contains("unknown policy \"fastest\""), policy.err());
    Run workload = run("compare", "--workloads", "mooncake:/no/such/file.jsonl", "--policies", "round_robin", "--out",
        dir.toString(), "--quiet");
    assertEquals(2, workload.code());
    assertTrue(workload.err().contains("no such file"), workload.err());
    Run format = run("compare", "--format", "pdf", "--out", dir.toString(), "--quiet");
    assertEquals(2, format.code());
    Path fleet = dir.resolve("bad-fleet.yaml");
    Files.writeString(fleet, "context_servers:\n  num_instances: -1\n");
    Run config = run("compare", "--config", fleet.toString(), "--out", dir.toString(), "--quiet");
    assertEquals(2, config.code(), config.err());
    assertTrue(config.err().contains("bad-fleet.yaml:2"), config.err());
    Path trace = dir.resolve("bad.jsonl");
    Files.writeString(trace, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\nnot json\n");
    Run lines = run("compare", "--workloads", "mooncake:" + trace, "--policies", "round_robin", "--out", dir.toString(),
        "--quiet");
    assertEquals(2, lines.code(), lines.err());
    assertTrue(lines.err().contains("bad.jsonl:2"), lines.err());
  }
}
