package dev.affinity.bench.cli;

import dev.affinity.bench.compare.ProgressBar;
import dev.affinity.bench.compare.WorkloadSpec;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.live.LiveRun;
import dev.affinity.bench.metrics.RunResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code affinity bench live}: the same workloads against a running frontend, over HTTP (streaming). */
@Command(
    name = "live",
    mixinStandardHelpOptions = true,
    description = "Play workloads against a running frontend over HTTP (streaming completions with the agents' session "
        + "headers) and write the same report as compare.")
final class LiveCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--url", defaultValue = "http://127.0.0.1:8000", description = "The frontend (default: ${DEFAULT-VALUE}).")
  String url;

  @Option(names = "--model", defaultValue = "affinity-sim", description = "Model name to send (default: ${DEFAULT-VALUE}).")
  String model;

  @Option(names = "--label", defaultValue = "live", description = "Name of this run in the report (default: ${DEFAULT-VALUE}).")
  String label;

  @Option(names = "--session-header", defaultValue = "x-claude-code-session-id",
      description = "Header carrying an agent's own session id (default: ${DEFAULT-VALUE}).")
  String sessionHeader;

  @Option(names = "--parent-header", defaultValue = "X-Dynamo-Parent-Session-ID",
      description = "Header carrying a sub-agent's parent session id (default: ${DEFAULT-VALUE}).")
  String parentHeader;

  @Option(names = "--deadline-s", defaultValue = "3600",
      description = "Give up on a run after this many seconds (default: ${DEFAULT-VALUE}).")
  long deadlineS;

  @Option(names = "--request-timeout-s", defaultValue = "600",
      description = "Time allowed for a response's headers (default: ${DEFAULT-VALUE}).")
  long requestTimeoutS;

  @Mixin
  WorkloadOptions workloads;

  @Mixin
  ReportOptions report;

  @Override
  public Integer call() throws Exception {
    report.reportFormat();  // a bad --format fails before the runs
    workloads.specs().forEach(WorkloadSpec::validate);
    LiveRun live = new LiveRun(url, model, sessionHeader, parentHeader, report.slo(), Duration.ofSeconds(requestTimeoutS));
    List<RunResult> results = new ArrayList<>();
    int runs = workloads.specs().size() * workloads.seeds.size();
    ProgressBar bar = report.progress(runs);
    int index = 0;
    for (WorkloadSpec ws : workloads.specs()) {
      for (long seed : workloads.seeds) {
        Workload w = ws.create(seed);
        int total = w.requests();
        if (bar != null) {
          bar.startRun(index, label + " / " + w.name() + " / seed " + seed);
        }
        results.add(live.run(label, w, seed, Duration.ofSeconds(deadlineS), done -> {
          if (bar != null) {
            bar.update(done, total);
          }
        }));
        index++;
      }
    }
    if (bar != null) {
      bar.finish();
    }
    report.write(spec, "Affinity live run", List.of("Live run against " + url
        + " in wall-clock time (queue waits and load over time are not visible from outside)."), results);
    return results.stream().allMatch(r -> r.metrics().errors() == 0) ? 0 : 1;
  }
}
