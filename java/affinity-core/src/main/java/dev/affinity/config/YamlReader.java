package dev.affinity.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Typed access to a composed SnakeYAML node tree that records a {@link ConfigProblem} (file, key
 * path, line, column, expected versus found) for every bad value instead of stopping at the first.
 */
final class YamlReader {
  private final String file;
  private final List<ConfigProblem> problems = new ArrayList<>();

  YamlReader(String file) {
    this.file = file;
  }

  List<ConfigProblem> problems() {
    return problems;
  }

  String file() {
    return file;
  }

  /** A path as the config gives it, resolved against the config file's folder (as is for an inline config). */
  java.nio.file.Path resolve(String value) {
    java.nio.file.Path f = java.nio.file.Path.of(value);
    if (!f.isAbsolute() && file != null && !file.startsWith("<")) {
      java.nio.file.Path parent = java.nio.file.Path.of(file).toAbsolutePath().getParent();
      f = parent == null ? f : parent.resolve(f);
    }
    return f.toAbsolutePath().normalize();
  }

  Location loc(Node n) {
    return n == null ? Location.unknown(file)
        : new Location(file, n.getStartMark().getLine() + 1, n.getStartMark().getColumn() + 1);
  }

  void error(Node at, String path, String message) {
    problems.add(new ConfigProblem(loc(at), path, message));
  }

  static String join(String path, String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  /** What a node is, for "found ..." messages. */
  static String describe(Node n) {
    if (n instanceof MappingNode) {
      return "a mapping";
    }
    if (n instanceof SequenceNode) {
      return "a list";
    }
    if (n instanceof ScalarNode s) {
      Tag t = s.getTag();
      String v = s.getValue();
      if (Tag.NULL.equals(t)) {
        return "null";
      }
      if (Tag.STR.equals(t)) {
        return "the string \"" + v + "\"";
      }
      if (Tag.BOOL.equals(t)) {
        return "the boolean " + v;
      }
      if (Tag.INT.equals(t)) {
        return "the integer " + v;
      }
      if (Tag.FLOAT.equals(t)) {
        return "the number " + v;
      }
      return "\"" + v + "\"";
    }
    return "an unsupported YAML node";
  }

  /** The entries of a mapping in order; duplicate or non-string keys are errors. */
  Map<String, NodeTuple> entries(Node n, String path) {
    Map<String, NodeTuple> out = new LinkedHashMap<>();
    if (!(n instanceof MappingNode m)) {
      error(n, path, "expected a mapping, found " + describe(n));
      return out;
    }
    for (NodeTuple t : m.getValue()) {
      if (!(t.getKeyNode() instanceof ScalarNode k)) {
        error(t.getKeyNode(), path, "expected a string key, found " + describe(t.getKeyNode()));
        continue;
      }
      if (out.containsKey(k.getValue())) {
        error(k, join(path, k.getValue()), "duplicate key (first at line "
            + loc(out.get(k.getValue()).getKeyNode()).line() + ")");
        continue;
      }
      out.put(k.getValue(), t);
    }
    return out;
  }

  static boolean isNull(Node n) {
    return n instanceof ScalarNode s && Tag.NULL.equals(s.getTag());
  }

  /** {@code {}}: a mapping without entries. */
  static boolean isEmptyMapping(Node n) {
    return n instanceof MappingNode m && m.getValue().isEmpty();
  }

  Optional<String> string(NodeTuple t, String path) {
    Node v = t.getValueNode();
    if (isNull(v)) {
      return Optional.empty();
    }
    if (v instanceof ScalarNode s && (Tag.STR.equals(s.getTag()) || Tag.INT.equals(s.getTag()) || Tag.FLOAT.equals(s.getTag()))) {
      return Optional.of(s.getValue());
    }
    error(v, path, "expected a string, found " + describe(v));
    return Optional.empty();
  }

  Optional<Long> integer(NodeTuple t, String path, long min, long max) {
    Node v = t.getValueNode();
    if (v instanceof ScalarNode s && Tag.INT.equals(s.getTag())) {
      try {
        long x = Long.decode(s.getValue().replace("_", ""));
        if (x < min || x > max) {
          error(v, path, "expected an integer in [" + min + ", " + max + "], found " + x);
          return Optional.empty();
        }
        return Optional.of(x);
      } catch (NumberFormatException e) {
        error(v, path, "expected an integer, found " + describe(v));
        return Optional.empty();
      }
    }
    error(v, path, "expected an integer, found " + describe(v));
    return Optional.empty();
  }

  Optional<Double> number(NodeTuple t, String path, double minExclusive) {
    Node v = t.getValueNode();
    if (v instanceof ScalarNode s && (Tag.INT.equals(s.getTag()) || Tag.FLOAT.equals(s.getTag()))) {
      try {
        double x = Double.parseDouble(s.getValue().replace("_", ""));
        if (!(x > minExclusive)) {
          error(v, path, "expected a number > " + minExclusive + ", found " + s.getValue());
          return Optional.empty();
        }
        return Optional.of(x);
      } catch (NumberFormatException e) {
        // fall through
      }
    }
    error(v, path, "expected a number, found " + describe(v));
    return Optional.empty();
  }

  Optional<Boolean> bool(NodeTuple t, String path) {
    Node v = t.getValueNode();
    if (v instanceof ScalarNode s && Tag.BOOL.equals(s.getTag())) {
      String x = s.getValue().toLowerCase(Locale.ROOT);
      return Optional.of(x.equals("true") || x.equals("yes") || x.equals("on") || x.equals("y"));
    }
    error(v, path, "expected true or false, found " + describe(v));
    return Optional.empty();
  }

  Optional<List<String>> stringList(NodeTuple t, String path) {
    Node v = t.getValueNode();
    if (!(v instanceof SequenceNode seq)) {
      error(v, path, "expected a list of strings, found " + describe(v));
      return Optional.empty();
    }
    List<String> out = new ArrayList<>();
    int i = 0;
    for (Node item : seq.getValue()) {
      if (item instanceof ScalarNode s && !isNull(s) && !Tag.BOOL.equals(s.getTag())) {
        out.add(s.getValue());
      } else {
        error(item, path + "[" + i + "]", "expected a string, found " + describe(item));
      }
      i++;
    }
    return Optional.of(out);
  }

  /** The node as plain Java: Map (ordered), List, String, Long, Double, Boolean or null. */
  Object plain(Node n) {
    if (n instanceof MappingNode m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (NodeTuple t : m.getValue()) {
        String key = t.getKeyNode() instanceof ScalarNode k ? k.getValue() : String.valueOf(plain(t.getKeyNode()));
        out.put(key, plain(t.getValueNode()));
      }
      return out;
    }
    if (n instanceof SequenceNode s) {
      List<Object> out = new ArrayList<>();
      for (Node item : s.getValue()) {
        out.add(plain(item));
      }
      return out;
    }
    if (n instanceof ScalarNode s) {
      Tag t = s.getTag();
      String v = s.getValue();
      try {
        if (Tag.NULL.equals(t)) {
          return null;
        }
        if (Tag.BOOL.equals(t)) {
          String x = v.toLowerCase(Locale.ROOT);
          return x.equals("true") || x.equals("yes") || x.equals("on") || x.equals("y");
        }
        if (Tag.INT.equals(t)) {
          return Long.decode(v.replace("_", ""));
        }
        if (Tag.FLOAT.equals(t)) {
          return Double.parseDouble(v.replace("_", ""));
        }
      } catch (NumberFormatException e) {
        return v;
      }
      return v;
    }
    return null;
  }
}
