package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Writes a comparison report for any number of runs (policies x workloads x seeds) into a directory:
 * {@code results.csv} with one row per run, SVG plots per workload ({@code ttft-cdf-<workload>.svg},
 * {@code hit-ratio-<workload>.svg}, and {@code load-<workload>.svg} and {@code rank-load-<workload>.svg} when load was
 * sampled), and the main report ({@code report.md} linking the plots, or a self-contained
 * {@code report.html}), which ends with a table of agents sustained within the SLO for every load
 * sweep ({@link Sweeps}).
 * Policies and workloads appear in the order they first occur in the runs; the same input always
 * gives byte-identical files.
 */
public final class ReportWriter {
  private ReportWriter() {}

  /**
   * Writes the report for {@code runs} into {@code dir}, creating it if missing.
   *
   * @param title the report's heading
   * @param notes free-text notes shown under the title (command line, fleet, SLO ...)
   * @return the main report file's path
   */
  public static Path write(Path dir, ReportFormat format, String title, List<String> notes, List<RunResult> runs)
      throws IOException {
    Objects.requireNonNull(format, "format");
    Objects.requireNonNull(title, "title");
    Files.createDirectories(dir);
    writeFile(dir.resolve("results.csv"), ResultsCsv.render(runs));
    List<Section> sections = new ArrayList<>();
    List<WorkloadRuns> workloads = WorkloadRuns.group(runs);
    for (WorkloadRuns w : workloads) {
      List<PolicySummary> summaries = w.policies().stream().map(PolicySummary::of).toList();
      List<Plot> plots = Plots.of(w, summaries);
      for (Plot p : plots) {
        writeFile(dir.resolve(p.fileName()), p.svg());
      }
      sections.add(new Section(w.workload(), Tables.summary(summaries), plots));
    }
    Report report = new Report(title, notes, sections, Sweeps.of(workloads), Tables.runs(runs));
    Path main = dir.resolve(format.fileName());
    writeFile(main, switch (format) {
      case MARKDOWN -> MarkdownRenderer.render(report);
      case HTML -> HtmlRenderer.render(report);
    });
    return main;
  }

  private static void writeFile(Path file, String content) throws IOException {
    Files.writeString(file, content, StandardCharsets.UTF_8);
  }
}
