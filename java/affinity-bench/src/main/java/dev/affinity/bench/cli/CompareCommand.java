package dev.affinity.bench.cli;

import dev.affinity.bench.compare.Comparison;
import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.compare.ProgressBar;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.report.ReportWriter;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code affinity bench compare}: a matrix of simulated runs and its report. */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    description = "Simulate policies x workloads x seeds in virtual time (CPU executors through JNI, the same "
        + "DisaggService and routers as serve) and write a report (Markdown or HTML with plots, plus CSV).")
final class CompareCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--config", description = "Fleet configuration (disaggregated YAML with affinity.workers pools; "
      + "default: the built-in bench/fleet.yaml, 4 context + 2 generation instances x 2 ranks).")
  Path config;

  @Option(names = "--policies", split = ",", description = "Policies (comma-separated; default: all of "
      + "round_robin, load_balancing, kv_cache_aware, conversation, conversation+header, conversation+header-both, affinity).")
  List<String> policies;

  @Option(names = "--context-instances", defaultValue = "0", description = "Override the number of context instances.")
  int contextInstances;

  @Option(names = "--generation-instances", defaultValue = "0", description = "Override the number of generation instances.")
  int generationInstances;

  @Option(names = "--sample-ms", defaultValue = "1000", description = "Load sampling period, virtual ms (default: ${DEFAULT-VALUE}).")
  long sampleMs;

  @Option(names = "--stream", description = "Simulate streaming responses (one response per token: the same numbers, slower).")
  boolean stream;

  @Option(names = "--quiet", description = "No progress bar.")
  boolean quiet;

  @Mixin
  WorkloadOptions workloads;

  @Mixin
  ReportOptions report;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (sampleMs <= 0) {
      throw new IllegalArgumentException("--sample-ms must be > 0");
    }
    FleetConfigs fleet = (config == null ? FleetConfigs.builtIn() : FleetConfigs.load(config))
        .withInstances(contextInstances, generationInstances);
    List<Policy> chosen = new ArrayList<>();
    for (String p : policies == null ? Policy.builtIn().stream().map(Policy::name).toList() : policies) {
      chosen.add(Policy.named(p.trim()));
    }
    var format = report.reportFormat();
    Comparison comparison = new Comparison(fleet, chosen, workloads.specs(), workloads.seeds, report.slo(),
        Duration.ofMillis(sampleMs), stream);
    ProgressBar bar = quiet ? null : new ProgressBar(System.err, comparison.runs());
    List<RunResult> results = comparison.run(bar);
    List<String> notes = new ArrayList<>();
    notes.add("Command: `affinity bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs()) + "`");
    notes.add("Fleet: " + fleet.source() + "; simulated in virtual time by CPU executors (JNI) behind the DisaggService and "
        + "routers that serve runs.");
    notes.add(String.format(Locale.ROOT, "SLO per agent: P95 TTFT <= %.0f ms and P25 output speed >= %.0f tokens/s.",
        report.sloTtftMs, report.sloTokensPerS));
    for (Policy p : chosen) {
      notes.add("Policy " + p.name() + ": " + p.description() + ".");
    }
    Path written = ReportWriter.write(report.out, format, "Affinity policy comparison", notes, results);
    for (RunResult r : results) {
      RunMetrics m = r.metrics();
      out.printf(Locale.ROOT, "%-26s %-22s seed %-3d TTFT p50 %8.1f p95 %8.1f ms  hit %.3f (ideal %.3f)  agents %d/%d  "
          + "errors %d  wall %.1f s%n", r.policy(), r.workload(), r.seed(), m.ttftMs()[0], m.ttftMs()[1], m.hitRatio(),
          m.idealHitRatio(), m.agentsWithinSlo(), m.agents(), m.errors(), r.wallSeconds());
    }
    out.println("report: " + written);
    return 0;
  }
}
