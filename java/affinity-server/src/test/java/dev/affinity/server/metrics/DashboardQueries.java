package dev.affinity.server.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The metric names a Grafana dashboard's PromQL queries read. */
final class DashboardQueries {
  private static final Set<String> PROMQL = Set.of("sum", "avg", "min", "max", "count", "rate", "irate", "increase",
      "histogram_quantile", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
      "label_values", "clamp_min", "clamp_max", "topk", "bottomk", "offset", "bool", "abs", "delta", "deriv");
  private static final Pattern IDENT = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");

  private DashboardQueries() {}

  /** Every metric name in every panel target's {@code expr}. */
  static Set<String> metricNames(JsonNode dashboard) {
    Set<String> names = new TreeSet<>();
    for (JsonNode panel : dashboard.path("panels")) {
      for (JsonNode target : panel.path("targets")) {
        names.addAll(metricNames(target.path("expr").asText()));
      }
    }
    return names;
  }

  /** The metric names one PromQL expression reads (label matchers, ranges, grouping labels and functions left out). */
  static Set<String> metricNames(String expr) {
    String e = expr.replaceAll("\\{[^}]*}", " ")
        .replaceAll("\\[[^]]*]", " ")
        .replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " ");
    Set<String> names = new TreeSet<>();
    Matcher m = IDENT.matcher(e);
    while (m.find()) {
      String id = m.group();
      boolean variable = m.start() > 0 && e.charAt(m.start() - 1) == '$';
      if (!variable && !PROMQL.contains(id)) {
        names.add(id);
      }
    }
    return names;
  }
}
