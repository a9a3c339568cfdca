package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import com.fasterxml.jackson.databind.JsonNode;

/** {@code disaggregated_params.request_type}, written as its wire string. */
public enum DisaggRequestType {
  CONTEXT_ONLY("context_only"),
  GENERATION_ONLY("generation_only"),
  CONTEXT_AND_GENERATION("context_and_generation");

  private final String wire;

  DisaggRequestType(String wire) {
    this.wire = wire;
  }

  @JsonValue
  public String wire() {
    return wire;
  }

  /** The constant for a wire string. */
  public static DisaggRequestType fromWire(String value) {
    for (DisaggRequestType t : values()) {
      if (t.wire.equals(value)) {
        return t;
      }
    }
    throw ProtocolException.invalidField("",
        "must be one of context_only, generation_only, context_and_generation (got '" + value + "')");
  }

  @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
  static DisaggRequestType fromJson(JsonNode node) {
    if (!node.isTextual()) {
      throw ProtocolException.invalidField("", "expected a string but got " + Json.describe(node));
    }
    return fromWire(node.textValue());
  }
}
