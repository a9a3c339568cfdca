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
import java.util.Objects;

/**
 * The {@code prompt} of a completion request, in the only shapes the disaggregated frontend serves: one
 * string or one flat list of token ids. On input a one-element list is unwrapped ({@code ["hi"]} is
 * {@code "hi"}, {@code [[1,2]]} is {@code [1,2]}); an empty list and multi-prompt batches are rejected.
 */
@JsonSerialize(using = Prompt.Serializer.class)
@JsonDeserialize(using = Prompt.Deserializer.class)
public sealed interface Prompt permits Prompt.Text, Prompt.Tokens {

  static Prompt text(String text) {
    return new Text(text);
  }

  static Prompt tokens(TokenIds ids) {
    return new Tokens(ids);
  }

  /** A text prompt, to be tokenized by the worker. */
  record Text(String text) implements Prompt {
    public Text {
      Objects.requireNonNull(text, "text");
    }
  }

  /** A pre-tokenized prompt. */
  record Tokens(TokenIds ids) implements Prompt {
    public Tokens {
      Objects.requireNonNull(ids, "ids");
      if (ids.isEmpty()) {
        throw ProtocolException.invalidField("prompt", "must not be empty");
      }
    }
  }

  /**
   * Writes the string or the array of ids (not {@code @JsonValue}, which reads the value by reflection on every leg).
   */
  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  final class Serializer extends JsonSerializer<Prompt> {
    @Override
    public void serialize(Prompt value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
      if (value instanceof Text t) {
        gen.writeString(t.text());
      } else {
        ((Tokens) value).ids().writeTo(gen);
      }
    }
  }

  /** Reads the accepted shapes; errors name positions relative to {@code prompt}. */
  final class Deserializer extends JsonDeserializer<Prompt> {
    private static final String BATCH =
        "multi-prompt batches are not supported; send one prompt (a string or a flat array of token ids) "
            + "per request";

    @Override
    public Prompt deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_STRING) {
        return new Text(p.getText());
      }
      if (t != JsonToken.START_ARRAY) {
        throw ProtocolException.invalidField("",
            "expected a string or an array of integer token ids but got " + Json.describe(t));
      }
      JsonToken first = p.nextToken();
      switch (first) {
        case END_ARRAY:
          throw ProtocolException.invalidField("", "must not be empty");
        case VALUE_NUMBER_INT:
          return new Tokens(TokenIds.readElements(p, first, 0, new int[64]));
        case VALUE_STRING: {
          String text = p.getText();
          requireEnd(p);
          return new Text(text);
        }
        case START_ARRAY: {
          TokenIds ids;
          try {
            ids = TokenIds.read(p);
          } catch (ProtocolException e) {
            throw e.withFieldPrefix("[0]");
          }
          if (ids.isEmpty()) {
            throw ProtocolException.invalidField("[0]", "must not be empty");
          }
          requireEnd(p);
          return new Tokens(ids);
        }
        default:
          throw ProtocolException.invalidField("[0]",
              "expected a string, an integer token id or an array of token ids but got " + Json.describe(first));
      }
    }

    private static void requireEnd(JsonParser p) throws IOException {
      if (p.nextToken() != JsonToken.END_ARRAY) {
        throw ProtocolException.invalidField("", BATCH);
      }
    }
  }
}
