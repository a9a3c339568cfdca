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
import java.util.Base64;
import java.util.Objects;

/**
 * {@code disaggregated_params.encoded_opaque_state}: the context executor's transfer state for the
 * generation executor. On the wire it is base64 text, kept as received so that signatures over it
 * ({@code x-trtllm-disagg-auth}) see the very string. Made in process from the executor's bytes
 * ({@link #ofBytes}), it stays bytes: an in-process generation leg takes them back with {@link #bytes()}
 * without any base64, and the text is encoded only if the params are written as JSON (a generation leg to a
 * worker over HTTP) or signed. Immutable and thread-safe; equal when the texts are.
 */
@JsonSerialize(using = OpaqueState.Serializer.class)
@JsonDeserialize(using = OpaqueState.Deserializer.class)
public final class OpaqueState {
  /** The bytes; null until decoded when the state came as text. */
  private volatile byte[] bytes;
  /** The base64 text; null until encoded when the state came as bytes. */
  private volatile String text;

  private OpaqueState(byte[] bytes, String text) {
    this.bytes = bytes;
    this.text = text;
  }

  /** The state as the wire carries it (base64 text, not checked until {@link #bytes()} is asked for). */
  public static OpaqueState ofText(String base64) {
    return new OpaqueState(null, Objects.requireNonNull(base64, "base64"));
  }

  /** The state as an executor produced it (copied). */
  public static OpaqueState ofBytes(byte[] state) {
    return new OpaqueState(Objects.requireNonNull(state, "state").clone(), null);
  }

  /** Text as given, or the bytes' base64 (encoded on first use). */
  public String text() {
    String t = text;
    if (t == null) {
      t = Base64.getEncoder().encodeToString(bytes);
      text = t;
    }
    return t;
  }

  /**
   * A copy of the bytes: the executor's own when the state was made in process, else the text decoded.
   *
   * @throws IllegalArgumentException when the text is not base64
   */
  public byte[] bytes() {
    byte[] b = bytes;
    if (b == null) {
      b = Base64.getDecoder().decode(text);
      bytes = b;
    }
    return b.clone();
  }

  /** Whether the state was made in this process from bytes and never had to be encoded as text. */
  public boolean isUnencoded() {
    return text == null;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OpaqueState s && s.text().equals(text());
  }

  @Override
  public int hashCode() {
    return text().hashCode();
  }

  @Override
  public String toString() {
    return text();
  }

  @JacksonStdImpl // stateless: Blackbird keeps its generated accessor for the property (FastSerializersTest)
  static final class Serializer extends JsonSerializer<OpaqueState> {
    @Override
    public void serialize(OpaqueState value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
      gen.writeString(value.text());
    }
  }

  static final class Deserializer extends JsonDeserializer<OpaqueState> {
    @Override
    public OpaqueState deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      if (p.currentToken() != JsonToken.VALUE_STRING) {
        throw ProtocolException.invalidField("", "expected a string but got " + Json.describe(p.currentToken()));
      }
      return ofText(p.getText());
    }
  }
}
