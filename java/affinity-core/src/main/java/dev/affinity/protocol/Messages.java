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
  private volatile Written json;
  /**
   * The list this one follows ({@link #following}): its JSON is shared for the leading messages the two share (the same
   * objects); dropped once this list's JSON is written, so that a conversation's turns do not hold each other.
   */
  private volatile Messages base;
  /** {@code charsBefore[i]}: the content characters of the messages before {@code i}; null until counted. */
  private volatile long[] charsBefore;
  /** How many leading messages this list shares with {@link #base}. */
  private final int shared;

  /**
   * The JSON array and where each message's JSON ends in it ({@code ends[i]}: the offset after message {@code i}).
   */
  private record Written(JsonRope raw, int[] ends) {}

  private Messages(List<ChatMessage> list, Messages base, int shared) {
    this.list = list;
    this.base = shared > 0 ? base : null;
    this.shared = shared;
  }

  /** {@code messages} as one shared list ({@code messages} itself when it is one), every element checked not null. */
  static List<ChatMessage> of(List<ChatMessage> messages, String field) {
    return messages instanceof Messages m ? m : new Messages(Json.list(messages, field), null, 0);
  }

  /**
   * {@code messages} as a list whose JSON, once written, shares {@code previous}'s ({@link JsonRope}) for the leading
   * messages that are the very same objects (a conversation's next turn, {@code dev.affinity.admission.KeptTurns}): an
   * immutable message writes the same JSON every time, so only the others are written, where the whole history was
   * escaped again every turn on {@code /v1/messages} (its text keeps no spelling).
   */
  static List<ChatMessage> following(List<ChatMessage> previous, List<ChatMessage> messages, String field) {
    List<ChatMessage> list = Json.list(messages, field);
    if (!(previous instanceof Messages p)) {
      return new Messages(list, null, 0);
    }
    int n = 0;
    while (n < Math.min(p.size(), list.size()) && p.get(n) == list.get(n)) {
      n++;
    }
    return new Messages(list, p, n);
  }

  /**
   * The characters of the messages' contents ({@link ChatMessage#contentText}), summed: counted once, and for the
   * messages shared with the list this one follows taken from its count (admission reads it every request, and the
   * history's 400 message objects cost ~0.3 ms a turn to visit, their cache misses).
   */
  long textChars() {
    long[] c = charsBefore;
    if (c == null) {
      c = new long[list.size() + 1];
      Messages b = base;
      long[] known = b == null ? null : b.charsBefore;
      int from = known == null ? 0 : Math.min(shared, known.length - 1);
      if (from > 0) {
        System.arraycopy(known, 0, c, 0, from + 1);
      }
      for (int i = from; i < list.size(); i++) {
        c[i + 1] = c[i] + list.get(i).contentText().length();
      }
      charsBefore = c;
    }
    return c[c.length - 1];
  }

  @Override
  public ChatMessage get(int index) {
    return list.get(index);
  }

  @Override
  public int size() {
    return list.size();
  }

  /** The messages' own list's view (unmodifiable): copied in bulk, not an element and a size check at a time. */
  @Override
  public List<ChatMessage> subList(int fromIndex, int toIndex) {
    return list.subList(fromIndex, toIndex);
  }

  @Override
  public Object[] toArray() {
    return list.toArray();
  }

  /** Whether the JSON is kept (written once through a UTF-8 generator). */
  boolean kept() {
    return json != null;
  }

  /**
   * The messages' JSON array: written by {@code factory}'s generator the first time (the messages shared with the list
   * this one follows shared with its JSON), kept after.
   */
  private JsonRope json(JsonFactory factory, SerializerProvider provider) throws IOException {
    Written w = json;
    if (w == null) {
      w = write(factory, provider);
      json = w;
      base = null;
    }
    return w.raw;
  }

  private Written write(JsonFactory factory, SerializerProvider provider) throws IOException {
    Messages b = base;
    Written from = b == null ? null : b.json;
    int copied = from == null ? 0 : shared;
    int[] ends = new int[list.size()];
    // the shared messages are the same arrays as the last list's (not copied); only the others are written
    int start = copied > 0 ? from.ends[copied - 1] : 0;
    ByteArrayBuilder out = new ByteArrayBuilder();
    if (copied > 0) {
      System.arraycopy(from.ends, 0, ends, 0, copied);
    } else {
      out.write('[');
    }
    try (JsonGenerator g = factory.createGenerator(out)) {
      g.setRootValueSeparator(null);  // the messages are written one after another, as the array's elements
      for (int i = copied; i < list.size(); i++) {
        if (i > 0) {
          g.writeRaw(',');
        }
        provider.defaultSerializeValue(list.get(i), g);
        g.flush();
        ends[i] = start + out.size();
      }
    }
    out.write(']');
    byte[] written = out.toByteArray();
    return new Written(copied > 0 ? from.raw.prefix(start).append(written) : JsonRope.of(written), ends);
  }

  /** Writes the messages: their JSON, written once, to a UTF-8 generator; else message by message. */
  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<List<ChatMessage>> {
    @Override
    public void serialize(List<ChatMessage> value, JsonGenerator gen, SerializerProvider provider) throws IOException {
      if (value instanceof Messages m && gen instanceof UTF8JsonGenerator && gen.getCodec() != null) {
        m.json(gen.getCodec().getFactory(), provider).writeValue(gen);
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
