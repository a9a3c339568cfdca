package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
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
 * {@code disaggregated_params.schedule_style}, an integer on the wire (upstream {@code DisaggScheduleStyle}). Read and
 * written by the nested classes rather than {@code @JsonValue}/{@code @JsonCreator}, which go through reflection (and a
 * tree) on every leg.
 */
@JsonSerialize(using = DisaggScheduleStyle.Serializer.class)
@JsonDeserialize(using = DisaggScheduleStyle.Deserializer.class)
public enum DisaggScheduleStyle {
  CONTEXT_FIRST(0),
  GENERATION_FIRST(1);

  private final int code;

  DisaggScheduleStyle(int code) {
    this.code = code;
  }

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

  /** 0 or 1 as a JSON int, or the error {@link #fromCode} names; anything else is named by its type. */
  static final class Deserializer extends JsonDeserializer<DisaggScheduleStyle> {
    @Override
    public DisaggScheduleStyle deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      if (p.currentToken() != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT) {
        JsonNode node = ctxt.readTree(p);
        throw ProtocolException.invalidField("", "expected 0 or 1 but got " + Json.describe(node));
      }
      return fromCode(p.getIntValue());
    }
  }

  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<DisaggScheduleStyle> {
    @Override
    public void serialize(DisaggScheduleStyle value, JsonGenerator gen, SerializerProvider serializers)
        throws IOException {
      gen.writeNumber(value.code);
    }
  }
}
