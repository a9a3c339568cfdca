package dev.affinity.bench.compare;

import dev.affinity.config.ConfigException;
import dev.affinity.config.ConfigLoader;
import dev.affinity.config.ConfigProblem;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.RouterFactory;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.representer.Representer;

/**
 * The fleet configuration a comparison starts from (a disaggregated YAML with embedded worker pools;
 * the built-in {@code bench/fleet.yaml} unless a file is named), and its variants: per policy, and
 * with other instance counts. Every variant is loaded through {@link ConfigLoader}, so it is
 * validated exactly like a configuration {@code serve} would run.
 */
public final class FleetConfigs {
  public static final String BUILT_IN = "bench/fleet.yaml";

  private final String source;
  private final Map<String, Object> yaml;

  private FleetConfigs(String source, String text) {
    this.source = source;
    ConfigLoader.parse(text, source);  // the base itself must be valid: errors name its lines
    Object root = new Yaml(new SafeConstructor(new LoaderOptions())).load(text);
    @SuppressWarnings("unchecked")
    Map<String, Object> map = (Map<String, Object>) root;
    this.yaml = map;
  }

  /** The built-in fleet ({@value #BUILT_IN}). */
  public static FleetConfigs builtIn() {
    try (InputStream in = FleetConfigs.class.getClassLoader().getResourceAsStream(BUILT_IN)) {
      if (in == null) {
        throw new IllegalStateException(BUILT_IN + " is missing from the classpath");
      }
      return new FleetConfigs(BUILT_IN + " (built in)", new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public static FleetConfigs load(Path file) throws IOException {
    return new FleetConfigs(file.toString(), Files.readString(file));
  }

  public String source() {
    return source;
  }

  /**
   * This fleet with {@code instances} context or generation instances (both the server section's
   * {@code num_instances} and the embedded pool's {@code instances}); {@code <= 0} keeps it.
   */
  public FleetConfigs withInstances(int context, int generation) {
    if (context <= 0 && generation <= 0) {
      return this;
    }
    Map<String, Object> y = deepCopy(yaml);
    setInstances(y, "context_servers", "context", context);
    setInstances(y, "generation_servers", "generation", generation);
    return new FleetConfigs(source + " (" + describeOverride(context, generation) + ")", dump(y));
  }

  private static String describeOverride(int context, int generation) {
    StringBuilder sb = new StringBuilder();
    if (context > 0) {
      sb.append(context).append(" context instances");
    }
    if (generation > 0) {
      sb.append(sb.length() > 0 ? ", " : "").append(generation).append(" generation instances");
    }
    return sb.toString();
  }

  @SuppressWarnings("unchecked")
  private static void setInstances(Map<String, Object> y, String section, String pool, int n) {
    if (n <= 0) {
      return;
    }
    if (y.get(section) instanceof Map<?, ?> s) {
      ((Map<String, Object>) s).put("num_instances", n);
      ((Map<String, Object>) s).remove("urls");
    }
    if (y.get("affinity") instanceof Map<?, ?> a && ((Map<String, Object>) a).get("workers") instanceof Map<?, ?> w
        && ((Map<String, Object>) w).get(pool) instanceof Map<?, ?> p) {
      ((Map<String, Object>) p).put("instances", n);
    } else {
      throw new IllegalArgumentException(pool + " instances can only be set for a fleet with affinity.workers." + pool);
    }
  }

  /** The configuration under {@code policy}, validated, its routers' arguments too (as {@code config check} does). */
  public DisaggConfig under(Policy policy) {
    DisaggConfig config = ConfigLoader.parse(dump(policy.applyTo(yaml)), source + " under policy " + policy.name()).config();
    List<ConfigProblem> problems = new RouterFactory().check(config);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return config;
  }

  /** The configuration as written (its own routers), validated. */
  public DisaggConfig asWritten() {
    return ConfigLoader.parse(dump(yaml), source).config();
  }

  private static String dump(Map<String, Object> y) {
    DumperOptions o = new DumperOptions();
    o.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
    return new Yaml(new Representer(o), o).dump(y);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> deepCopy(Map<String, Object> m) {
    Map<String, Object> out = new LinkedHashMap<>();
    m.forEach((k, v) -> out.put(k, v instanceof Map<?, ?> sub ? deepCopy((Map<String, Object>) sub) : v));
    return out;
  }
}
