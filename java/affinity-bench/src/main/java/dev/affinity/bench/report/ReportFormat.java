package dev.affinity.bench.report;

import java.util.Locale;

/** The format of the main report file that {@link ReportWriter} writes. */
public enum ReportFormat {
  /** {@code report.md}, with the plots as linked SVG files. */
  MARKDOWN("report.md"),
  /** {@code report.html}, self-contained, with the plots inlined. */
  HTML("report.html");

  private final String fileName;

  ReportFormat(String fileName) {
    this.fileName = fileName;
  }

  /** The main report's file name. */
  public String fileName() {
    return fileName;
  }

  /**
   * Parses a format name, ignoring case: {@code md} or {@code markdown}, or {@code html}.
   *
   * @throws IllegalArgumentException for any other name
   */
  public static ReportFormat parse(String name) {
    String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
    return switch (n) {
      case "md", "markdown" -> MARKDOWN;
      case "html" -> HTML;
      default -> throw new IllegalArgumentException(
          "unknown report format '" + name + "', expected one of: md, markdown, html");
    };
  }
}
