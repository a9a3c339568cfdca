package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.NumberOutput;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JacksonStdImpl;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.RandomAccess;
import java.util.stream.IntStream;

/**
 * An immutable sequence of token ids; on the wire a flat JSON array of 32-bit integers. Used for
 * {@code prompt} (completions), {@code prompt_token_ids}, {@code first_gen_tokens}, {@code draft_tokens}
 * and {@code token_ids}.
 */
@JsonSerialize(using = TokenIds.Serializer.class)
@JsonDeserialize(using = TokenIds.Deserializer.class)
public final class TokenIds {

  private static final TokenIds EMPTY = new TokenIds(new int[0]);
  /** Sequences at least this long keep their JSON once written ({@link #writeTo}). */
  public static final int KEEP_JSON = 1024;
  /** Ids per chunk of kept JSON: a sequence that follows another shares its JSON a whole chunk at a time. */
  static final int CHUNK = 1024;

  private final int[] ids;
  /** The JSON array, written once for a long sequence (a prompt's ids go to both legs of a request); else null. */
  private volatile Written json;
  /**
   * The sequence this one follows ({@link #following}), whose JSON is shared where the two agree; dropped once this
   * one's JSON is written, so that a conversation's turns do not hold each other.
   */
  private volatile TokenIds base;

  private TokenIds(int[] ids) {
    this.ids = ids;
  }

  /**
   * A sequence's JSON once written, and where each chunk of {@link #CHUNK} ids starts in it: {@code marks[0]} is
   * after the {@code [}, {@code marks[j]} the comma before id {@code j * CHUNK}.
   */
  private record Written(JsonRope raw, int[] marks) {}

  /**
   * {@code ids} (not copied: the caller must not change them) as the next turn of a conversation whose last sequence
   * was {@code previous}: when written, the JSON of the chunks of ids the two share from the start is shared with
   * {@code previous}'s (the same pieces, {@link JsonRope}), and only the rest is written (an agent's turn re-sends its
   * whole history: the ids' digits were a quarter of the frontend's event loop per turn, docs/benchmarks.md, "Agent
   * turns against the history"). The ids are compared, so the JSON is the same as {@link #of}'s whatever
   * {@code previous} holds.
   */
  public static TokenIds following(TokenIds previous, int[] ids) {
    Objects.requireNonNull(ids, "ids");
    if (ids.length == 0) {
      return EMPTY;
    }
    TokenIds t = new TokenIds(ids);
    if (previous != null && previous.json != null && ids.length >= KEEP_JSON) {
      t.base = previous;
    }
    return t;
  }

  /** Whether this sequence's JSON is written and kept (a long sequence written once through a UTF-8 generator). */
  public boolean jsonKept() {
    return json != null;
  }

  /** The bytes of JSON this sequence keeps: 0 before it is written. */
  public long keptJsonBytes() {
    Written w = json;
    return w == null ? 0 : w.raw.length() + 4L * w.marks.length;
  }

  /** A copy of {@code ids}. */
  public static TokenIds of(int... ids) {
    Objects.requireNonNull(ids, "ids");
    return ids.length == 0 ? EMPTY : new TokenIds(ids.clone());
  }

  /** A copy of {@code ids}; no element may be null. */
  public static TokenIds copyOf(List<Integer> ids) {
    int[] array = new int[ids.size()];
    for (int i = 0; i < array.length; i++) {
      array[i] = Objects.requireNonNull(ids.get(i), "token id");
    }
    return array.length == 0 ? EMPTY : new TokenIds(array);
  }

  public int size() {
    return ids.length;
  }

  public boolean isEmpty() {
    return ids.length == 0;
  }

  public int get(int index) {
    return ids[index];
  }

  /** A fresh copy of the ids. */
  public int[] toArray() {
    return ids.clone();
  }

  public IntStream stream() {
    return Arrays.stream(ids);
  }

  /**
   * The ids as TensorRT-LLM's {@code prompt_token_ids_b64} spells them: base64 (standard alphabet, padded) of the
   * 32-bit little-endian integers one after another.
   */
  public String toBase64() {
    ByteBuffer bytes = ByteBuffer.allocate(ids.length * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    bytes.asIntBuffer().put(ids);
    return Base64.getEncoder().encodeToString(bytes.array());
  }

  /**
   * The ids a {@code prompt_token_ids_b64} string spells ({@link #toBase64()}).
   *
   * @throws ProtocolException (400, naming {@code field}) when it is not base64 of whole 32-bit integers
   */
  public static TokenIds fromBase64(String base64, String field) {
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(base64);
    } catch (IllegalArgumentException e) {
      throw ProtocolException.invalidField(field, "is not base64: " + e.getMessage());
    }
    if (bytes.length % Integer.BYTES != 0) {
      throw ProtocolException.invalidField(field, "decodes to " + bytes.length
          + " bytes, which are not whole 32-bit little-endian token ids");
    }
    int[] out = new int[bytes.length / Integer.BYTES];
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(out);
    return out.length == 0 ? EMPTY : new TokenIds(out);
  }

  /** An unmodifiable view. */
  public List<Integer> asList() {
    return new ListView(ids);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TokenIds t && Arrays.equals(t.ids, ids);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(ids);
  }

  @Override
  public String toString() {
    if (ids.length <= 16) {
      return Arrays.toString(ids);
    }
    return Arrays.toString(Arrays.copyOf(ids, 16)).replace("]", ", ... (" + ids.length + " ids)]");
  }

  /**
   * Reads a flat array of ints; the parser stands on the array's first token. Errors name the element
   * ({@code [3]}) relative to the array.
   */
  static TokenIds read(JsonParser p) throws IOException {
    if (p.currentToken() != JsonToken.START_ARRAY) {
      throw ProtocolException.invalidField("",
          "expected an array of integer token ids but got " + Json.describe(p.currentToken()));
    }
    return readElements(p, p.nextToken(), 0, new int[16]);
  }

  /**
   * Reads the rest of an array whose {@code count} first elements are already in {@code buffer} and
   * whose next token is {@code token}.
   */
  static TokenIds readElements(JsonParser p, JsonToken token, int count, int[] buffer) throws IOException {
    int n = count;
    int[] buf = buffer;
    for (JsonToken t = token; t != JsonToken.END_ARRAY; t = p.nextToken()) {
      if (t != JsonToken.VALUE_NUMBER_INT) {
        throw ProtocolException.invalidField("[" + n + "]",
            "expected an integer token id but got " + Json.describe(t));
      }
      if (p.getNumberType() != JsonParser.NumberType.INT) {
        throw ProtocolException.invalidField("[" + n + "]",
            "token id " + p.getText() + " is out of range (must fit in 32 bits)");
      }
      if (n == buf.length) {
        buf = Arrays.copyOf(buf, buf.length * 2);
      }
      buf[n++] = p.getIntValue();
    }
    return n == 0 ? EMPTY : new TokenIds(n == buf.length ? buf : Arrays.copyOf(buf, n));
  }

  /**
   * Writes the ids as a JSON array, as the serializer does. A long sequence written as UTF-8 keeps its JSON the first
   * time and writes its pieces every next time: a prompt's ids go into the context leg's body and the generation
   * leg's (one object: {@link ResponseScan}'s sent ids), and Jackson's number at a time was the frontend's largest
   * cost per agent turn once the messages were copied as spelled (docs/benchmarks.md, "Agent turns against the
   * history").
   */
  void writeTo(JsonGenerator gen) throws IOException {
    if (ids.length < KEEP_JSON || !(gen instanceof UTF8JsonGenerator)) {
      gen.writeArray(ids, 0, ids.length);
      return;
    }
    Written w = json;
    if (w == null) {
      w = jsonArray(ids, base);
      json = w;
      base = null;
    }
    w.raw.writeValue(gen);
  }

  /**
   * The length of this sequence's kept JSON ({@link #jsonKept}) when {@code bytes} holds exactly it from {@code at}
   * (compared at memory speed); -1 when it does not, or none is kept.
   */
  int keptJsonAt(byte[] bytes, int at) {
    Written w = json;
    if (w == null) {
      return -1;
    }
    return w.raw.equalsAt(bytes, at) ? w.raw.length() : -1;
  }

  /** How many ids the JSON shared with {@code base}'s covers (whole chunks they share from the start); 0 without. */
  static int sharedChunks(int[] ids, TokenIds base) {
    Written w = base == null ? null : base.json;
    if (w == null) {
      return 0;
    }
    int m = Arrays.mismatch(base.ids, ids);
    int same = m < 0 ? ids.length : m;
    // chunk c's start is known up to the base's last chunk, and its end (its ']') when the base is whole chunks
    return Math.min(same / CHUNK, base.ids.length / CHUNK == w.marks.length ? w.marks.length : w.marks.length - 1)
        * CHUNK;
  }

  /**
   * {@code [1,2,3]}: the ids' JSON, as Jackson writes an int array; for the chunks {@code base} shares with them, its
   * JSON's own arrays ({@link JsonRope#prefix}), and only the rest written.
   */
  private static Written jsonArray(int[] ids, TokenIds base) {
    int from = sharedChunks(ids, base);
    int[] marks = new int[(ids.length + CHUNK - 1) / CHUNK];
    JsonRope shared = null;
    int start = 0;  // where the bytes written here start in the whole JSON
    if (from > 0) {
      Written w = base.json;
      int chunks = from / CHUNK;
      start = chunks < w.marks.length ? w.marks[chunks] : w.raw.length() - 1;
      shared = w.raw.prefix(start);  // the same arrays: not copied
      System.arraycopy(w.marks, 0, marks, 0, chunks);
    }
    // the exact length first (a pass over the ids not copied), so the new bytes are allocated once, at their size
    long size = from == 0 ? 2 : 1;  // '[' and ']', or ']'
    for (int i = from; i < ids.length; i++) {
      size += intChars(ids[i]) + (i > 0 ? 1 : 0);
    }
    byte[] out = new byte[Math.toIntExact(size)];
    int at = 0;
    if (from == 0) {
      out[at++] = '[';
    }
    for (int i = from; i < ids.length; i++) {
      if (i % CHUNK == 0) {
        marks[i / CHUNK] = start + at;
      }
      if (i > 0) {
        out[at++] = ',';
      }
      at = NumberOutput.outputInt(ids[i], out, at);
    }
    out[at] = ']';  // the last of the exact length counted above
    return new Written(shared == null ? JsonRope.of(out) : shared.append(out), marks);
  }

  /** How many chars {@code v} takes in decimal ({@code NumberOutput.outputInt}'s). */
  static int intChars(int v) {
    long x = v;
    int sign = 0;
    if (x < 0) {
      sign = 1;
      x = -x;
    }
    long limit = 10;
    int digits = 1;
    while (digits < 10 && x >= limit) {
      limit *= 10;
      digits++;
    }
    return sign + digits;
  }

  static final class Deserializer extends JsonDeserializer<TokenIds> {
    @Override
    public TokenIds deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      return read(p);
    }
  }

  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<TokenIds> {
    @Override
    public void serialize(TokenIds value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
      value.writeTo(gen);
    }
  }

  /**
   * Writes a {@code prompt_token_ids_b64} string: base64 (standard alphabet and padding) needs no escaping, so a
   * UTF-8 generator gets its bytes copied as they are, without the escape check of every character of a string that
   * is a third larger than the ids; any other string (a client's junk) is escaped as usual.
   */
  // not @JacksonStdImpl: Blackbird would take the property for a plain string and write it with writeString
  static final class Base64Serializer extends JsonSerializer<String> {
    /** The base64 alphabet and its padding, by byte. */
    private static final boolean[] ALPHABET = new boolean[256];

    static {
      for (char c : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".toCharArray()) {
        ALPHABET[c] = true;
      }
    }

    @Override
    public void serialize(String value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
      if (gen instanceof UTF8JsonGenerator) {
        // a character outside Latin-1 turns into '?', which is not in the alphabet
        byte[] bytes = value.getBytes(StandardCharsets.ISO_8859_1);
        if (isBase64(bytes)) {
          gen.writeRawUTF8String(bytes, 0, bytes.length);
          return;
        }
      }
      gen.writeString(value);
    }

    private static boolean isBase64(byte[] bytes) {
      for (byte b : bytes) {
        if (!ALPHABET[b & 0xff]) {
          return false;
        }
      }
      return true;
    }
  }

  private static final class ListView extends AbstractList<Integer> implements RandomAccess {
    private final int[] ids;

    ListView(int[] ids) {
      this.ids = ids;
    }

    @Override
    public Integer get(int index) {
      return ids[index];
    }

    @Override
    public int size() {
      return ids.length;
    }
  }
}
