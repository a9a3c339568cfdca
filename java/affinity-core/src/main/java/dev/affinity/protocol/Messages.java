package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import java.io.IOException;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * A chat request's {@code messages}: immutable, and shared by every copy of the request (its legs' bodies, a retry's),
 * so that their JSON is written once per request and copied into each leg body ({@link Serializer}). An agent's turn
 * carries its whole history here; the context leg and the generation leg each wrote all of it, escaping every
 * message's text, which on a {@code /v1/messages} turn (its text comes through a tree and keeps no spelling,
 * {@link JsonString}) was the larger part of the frontend's cost per turn (docs/benchmarks.md, "Agent turns against
 * the history").
 */
final class Messages extends AbstractList<ChatMessage> implements RandomAccess {
  private final List<ChatMessage> list;
  /** The messages' JSON array once written through a UTF-8 generator; null before. */
  private volatile RawJson json;

  private Messages(List<ChatMessage> list) {
    this.list = list;
  }

  /** {@code messages} as one shared list ({@code messages} itself when it is one), every element checked not null. */
  static List<ChatMessage> of(List<ChatMessage> messages, String field) {
    return messages instanceof Messages m ? m : new Messages(Json.list(messages, field));
  }

  @Override
  public ChatMessage get(int index) {
    return list.get(index);
  }

  @Override
  public int size() {
    return list.size();
  }

  /** Whether the JSON is kept (written once through a UTF-8 generator). */
  boolean kept() {
    return json != null;
  }

  /** The messages' JSON array: written by {@code factory}'s generator the first time, kept after. */
  private RawJson json(JsonFactory factory, SerializerProvider provider) throws IOException {
    RawJson j = json;
    if (j == null) {
      ByteArrayBuilder out = new ByteArrayBuilder();
      try (JsonGenerator g = factory.createGenerator(out)) {
        Serializer.writeEach(this, g, provider);
      }
      j = new RawJson(out.toByteArray());
      json = j;
    }
    return j;
  }

  /** Writes the messages: a copy of their JSON, written once, to a UTF-8 generator; else message by message. */
  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<List<ChatMessage>> {
    @Override
    public void serialize(List<ChatMessage> value, JsonGenerator gen, SerializerProvider provider) throws IOException {
      if (value instanceof Messages m && gen instanceof UTF8JsonGenerator && gen.getCodec() != null) {
        gen.writeRawValue(m.json(gen.getCodec().getFactory(), provider));
      } else {
        writeEach(value, gen, provider);
      }
    }

    private static void writeEach(List<ChatMessage> value, JsonGenerator gen, SerializerProvider provider)
        throws IOException {
      gen.writeStartArray(value, value.size());
      for (ChatMessage message : value) {
        provider.defaultSerializeValue(message, gen);
      }
      gen.writeEndArray();
    }
  }
}
