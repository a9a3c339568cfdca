package dev.affinity.config;

/**
 * Which fleets route a sub-agent by its parent's id ({@code subagent_affinity_scope}). {@code CONTEXT}
 * (default) pins only the context leg; {@code BOTH} also pins generation, which upstream measured
 * to regress TTFT because siblings queue for the same decode slots.
 */
public enum SubagentScope {
  CONTEXT,
  BOTH;

  public String yamlName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
