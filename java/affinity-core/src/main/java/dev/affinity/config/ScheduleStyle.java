package dev.affinity.config;

/** Which leg of a disaggregated request is sent first (upstream {@code DisaggScheduleStyle}). */
public enum ScheduleStyle {
  CONTEXT_FIRST(0),
  GENERATION_FIRST(1);

  private final int wireValue;

  ScheduleStyle(int wireValue) {
    this.wireValue = wireValue;
  }

  /** The value sent in {@code disaggregated_params.schedule_style}. */
  public int wireValue() {
    return wireValue;
  }

  public String yamlName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
