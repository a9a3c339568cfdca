package dev.affinity.bench.cli;

import dev.affinity.bench.compare.Comparison;
import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.sim.Frontends;
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

  @Option(names = "--frontends", split = ",", description = "Frontends routing as one behind a round-robin load "
      + "balancer, each with its own routers (comma-separated counts, each a row per policy, e.g. 1,2,4,8; default: 1, "
      + "the comparison as it always was).")
  List<Integer> frontends;

  @Option(names = "--shared-state", split = ",", paramLabel = "true|false", description = "With several frontends: "
      + "whether they share the workers' KV events and their loads, as affinity.shared_state does (true), or each "
      + "takes every Nth drained event batch and sees only its own load (false); true,false runs both (default: true).")
  List<String> sharedState;

  @Option(names = "--share-delay-ms", defaultValue = "20", description = "With shared state: how often the frontends "
      + "exchange their loads, virtual ms (a peer's load is up to this old; default: ${DEFAULT-VALUE}, as serve reports).")
  long shareDelayMs;

  @Mixin
  WorkloadOptions workloads;

  @Mixin
  ReportOptions report;

  @Override
  public Integer call() throws Exception {
    if (sampleMs <= 0) {
      throw new IllegalArgumentException("--sample-ms must be > 0");
    }
    List<Frontends> settings = frontendSettings(frontends, sharedState, shareDelayMs);
    FleetConfigs fleet = (config == null ? FleetConfigs.builtIn() : FleetConfigs.load(config))
        .withInstances(contextInstances, generationInstances);
    List<Policy> chosen = new ArrayList<>();
    for (String p : policies == null ? Policy.builtIn().stream().map(Policy::name).toList() : policies) {
      chosen.add(Policy.named(p.trim()));
    }
    report.reportFormat();  // a bad --format fails before the runs
    Comparison comparison = new Comparison(fleet, chosen, workloads.specs(), workloads.seeds, report.slo(),
        Duration.ofMillis(sampleMs), stream, settings);
    List<RunResult> results = comparison.run(report.progress(comparison.runs()));
    List<String> notes = new ArrayList<>();
    notes.add("Fleet: " + fleet.source() + "; simulated in virtual time by CPU executors (JNI) behind the DisaggService and "
        + "routers that serve runs.");
    notes.add(String.format(Locale.ROOT, "SLO per agent: P95 TTFT <= %.0f ms and P25 output speed >= %.0f tokens/s.",
        report.sloTtftMs, report.sloTokensPerS));
    for (Policy p : chosen) {
      notes.add("Policy " + p.name() + ": " + p.description() + ".");
    }
    if (settings.size() > 1 || settings.get(0).count() > 1) {
      notes.add("Frontends: requests handed to each in turn by arrival; \"xN shared\" frontends see every KV event and "
          + "each other's loads every " + shareDelayMs + " ms, \"xN unshared\" ones every Nth drained event batch and "
          + "their own load only.");
    }
    report.write(spec, "Affinity policy comparison", notes, results);
    return 0;
  }

  /**
   * The frontend settings of {@code --frontends}, {@code --shared-state} and {@code --share-delay-ms}: every count with
   * every sharing choice, one frontend once (sharing changes nothing there), in the order given.
   */
  static List<Frontends> frontendSettings(List<Integer> counts, List<String> shared, long delayMs) {
    if (delayMs <= 0) {
      throw new IllegalArgumentException("--share-delay-ms must be > 0, got " + delayMs);
    }
    List<Boolean> sharing = new ArrayList<>();
    for (String s : shared == null ? List.of("true") : shared) {
      String v = s.trim().toLowerCase(Locale.ROOT);
      if (!v.equals("true") && !v.equals("false")) {
        throw new IllegalArgumentException("--shared-state must be true or false (or true,false), got \"" + s + "\"");
      }
      if (!sharing.contains(Boolean.valueOf(v))) {
        sharing.add(Boolean.valueOf(v));
      }
    }
    List<Frontends> out = new ArrayList<>();
    for (int n : counts == null ? List.of(1) : counts) {
      if (n < 1 || n > Frontends.MAX) {
        throw new IllegalArgumentException("--frontends must be in [1, " + Frontends.MAX + "], got " + n);
      }
      for (boolean share : n == 1 ? List.of(true) : sharing) {
        Frontends f = n == 1 ? Frontends.ONE : new Frontends(n, share, Duration.ofMillis(delayMs));
        if (!out.contains(f)) {
          out.add(f);
        }
      }
    }
    return out;
  }
}
