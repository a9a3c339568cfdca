package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * A message's {@code content}: a string, an array of {@link ContentPart}s, or an explicit JSON
 * {@code null}. The explicit null is kept (as {@link ExplicitNull}) rather than folded into "absent",
 * because chat templates can tell a {@code null} content from a missing one; a message without
 * {@code content} has a null {@link ChatMessage#content()}.
 */
@JsonSerialize(using = MessageContent.Serializer.class)
@JsonDeserialize(using = MessageContent.Deserializer.class)
public sealed interface MessageContent permits MessageContent.Text, MessageContent.Parts, MessageContent.ExplicitNull {

  /**
   * The text a tokenizer would see from this content: the string, or the text parts joined with
   * {@code "\n"} (non-text parts contribute nothing), or "" for null.
   */
  String text();

  static MessageContent of(String text) {
    return new Text(text);
  }

  static MessageContent of(List<ContentPart> parts) {
    return new Parts(parts);
  }

  /**
   * String content.
   *
   * @param json the string as the client's body spelled it ({@link JsonString}), written back as it was; null when
   *     the text did not come from a body. Equality and hash are the text's alone.
   */
  record Text(String value, JsonString json) implements MessageContent {
    public Text {
      Objects.requireNonNull(value, "value");
    }

    public Text(String value) {
      this(value, null);
    }

    @Override
    public String text() {
      return value;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Text t && t.value.equals(value);
    }

    @Override
    public int hashCode() {
      return value.hashCode();
    }

    @Override
    public String toString() {
      return "Text[value=" + value + "]";
    }
  }

  /** Array content. */
  record Parts(List<ContentPart> parts) implements MessageContent {
    public Parts {
      parts = List.copyOf(parts);
    }

    @Override
    public String text() {
      return parts.stream().filter(ContentPart::isText).map(ContentPart::text).collect(Collectors.joining("\n"));
    }
  }

  /** {@code "content": null}, written back as null. */
  enum ExplicitNull implements MessageContent {
    INSTANCE;

    @Override
    public String text() {
      return "";
    }
  }

  /**
   * Writes the string, the array of parts or null (not {@code @JsonValue}, which reads the value by reflection for
   * every message of every leg).
   */
  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  final class Serializer extends JsonSerializer<MessageContent> {
    @Override
    public void serialize(MessageContent value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
      if (value instanceof Text t) {
        if (t.json() != null) {
          t.json().writeTo(gen, t.value());
        } else {
          gen.writeString(t.value());
        }
      } else if (value instanceof Parts p) {
        gen.writeStartArray(p.parts(), p.parts().size());
        for (ContentPart part : p.parts()) {
          serializers.defaultSerializeValue(part, gen);
        }
        gen.writeEndArray();
      } else {
        gen.writeNull();
      }
    }
  }

  final class Deserializer extends JsonDeserializer<MessageContent> {
    @Override
    public MessageContent deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_STRING) {
        String text = p.getText();
        return new Text(text, JsonString.read(p, ctxt));
      }
      if (t != JsonToken.START_ARRAY) {
        throw ProtocolException.invalidField("",
            "expected a string, an array of content parts, or null but got " + Json.describe(t));
      }
      List<ContentPart> parts = new ArrayList<>();
      for (t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
        int index = parts.size();
        if (t != JsonToken.START_OBJECT) {
          throw ProtocolException.invalidField("[" + index + "]",
              "expected a content part object but got " + Json.describe(t));
        }
        try {
          parts.add(ctxt.readValue(p, ContentPart.class));
        } catch (JsonMappingException e) {
          throw JsonMappingException.wrapWithPath(e, parts, index);
        }
      }
      return new Parts(parts);
    }

    @Override
    public MessageContent getNullValue(DeserializationContext ctxt) {
      return ExplicitNull.INSTANCE;
    }

    @Override
    public Object getAbsentValue(DeserializationContext ctxt) {
      return null;
    }
  }
}
