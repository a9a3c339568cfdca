package dev.affinity.bench.report;

import java.util.List;

/** Renders a {@link Report} as Markdown, linking the plots' SVG files. */
final class MarkdownRenderer {
  private MarkdownRenderer() {}

  static String render(Report report) {
    StringBuilder out = new StringBuilder();
    out.append("# ").append(report.title()).append("\n\n");
    for (String note : report.notes()) {
      out.append("- ").append(note).append('\n');
    }
    if (!report.notes().isEmpty()) {
      out.append('\n');
    }
    for (Section s : report.sections()) {
      out.append("## Workload: ").append(s.workload()).append("\n\n");
      table(out, s.summary());
      for (Plot p : s.plots()) {
        out.append("![").append(p.title()).append("](").append(p.fileName()).append(")\n\n");
      }
    }
    for (Sweeps.Sweep sw : report.sweeps()) {
      out.append("## Agents sustained: ").append(sw.base()).append("\n\n");
      out.append(Sweeps.EXPLANATION).append("\n\n");
      table(out, sw.table());
    }
    out.append("## Runs\n\n");
    table(out, report.runs());
    return out.toString();
  }

  private static void table(StringBuilder out, Table t) {
    row(out, t.header());
    for (int i = 0; i < t.header().size(); i++) {
      out.append(i < t.textColumns() ? "|:---" : "|---:");
    }
    out.append("|\n");
    for (List<String> r : t.rows()) {
      row(out, r);
    }
    out.append('\n');
  }

  private static void row(StringBuilder out, List<String> cells) {
    for (String c : cells) {
      out.append("| ").append(Text.markdownCell(c)).append(' ');
    }
    out.append("|\n");
  }
}
