package dev.affinity.bench.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.metrics.LoadSeries;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;

class ReportWriterTest {
  private static final List<String> POLICIES = List.of("affinity", "round-robin");
  private static final List<String> WORKLOADS = List.of("agentic", "mooncake trace");
  private static final List<String> NOTES = List.of("affinity-bench compare --seeds 2", "SLO: p95 TTFT <= 2000 ms");

  @TempDir
  Path tmp;

  @Test
  void writesCsvWithOneRowPerRun() throws IOException {
    List<RunResult> runs = grid(POLICIES);
    ReportWriter.write(tmp, ReportFormat.MARKDOWN, "Policies", NOTES, runs);

    List<String> lines = Files.readAllLines(tmp.resolve("results.csv"));
    assertEquals(1 + 8, lines.size());
    List<String> header = List.of(lines.get(0).split(","));
    assertEquals(36, header.size());
    assertEquals(List.of("policy", "workload", "seed"), header.subList(0, 3));

    RunResult expected = runs.stream()
        .filter(r -> r.policy().equals("round-robin") && r.workload().equals("agentic") && r.seed() == 2)
        .findFirst().orElseThrow();
    String[] row = lines.stream().map(l -> l.split(",", -1))
        .filter(f -> f[0].equals("round-robin") && f[1].equals("agentic") && f[2].equals("2"))
        .findFirst().orElseThrow();
    assertEquals(header.size(), row.length);
    assertEquals(Integer.toString(expected.metrics().requests()), row[header.indexOf("requests")]);
    assertEquals("1", row[header.indexOf("errors")]);
    assertEquals(expected.metrics().hitRatio(), Double.parseDouble(row[header.indexOf("hit_ratio")]), 1e-6);
    assertTrue(expected.metrics().hitRatio() > 0);
    assertFalse(row[header.indexOf("gen_queue_p95_ms")].isEmpty());
  }

  @Test
  void markdownReportNamesEverythingAndLinksExistingPlots() throws Exception {
    Path main = ReportWriter.write(tmp, ReportFormat.MARKDOWN, "Policies", NOTES, grid(POLICIES));
    assertEquals(tmp.resolve("report.md"), main);
    String md = Files.readString(main);
    for (String name : concat(POLICIES, WORKLOADS, NOTES)) {
      assertTrue(md.contains(name), name);
    }
    assertTrue(md.contains("1.00x"));
    for (String w : List.of("agentic", "mooncake_trace")) {
      for (String plot : List.of("ttft-cdf-", "hit-ratio-", "load-", "rank-load-")) {
        assertTrue(Files.exists(tmp.resolve(plot + w + ".svg")), plot + w);
      }
    }
    List<Path> svgs = svgFiles(tmp);
    assertEquals(8, svgs.size());
    for (Path svg : svgs) {
      assertTrue(md.contains("(" + svg.getFileName() + ")"), svg.toString());
      Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
      assertEquals("svg", doc.getDocumentElement().getTagName());
    }
    Matcher links = Pattern.compile("\\]\\(([^)]+)\\)").matcher(md);
    while (links.find()) {
      assertTrue(Files.exists(tmp.resolve(links.group(1))), links.group(1));
    }
  }

  @Test
  void markdownEscapesPipesInCells() throws IOException {
    String md = Files.readString(ReportWriter.write(tmp, ReportFormat.MARKDOWN, "t", List.of(), grid(List.of("a|b"))));
    assertTrue(md.contains("| a\\|b |"));
  }

  @Test
  void htmlReportInlinesPlotsAndEscapesText() throws IOException {
    List<String> policies = List.of("affinity", "<lru>");
    Path main = ReportWriter.write(tmp, ReportFormat.HTML, "A & B", NOTES, grid(policies));
    assertEquals(tmp.resolve("report.html"), main);
    String html = Files.readString(main);
    assertTrue(html.startsWith("<!DOCTYPE html>"));
    assertTrue(html.contains("<svg"));
    assertTrue(html.contains("affinity"));
    assertTrue(html.contains("&lt;lru&gt;"));
    assertFalse(html.contains("<lru>"));
    assertTrue(html.contains("A &amp; B"));
    assertFalse(html.contains(".svg)"));
  }

  @Test
  void sameInputGivesByteIdenticalFiles() throws IOException {
    for (ReportFormat format : ReportFormat.values()) {
      Path a = tmp.resolve(format + "-a");
      Path b = tmp.resolve(format + "-b");
      ReportWriter.write(a, format, "Policies", NOTES, grid(POLICIES));
      ReportWriter.write(b, format, "Policies", NOTES, grid(POLICIES));
      List<String> names = fileNames(a);
      assertEquals(names, fileNames(b));
      for (String name : names) {
        assertArrayEquals(Files.readAllBytes(a.resolve(name)), Files.readAllBytes(b.resolve(name)), name);
      }
    }
  }

  @Test
  void liveRunsLeaveQueueFieldsEmptyAndSkipTheLoadPlot() throws Exception {
    List<RequestRecord> records = records(7, 1);
    RunMetrics metrics = RunMetrics.of(records, LoadSeries.empty(), null, null, Slo.defaults());
    RunResult live = new RunResult("affinity", "live", 1, metrics, records, LoadSeries.empty(), 12.5, 0);

    for (ReportFormat format : ReportFormat.values()) {
      Path dir = tmp.resolve(format.name());
      String report = Files.readString(ReportWriter.write(dir, format, "Live", List.of(), List.of(live)));
      assertFalse(Files.exists(dir.resolve("load-live.svg")));
      assertFalse(Files.exists(dir.resolve("rank-load-live.svg")));
      assertFalse(report.contains("load-live.svg"));
      assertTrue(Files.exists(dir.resolve("ttft-cdf-live.svg")));
      assertTrue(report.contains("affinity"));
      for (Path svg : svgFiles(dir)) {
        DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
      }
      List<String> lines = Files.readAllLines(dir.resolve("results.csv"));
      assertEquals(2, lines.size());
      List<String> header = List.of(lines.get(0).split(","));
      String[] row = lines.get(1).split(",", -1);
      for (String queue : List.of("ctx_queue_p50_ms", "ctx_queue_p95_ms", "ctx_queue_p99_ms",
          "gen_queue_p50_ms", "gen_queue_p95_ms", "gen_queue_p99_ms")) {
        assertEquals("", row[header.indexOf(queue)], queue);
      }
      assertEquals("12.500", row[header.indexOf("wall_s")]);
    }
  }

  @Test
  void noRunsStillWritesAReport() throws IOException {
    Path main = ReportWriter.write(tmp.resolve("new/dir"), ReportFormat.MARKDOWN, "Empty", List.of(), List.of());
    assertTrue(Files.readString(main).startsWith("# Empty"));
    assertEquals(1, Files.readAllLines(main.resolveSibling("results.csv")).size());
  }

  @Test
  void csvQuotesFieldsWithCommasAndQuotes() throws IOException {
    ReportWriter.write(tmp, ReportFormat.MARKDOWN, "t", List.of(), grid(List.of("a,\"b\"")));
    String csv = Files.readString(tmp.resolve("results.csv"));
    assertTrue(csv.contains("\n\"a,\"\"b\"\"\",agentic,1,"));
  }

  @Test
  void parsesFormatNames() {
    assertEquals(ReportFormat.MARKDOWN, ReportFormat.parse("md"));
    assertEquals(ReportFormat.MARKDOWN, ReportFormat.parse("Markdown"));
    assertEquals(ReportFormat.HTML, ReportFormat.parse("HTML"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ReportFormat.parse("pdf"));
    assertTrue(e.getMessage().contains("md") && e.getMessage().contains("markdown") && e.getMessage().contains("html"));
  }

  @Test
  void legendAndDocumentWidenToFitTheLongestName() throws IOException {
    String longName = "conversation+header-both-and-then-some";
    ReportWriter.write(tmp.resolve("short"), ReportFormat.MARKDOWN, "t", List.of(), grid(List.of("a", "b")));
    ReportWriter.write(tmp.resolve("long"), ReportFormat.MARKDOWN, "t", List.of(), grid(List.of("a", longName)));
    for (String plot : List.of("ttft-cdf-agentic.svg", "hit-ratio-agentic.svg", "load-agentic.svg")) {
      String shortSvg = Files.readString(tmp.resolve("short").resolve(plot));
      String longSvg = Files.readString(tmp.resolve("long").resolve(plot));
      assertTrue(svgWidth(longSvg) > svgWidth(shortSvg), plot);
      Matcher legend = Pattern.compile("<text x=\"([0-9.]+)\" y=\"[0-9.]+\" text-anchor=\"start\">"
          + Pattern.quote(longName) + "</text>").matcher(longSvg);
      assertTrue(legend.find(), plot);
      assertTrue(Double.parseDouble(legend.group(1)) + Svg.CHAR_PX * longName.length() <= svgWidth(longSvg), plot);
    }
  }

  @Test
  void longCategoryLabelsAreRotatedAndFitTheDocument() throws IOException {
    List<String> policies = List.of("round_robin", "load_balancing", "kv_cache_aware", "conversation",
        "conversation+header", "conversation+header-both", "affinity");
    ReportWriter.write(tmp, ReportFormat.MARKDOWN, "t", List.of(), grid(policies));
    String svg = Files.readString(tmp.resolve("hit-ratio-agentic.svg"));
    double width = svgWidth(svg);
    double height = Double.parseDouble(attribute(svg, "height"));
    double angle = Math.toRadians(Svg.LABEL_ANGLE);
    Matcher tick = Pattern.compile("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\" text-anchor=\"end\" "
        + "transform=\"rotate\\(-" + Svg.LABEL_ANGLE + " \\1 \\2\\)\">([^<]+)</text>").matcher(svg);
    List<String> labels = new ArrayList<>();
    double previousX = -1;
    double lowest = 0;
    while (tick.find()) {
      double x = Double.parseDouble(tick.group(1));
      double y = Double.parseDouble(tick.group(2));
      double w = Svg.CHAR_PX * tick.group(3).length();
      labels.add(tick.group(3));
      assertTrue(x - w * Math.cos(angle) >= 0, tick.group(3));
      assertTrue(y + w * Math.sin(angle) < height, tick.group(3));
      assertTrue(x < width);
      // Parallel rotated baselines this far apart (perpendicular distance) cannot overlap at 12 px.
      if (previousX >= 0) {
        assertTrue((x - previousX) * Math.sin(angle) >= 14, tick.group(3));
      }
      previousX = x;
      lowest = Math.max(lowest, y + w * Math.sin(angle));
    }
    assertEquals(policies, labels);
    Matcher title = Pattern.compile("<text x=\"[0-9.]+\" y=\"([0-9.]+)\" text-anchor=\"middle\">policy</text>")
        .matcher(svg);
    assertTrue(title.find());
    assertTrue(Double.parseDouble(title.group(1)) > lowest + 10);
    assertTrue(Double.parseDouble(title.group(1)) < height);

    // Short names still sit level under their bars.
    ReportWriter.write(tmp.resolve("short"), ReportFormat.MARKDOWN, "t", List.of(), grid(POLICIES));
    assertFalse(Files.readString(tmp.resolve("short/hit-ratio-agentic.svg")).contains("rotate(-" + Svg.LABEL_ANGLE));
  }

  @Test
  void loadPlotAveragesBusySamplesPerTimeBucket() throws IOException {
    // 1201 samples a second apart (buckets of 20 s): ratio 2 and 1 alternate, so every bucket's mean is
    // 1.5; samples 400..459 (buckets 20..22) and the last one are idle, which breaks the line.
    int samples = 1201;
    long[] times = new long[samples];
    int[][][] ranks = new int[samples][][];
    for (int s = 0; s < samples; s++) {
      times[s] = s * 1_000_000L;
      boolean idle = (s >= 400 && s < 460) || s == samples - 1;
      ranks[s] = idle ? new int[][] {{0}, {0}, {0}} : s % 2 == 0 ? new int[][] {{2}, {0}, {1}} : new int[][] {{1}, {1}, {1}};
    }
    LoadSeries load = new LoadSeries(List.of("ctx-0", "ctx-1", "gen-0"), 2, times, ranks);
    List<RunResult> runs = new ArrayList<>(grid(List.of("first")));
    List<RequestRecord> records = records(20, 1);
    runs.add(new RunResult("bursty", "agentic", 1, RunMetrics.of(records, load, null, null, Slo.defaults()), records,
        load, 1, 1200));
    ReportWriter.write(tmp, ReportFormat.MARKDOWN, "t", List.of(), runs);
    String svg = Files.readString(tmp.resolve("load-agentic.svg"));
    assertTrue(svg.contains("(mean per bucket of 20 s)"));

    Matcher line = Pattern.compile("<polyline fill=\"none\" stroke=\"" + Svg.colour(1)
        + "\" stroke-width=\"2\" points=\"([^\"]+)\"/>").matcher(svg);
    List<Integer> pointsPerLine = new ArrayList<>();
    List<String> ys = new ArrayList<>();
    while (line.find()) {
      String[] points = line.group(1).split(" ");
      pointsPerLine.add(points.length);
      for (String point : points) {
        ys.add(point.split(",")[1]);
      }
    }
    assertEquals(List.of(20, 37), pointsPerLine);
    assertEquals(1, ys.stream().distinct().count(), ys.toString());
    // Every policy's line has at most one point per bucket.
    Matcher any = Pattern.compile("points=\"([^\"]+)\"").matcher(svg);
    while (any.find()) {
      assertTrue(any.group(1).split(" ").length <= Plots.LOAD_BUCKETS);
    }
  }

  private static double svgWidth(String svg) {
    return Double.parseDouble(attribute(svg, "width"));
  }

  /** An attribute of the root {@code <svg>} element. */
  private static String attribute(String svg, String name) {
    Matcher m = Pattern.compile("<svg [^>]*?\\b" + name + "=\"([^\"]+)\"").matcher(svg);
    assertTrue(m.find(), name);
    return m.group(1);
  }

  /** Every policy x workload x seed 1, 2, with latencies and reuse that differ by policy and seed. */
  private static List<RunResult> grid(List<String> policies) {
    List<RunResult> runs = new ArrayList<>();
    for (String workload : WORKLOADS) {
      for (int p = 0; p < policies.size(); p++) {
        for (long seed = 1; seed <= 2; seed++) {
          runs.add(simulated(policies.get(p), workload, seed, p + 1));
        }
      }
    }
    return runs;
  }

  private static RunResult simulated(String policy, String workload, long seed, int slowdown) {
    List<RequestRecord> records = new ArrayList<>(records(20, slowdown * seed));
    records.add(new RequestRecord(20, "s-x", null, "agent-x", 9_000_000, -1, -1, 0, 100, 0, 0, 0, "ctx-0", 0,
        null, -1, 503, "overloaded"));
    Histogram ctx = RunMetrics.histogram();
    Histogram gen = RunMetrics.histogram();
    for (int i = 1; i <= 20; i++) {
      ctx.recordValue(i * 100L * slowdown);
      gen.recordValue(i * 250L * slowdown);
    }
    LoadSeries load = load(slowdown);
    RunMetrics metrics = RunMetrics.of(records, load, ctx, gen, Slo.defaults());
    return new RunResult(policy, workload, seed, metrics, records, load, 0.25 * seed, 10.0);
  }

  /** {@code n} successful requests over 4 agents, TTFT growing with the index and {@code scale}. */
  private static List<RequestRecord> records(int n, long scale) {
    List<RequestRecord> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long ttft = (20_000L + i * 15_000L) * scale;
      String agent = "agent-" + (i % 4);
      out.add(new RequestRecord(i, "s-" + i, null, agent, i * 400_000L, ttft, ttft + 40 * 30_000L, 41, 1000,
          (int) (600 / scale), 800, 700, "ctx-" + (i % 2), i % 2, "gen-0", 0, 200, null));
    }
    return out;
  }

  /** Two context instances and one generation instance, two ranks each, four samples (one idle). */
  private static LoadSeries load(int skew) {
    long[] times = {0, 1_000_000, 2_000_000, 3_000_000};
    int[][][] ranks = new int[times.length][][];
    for (int s = 0; s < times.length; s++) {
      int busy = s == 0 ? 0 : s;
      ranks[s] = new int[][] {{busy * skew, busy}, {busy, 0}, {busy, busy}};
    }
    return new LoadSeries(List.of("ctx-0", "ctx-1", "gen-0"), 2, times, ranks);
  }

  private static List<Path> svgFiles(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.toString().endsWith(".svg")).sorted().toList();
    }
  }

  private static List<String> fileNames(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(f -> f.getFileName().toString()).sorted().toList();
    }
  }

  @SafeVarargs
  private static List<String> concat(List<String>... lists) {
    return Stream.of(lists).flatMap(List::stream).toList();
  }
}
