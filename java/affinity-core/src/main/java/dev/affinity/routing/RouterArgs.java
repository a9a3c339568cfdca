package dev.affinity.routing;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Typed access to a router's flat arguments. Reading collects errors (each naming the YAML
 * location, the argument, what was expected and found); {@link #done(Set)} throws them all and
 * rejects arguments the router does not know.
 */
public final class RouterArgs {
  /** Arguments every section adopts into its router (unused by most types). */
  public static final Set<String> ADOPTED = Set.of("max_batch_size", "max_num_tokens", "tokens_per_block");

  private final RouterConfig config;
  private final String path;
  private final Set<String> read = new HashSet<>();
  private final List<ConfigProblem> problems = new ArrayList<>();

  public RouterArgs(RouterConfig config, String sectionName) {
    this.config = config;
    this.path = sectionName + ".router";
  }

  public static RouterArgs of(String type, Map<String, Object> args) {
    return new RouterArgs(new RouterConfig(type, Location.unknown("<code>"), args, Map.of()), "router");
  }

  public String type() {
    return config.type();
  }

  private void error(String name, String message) {
    problems.add(new ConfigProblem(config.locationOf(name), path + "." + name, message));
  }

  public boolean has(String name) {
    return config.args().containsKey(name) && config.args().get(name) != null;
  }

  public long getLong(String name, long dflt, long min, long max) {
    read.add(name);
    Object v = config.args().get(name);
    if (v == null) {
      return dflt;
    }
    if (v instanceof Number n && (v instanceof Long || v instanceof Integer)) {
      long x = n.longValue();
      if (x < min || x > max) {
        error(name, "expected an integer in [" + min + ", " + max + "], found " + x);
        return dflt;
      }
      return x;
    }
    error(name, "expected an integer, found " + describe(v));
    return dflt;
  }

  public int getInt(String name, int dflt, int min, int max) {
    return (int) getLong(name, dflt, min, max);
  }

  public double getDouble(String name, double dflt, double min, double max) {
    read.add(name);
    Object v = config.args().get(name);
    if (v == null) {
      return dflt;
    }
    if (v instanceof String s && s.strip().equalsIgnoreCase("inf")) {
      return Double.POSITIVE_INFINITY;
    }
    if (v instanceof Number n) {
      double x = n.doubleValue();
      if (!(x >= min && x <= max)) {
        error(name, "expected a number in [" + min + ", " + max + "], found " + x);
        return dflt;
      }
      return x;
    }
    error(name, "expected a number, found " + describe(v));
    return dflt;
  }

  /** A margin (a number >= 0) or {@code false} (off, returned as -1); absent: -1 as well (callers check {@link #has}). */
  public double getMarginOrOff(String name) {
    read.add(name);
    Object v = config.args().get(name);
    if (v == null || Boolean.FALSE.equals(v)) {
      return -1;
    }
    if (v instanceof Number n && n.doubleValue() >= 0 && Double.isFinite(n.doubleValue())) {
      return n.doubleValue();
    }
    error(name, "expected a number >= 0, or false (off), found " + describe(v));
    return -1;
  }

  public boolean getBoolean(String name, boolean dflt) {
    read.add(name);
    Object v = config.args().get(name);
    if (v == null) {
      return dflt;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    error(name, "expected true or false, found " + describe(v));
    return dflt;
  }

  public String getString(String name, String dflt) {
    read.add(name);
    Object v = config.args().get(name);
    if (v == null) {
      return dflt;
    }
    if (v instanceof String s) {
      return s;
    }
    error(name, "expected a string, found " + describe(v));
    return dflt;
  }

  /** A string that must be one of {@code choices} (an error names them, and the default is returned). */
  public String getChoice(String name, String dflt, String... choices) {
    String v = getString(name, dflt);
    if (!List.of(choices).contains(v)) {
      error(name, "expected one of " + String.join(", ", choices) + ", found \"" + v + "\"");
      return dflt;
    }
    return v;
  }

  /** Accepts arguments that are known upstream but have no effect here. */
  public void accept(String... names) {
    read.addAll(List.of(names));
  }

  /** Throws every problem found, and one for each argument the router did not read. */
  public void done(Set<String> ignoredAdopted) {
    Set<String> known = new TreeSet<>(read);
    for (String name : config.args().keySet()) {
      if (!read.contains(name) && !ignoredAdopted.contains(name)) {
        error(name, "unknown argument for router type " + config.type() + " (known: " + String.join(", ", known) + ")");
      }
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
  }

  private static String describe(Object v) {
    return v instanceof String s ? "the string \"" + s + "\"" : String.valueOf(v);
  }
}
