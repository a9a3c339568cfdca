package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A value that is a single string or a list of strings on the wire ({@code stop},
 * {@code ctx_info_endpoint}). It remembers which form was sent and writes the same form back.
 *
 * @param values the strings; exactly one when {@code single}
 * @param single whether the wire form is a bare string
 */
@JsonSerialize(using = StringOrList.Serializer.class)
@JsonDeserialize(using = StringOrList.Deserializer.class)
public record StringOrList(List<String> values, boolean single) {

  public StringOrList {
    values = List.copyOf(values);
    if (single && values.size() != 1) {
      throw new IllegalArgumentException("a single string form holds exactly one value");
    }
  }

  /** The bare-string form. */
  public static StringOrList of(String value) {
    return new StringOrList(List.of(Objects.requireNonNull(value, "value")), true);
  }

  /** The list form (also for one element). */
  public static StringOrList ofList(List<String> values) {
    return new StringOrList(values, false);
  }

  /** The first value, or null for an empty list. */
  public String first() {
    return values.isEmpty() ? null : values.get(0);
  }

  static final class Deserializer extends JsonDeserializer<StringOrList> {
    @Override
    public StringOrList deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_STRING) {
        return of(p.getText());
      }
      if (t != JsonToken.START_ARRAY) {
        throw ProtocolException.invalidField("",
            "expected a string or an array of strings but got " + Json.describe(t));
      }
      List<String> values = new ArrayList<>();
      for (t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
        if (t != JsonToken.VALUE_STRING) {
          throw ProtocolException.invalidField("[" + values.size() + "]",
              "expected a string but got " + Json.describe(t));
        }
        values.add(p.getText());
      }
      return ofList(values);
    }
  }

  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<StringOrList> {
    @Override
    public void serialize(StringOrList value, JsonGenerator gen, SerializerProvider serializers)
        throws IOException {
      if (value.single) {
        gen.writeString(value.values.get(0));
        return;
      }
      gen.writeStartArray(value.values, value.values.size());
      for (String s : value.values) {
        gen.writeString(s);
      }
      gen.writeEndArray();
    }
  }
}
