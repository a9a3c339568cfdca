package dev.affinity.bench.cli;

import dev.affinity.bench.compare.Comparison;
import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.metrics.RunResult;
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
      + "round_robin, load_balancing, kv_cache_aware, conversation, conversation+header, conversation+header-both, affinity, "
      + "affinity-root-pinned, dynamo_kv, sglang_cache_aware, llmd_scorer).")
  List<String> policies;

  @Option(names = "--context-instances", defaultValue = "0", description = "Override the number of context instances.")
  int contextInstances;

  @Option(names = "--generation-instances", defaultValue = "0", description = "Override the number of generation instances.")
  int generationInstances;

  @Option(names = "--sample-ms", defaultValue = "1000", description = "Load sampling period, virtual ms (default: ${DEFAULT-VALUE}).")
  long sampleMs;

  @Option(names = "--stream", description = "Simulate streaming responses (one response per token: the same numbers, slower).")
  boolean stream;

  @Mixin
  WorkloadOptions workloads;

  @Mixin
  ReportOptions report;

  @Override
  public Integer call() throws Exception {
    if (sampleMs <= 0) {
      throw new IllegalArgumentException("--sample-ms must be > 0");
    }
    FleetConfigs fleet = (config == null ? FleetConfigs.builtIn() : FleetConfigs.load(config))
        .withInstances(contextInstances, generationInstances);
    List<Policy> chosen = new ArrayList<>();
    for (String p : policies == null ? Policy.builtIn().stream().map(Policy::name).toList() : policies) {
      chosen.add(Policy.named(p.trim()));
    }
    report.reportFormat();  // a bad --format fails before the runs
    Comparison comparison = new Comparison(fleet, chosen, workloads.specs(), workloads.seeds, report.slo(),
        Duration.ofMillis(sampleMs), stream);
    List<RunResult> results = comparison.run(report.progress(comparison.runs()));
    List<String> notes = new ArrayList<>();
    notes.add("Fleet: " + fleet.source() + "; simulated in virtual time by CPU executors (JNI) behind the DisaggService and "
        + "routers that serve runs.");
    notes.add(String.format(Locale.ROOT, "SLO per agent: P95 TTFT <= %.0f ms and P25 output speed >= %.0f tokens/s.",
        report.sloTtftMs, report.sloTokensPerS));
    for (Policy p : chosen) {
      notes.add("Policy " + p.name() + ": " + p.description() + ".");
    }
    report.write(spec, "Affinity policy comparison", notes, results);
    return 0;
  }
}
