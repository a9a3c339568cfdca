package dev.affinity.server.metrics;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A scrape in Prometheus's text format, read the way Prometheus reads it: TYPE lines and one sample per line. */
record PrometheusText(Map<String, String> types, Map<String, Double> samples) {
  static PrometheusText parse(String text) {
    Map<String, String> types = new LinkedHashMap<>();
    Map<String, Double> samples = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.startsWith("# TYPE ")) {
        String[] p = line.split(" ");
        types.put(p[2], p[3]);
      } else if (!line.isBlank() && !line.startsWith("#")) {
        int space = line.lastIndexOf(' ');
        samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
      }
    }
    return new PrometheusText(types, samples);
  }

  /** The value of the sample with exactly this name and label set (as printed), or NaN. */
  double value(String series) {
    return samples.getOrDefault(series, Double.NaN);
  }

  /** The names of every series (without labels). */
  Set<String> names() {
    Set<String> names = new TreeSet<>();
    for (String s : samples.keySet()) {
      int brace = s.indexOf('{');
      names.add(brace < 0 ? s : s.substring(0, brace));
    }
    return names;
  }

  /** The {@code le} bounds of a histogram's buckets, in order, without +Inf. */
  java.util.List<Double> buckets(String histogram) {
    java.util.List<Double> out = new java.util.ArrayList<>();
    for (String s : samples.keySet()) {
      if (s.startsWith(histogram + "_bucket{")) {
        String le = s.substring(s.indexOf("le=\"") + 4, s.indexOf('"', s.indexOf("le=\"") + 4));
        if (!le.equals("+Inf")) {
          out.add(Double.parseDouble(le));
        }
      }
    }
    return out;
  }
}
