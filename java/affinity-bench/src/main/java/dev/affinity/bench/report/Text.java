package dev.affinity.bench.report;

import java.util.Locale;

/** Text helpers shared by the writers: number formatting, escaping and file names. */
final class Text {
  private Text() {}

  /** {@code v} with {@code decimals} fixed decimals, in the root locale (never "-0.0"). */
  static String fixed(double v, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", v + 0.0);
  }

  /** {@code s} escaped for XML and HTML text and attribute values. */
  static String xml(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> out.append("&amp;");
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  /** {@code s} made safe for a Markdown table cell: pipes escaped, line breaks turned into spaces. */
  static String markdownCell(String s) {
    return s.replace("|", "\\|").replace("\r\n", " ").replace('\n', ' ').replace('\r', ' ');
  }

  /** {@code s} with every character outside {@code [A-Za-z0-9._-]} replaced by {@code _}. */
  static String fileStem(String s) {
    return s.replaceAll("[^A-Za-z0-9._-]", "_");
  }
}
