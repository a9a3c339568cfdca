package dev.affinity.bench.report;

import java.util.List;

/** Renders a {@link Report} as one self-contained HTML page with the plots inlined. */
final class HtmlRenderer {
  private static final String CSS = "body{font-family:sans-serif;margin:2em;color:#222}"
      + "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px}"
      + "th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}"
      + "figure{display:inline-block;margin:0 1em 1em 0}figcaption{text-align:center;color:#555}";

  private HtmlRenderer() {}

  static String render(Report report) {
    StringBuilder out = new StringBuilder();
    out.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
        .append(Text.xml(report.title())).append("</title>\n<style>").append(CSS).append("</style>\n</head>\n<body>\n");
    out.append("<h1>").append(Text.xml(report.title())).append("</h1>\n");
    for (String note : report.notes()) {
      out.append("<p>").append(Text.xml(note)).append("</p>\n");
    }
    for (Section s : report.sections()) {
      out.append("<h2>Workload: ").append(Text.xml(s.workload())).append("</h2>\n");
      table(out, s.summary());
      for (Plot p : s.plots()) {
        out.append("<figure>\n").append(p.svg()).append("<figcaption>").append(Text.xml(p.title()))
            .append("</figcaption>\n</figure>\n");
      }
    }
    for (Sweeps.Sweep sw : report.sweeps()) {
      out.append("<h2>Agents sustained: ").append(Text.xml(sw.base())).append("</h2>\n");
      out.append("<p>").append(Text.xml(Sweeps.EXPLANATION)).append("</p>\n");
      table(out, sw.table());
    }
    out.append("<h2>Runs</h2>\n");
    table(out, report.runs());
    out.append("</body>\n</html>\n");
    return out.toString();
  }

  private static void table(StringBuilder out, Table t) {
    out.append("<table>\n<thead><tr>");
    for (String h : t.header()) {
      out.append("<th>").append(Text.xml(h)).append("</th>");
    }
    out.append("</tr></thead>\n<tbody>\n");
    for (List<String> row : t.rows()) {
      out.append("<tr>");
      for (int i = 0; i < row.size(); i++) {
        out.append(i < t.textColumns() ? "<td>" : "<td class=\"n\">").append(Text.xml(row.get(i))).append("</td>");
      }
      out.append("</tr>\n");
    }
    out.append("</tbody>\n</table>\n");
  }
}
