package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonValue;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
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

  /** String content. */
  record Text(@JsonValue String value) implements MessageContent {
    public Text {
      Objects.requireNonNull(value, "value");
    }

    @Override
    public String text() {
      return value;
    }
  }

  /** Array content. */
  record Parts(@JsonValue List<ContentPart> parts) implements MessageContent {
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

    @JsonValue
    Object json() {
      return null;
    }

    @Override
    public String text() {
      return "";
    }
  }

  final class Deserializer extends JsonDeserializer<MessageContent> {
    @Override
    public MessageContent deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_STRING) {
        return new Text(p.getText());
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
