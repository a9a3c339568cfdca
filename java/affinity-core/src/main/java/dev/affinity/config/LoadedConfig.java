package dev.affinity.config;

import java.util.List;

/** A valid configuration and the warnings it deserves (printed at startup and by {@code config check}). */
public record LoadedConfig(DisaggConfig config, List<ConfigWarning> warnings) {
  public LoadedConfig {
    warnings = List.copyOf(warnings);
  }
}
