package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.io.IOException;

/**
 * {@code disaggregated_params.request_type}, written as its wire string. Read and written by the nested classes rather
 * than {@code @JsonValue}/{@code @JsonCreator}, which call the accessor and the factory through reflection on every
 * leg (and read each value into a tree first).
 */
@JsonSerialize(using = DisaggRequestType.Serializer.class)
@JsonDeserialize(using = DisaggRequestType.Deserializer.class)
public enum DisaggRequestType {
  CONTEXT_ONLY("context_only"),
  GENERATION_ONLY("generation_only"),
  CONTEXT_AND_GENERATION("context_and_generation");

  /** The wire string, encoded once for the serializer. */
  private final SerializedString wire;

  DisaggRequestType(String wire) {
    this.wire = new SerializedString(wire);
  }

  public String wire() {
    return wire.getValue();
  }

  /** The constant for a wire string. */
  public static DisaggRequestType fromWire(String value) {
    for (DisaggRequestType t : values()) {
      if (t.wire().equals(value)) {
        return t;
      }
    }
    throw ProtocolException.invalidField("",
        "must be one of context_only, generation_only, context_and_generation (got '" + value + "')");
  }

  /** The wire string of each constant, or the error {@link #fromWire} names; anything else is named by its type. */
  static final class Deserializer extends JsonDeserializer<DisaggRequestType> {
    @Override
    public DisaggRequestType deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      if (p.currentToken() != JsonToken.VALUE_STRING) {
        JsonNode node = ctxt.readTree(p);
        throw ProtocolException.invalidField("", "expected a string but got " + Json.describe(node));
      }
      return fromWire(p.getText());
    }
  }

  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<DisaggRequestType> {
    @Override
    public void serialize(DisaggRequestType value, JsonGenerator gen, SerializerProvider serializers)
        throws IOException {
      gen.writeString(value.wire);
    }
  }
}
