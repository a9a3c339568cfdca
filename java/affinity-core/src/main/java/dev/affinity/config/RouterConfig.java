package dev.affinity.config;

import java.util.Map;

/**
 * A fleet's router: its {@code type} and the flat arguments beside it (upstream semantics; the
 * section's {@code max_batch_size}, {@code max_num_tokens} and {@code kv_cache_config.tokens_per_block}
 * are adopted as arguments unless set). Values are plain Java (String, Long, Double, Boolean, List,
 * Map). {@code argLocations} tells where each argument was written, for errors raised when the
 * router is built.
 */
public record RouterConfig(String type, Location typeLocation, Map<String, Object> args,
    Map<String, Location> argLocations) {

  public static final String DEFAULT_TYPE = "round_robin";

  public RouterConfig {
    args = Map.copyOf(args);
    argLocations = Map.copyOf(argLocations);
  }

  public Location locationOf(String arg) {
    return argLocations.getOrDefault(arg, typeLocation);
  }
}
