package dev.affinity.bench.cli;

import dev.affinity.bench.compare.ProgressBar;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.report.RecordsCsv;
import dev.affinity.bench.report.ReportFormat;
import dev.affinity.bench.report.ReportWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** Options and output shared by the commands that run workloads and write a report. */
final class ReportOptions {
  @Option(names = "--out", defaultValue = "bench-report", description = "Report directory (default: ${DEFAULT-VALUE}).")
  Path out;

  @Option(names = "--format", defaultValue = "md", description = "md or html (default: ${DEFAULT-VALUE}).")
  String format;

  @Option(names = "--slo-ttft-ms", defaultValue = "2000",
      description = "SLO: an agent's P95 TTFT at most this, ms (default: ${DEFAULT-VALUE}).")
  double sloTtftMs;

  @Option(names = "--slo-tokens-per-s", defaultValue = "20",
      description = "SLO: an agent's P25 output speed at least this, tokens/s (default: ${DEFAULT-VALUE}).")
  double sloTokensPerS;

  @Option(names = "--quiet", description = "No progress bar.")
  boolean quiet;

  @Option(names = "--records", description = "Also write records.csv: one row per request of every run.")
  boolean records;

  /** A progress bar on stderr for {@code runs} runs, or null with {@code --quiet}. */
  ProgressBar progress(int runs) {
    return quiet ? null : new ProgressBar(System.err, runs);
  }

  /**
   * Writes the report (its first note is the command line), prints a line per run and the report's
   * path to the command's output.
   */
  void write(CommandSpec spec, String title, List<String> notes, List<RunResult> results) throws IOException {
    List<String> all = new ArrayList<>();
    all.add("Command: `affinity bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs()) + "`");
    all.addAll(notes);
    Path written = ReportWriter.write(out, reportFormat(), title, all, results);
    if (records) {
      RecordsCsv.write(out.resolve("records.csv"), results);
    }
    PrintWriter w = spec.commandLine().getOut();
    for (RunResult r : results) {
      RunMetrics m = r.metrics();
      String bound = m.boundTtftMs() == null ? "" : String.format(Locale.ROOT, "  bound p50 %.1f p95 %.1f ms  session %.1f s",
          m.boundTtftMs()[0], m.boundTtftMs()[1], m.sessionTimeMeanS());
      w.printf(Locale.ROOT, "%-26s %-22s seed %-3d TTFT p50 %8.1f p95 %8.1f ms  ITL p50 %5.1f ms  hit %.3f (ideal %.3f, pooled %.3f)  "
          + "agents %d/%d  errors %d  wall %.1f s%s%n", r.policy(), r.workload(), r.seed(), m.ttftMs()[0], m.ttftMs()[1],
          m.itlMs()[0], m.hitRatio(), m.idealHitRatio(), m.pooledHitRatio(), m.agentsWithinSlo(), m.agents(), m.errors(), r.wallSeconds(),
          bound);
    }
    w.println("report: " + written);
  }

  ReportFormat reportFormat() {
    return ReportFormat.parse(format);
  }

  Slo slo() {
    return new Slo(sloTtftMs, sloTokensPerS);
  }
}
