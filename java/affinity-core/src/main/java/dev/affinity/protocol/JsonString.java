package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.json.UTF8JsonGenerator;
import com.fasterxml.jackson.core.json.UTF8StreamJsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import java.io.IOException;

/**
 * A JSON string as a client's body spelled it: the escaped UTF-8 between its quotes, in the body's own array
 * ({@code source[from, to)}). Writing it back copies those bytes instead of escaping the decoded text again, which
 * for an agent's history (code, tool results: quotes, backslashes and newlines in every line) was the frontend's
 * largest cost per turn: each leg body escaped every message of the history anew (docs/benchmarks.md, "Agent turns
 * against the history"). The bytes are valid JSON string content because the parser read them as such; a worker
 * decodes them to the same text.
 */
public record JsonString(byte[] source, int from, int to) {

  /** The attribute under which a body's bytes reach the deserializers ({@link ProtocolCodec}'s client reads). */
  static final Object SOURCE = JsonString.class;
  /**
   * The attribute that asks for each spelling to be copied out of the body ({@link ProtocolCodec#parseKeptChatRequest}):
   * a request kept beyond its body holds only its own strings' bytes.
   */
  static final Object OWN = new Object();

  /**
   * The string {@code p} has just read ({@link JsonParser#getText()} called), as the body spelled it; null when the
   * parser does not read the body's bytes directly (a tree, a buffered replay), or the body is unknown.
   */
  static JsonString read(JsonParser p, DeserializationContext ctxt) {
    if (!(p instanceof UTF8StreamJsonParser) || !(ctxt.getAttribute(SOURCE) instanceof byte[] source)) {
      return null;
    }
    long start = p.currentTokenLocation().getByteOffset();
    long end = p.currentLocation().getByteOffset();
    if (start < 0 || end > source.length || end - start < 2 || source[(int) start] != '"'
        || source[(int) end - 1] != '"') {
      return null;
    }
    if (ctxt.getAttribute(OWN) != null) {
      return new JsonString(java.util.Arrays.copyOfRange(source, (int) start + 1, (int) end - 1), 0,
          (int) (end - start - 2));
    }
    return new JsonString(source, (int) start + 1, (int) end - 1);
  }

  /**
   * Writes the string: its bytes as they were to a UTF-8 JSON generator, else ({@code text}, for a tree or a
   * character writer) escaped as usual.
   */
  void writeTo(JsonGenerator gen, String text) throws IOException {
    if (gen instanceof UTF8JsonGenerator) {
      gen.writeRawUTF8String(source, from, to - from);
    } else {
      gen.writeString(text);
    }
  }
}
