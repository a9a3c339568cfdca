package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import com.fasterxml.jackson.databind.JsonNode;

/** {@code disaggregated_params.schedule_style}, an integer on the wire (upstream {@code DisaggScheduleStyle}). */
public enum DisaggScheduleStyle {
  CONTEXT_FIRST(0),
  GENERATION_FIRST(1);

  private final int code;

  DisaggScheduleStyle(int code) {
    this.code = code;
  }

  @JsonValue
  public int code() {
    return code;
  }

  /** The constant for a wire code. */
  public static DisaggScheduleStyle fromCode(int code) {
    for (DisaggScheduleStyle s : values()) {
      if (s.code == code) {
        return s;
      }
    }
    throw ProtocolException.invalidField("",
        "must be 0 (context first) or 1 (generation first) (got " + code + ")");
  }

  @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
  static DisaggScheduleStyle fromJson(JsonNode node) {
    if (!node.isInt()) {
      throw ProtocolException.invalidField("", "expected 0 or 1 but got " + Json.describe(node));
    }
    return fromCode(node.intValue());
  }
}
