package dev.affinity.bench.cli;

import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.report.ReportFormat;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Options shared by the commands that write a report. */
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

  ReportFormat reportFormat() {
    return ReportFormat.parse(format);
  }

  Slo slo() {
    return new Slo(sloTtftMs, sloTokensPerS);
  }
}
