package dev.affinity.server.worker;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.affinity.protocol.ProtocolException;
import java.io.IOException;

/**
 * Checks a streamed chunk's JSON on its way to the client without building objects: one pass of the
 * streaming parser over the bytes. It refuses what is not one well-formed JSON object (as a parse of the
 * chunk did before it was relayed as bytes) and says whether the chunk carries what the call's report
 * needs — {@code usage} at the top, or {@code disaggregated_params} in a choice — so that only such
 * chunks (in practice the last one) are parsed into objects. Thread-safe.
 */
final class ChunkScanner {
  private static final JsonFactory JSON = new JsonFactory();

  private ChunkScanner() {}

  /**
   * Scans {@code length} bytes at {@code offset}.
   *
   * @return whether the chunk has a non-null top-level {@code usage} or a {@code disaggregated_params}
   *     field below the top
   * @throws ProtocolException (502) when the bytes are not exactly one JSON object
   */
  static boolean scan(byte[] buffer, int offset, int length) {
    try (JsonParser p = JSON.createParser(buffer, offset, length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw ProtocolException.of(ProtocolException.BAD_GATEWAY, "a stream chunk must be a JSON object", null);
      }
      boolean report = false;
      int depth = 1;
      while (depth > 0) {
        JsonToken t = p.nextToken();
        if (t == null) {
          throw ProtocolException.of(ProtocolException.BAD_GATEWAY, "malformed JSON: the chunk ends early", null);
        }
        switch (t) {
          case START_OBJECT, START_ARRAY -> depth++;
          case END_OBJECT, END_ARRAY -> depth--;
          case FIELD_NAME -> {
            String name = p.currentName();
            if (depth == 1 && name.equals("usage")) {
              report |= p.nextToken() != JsonToken.VALUE_NULL;
              if (p.currentToken().isStructStart()) {
                p.skipChildren();
              }
            } else if (depth > 1 && name.equals("disaggregated_params")) {
              report = true;
            }
          }
          default -> { }
        }
      }
      if (p.nextToken() != null) {
        throw ProtocolException.of(ProtocolException.BAD_GATEWAY,
            "malformed JSON: unexpected content after the chunk", null);
      }
      return report;
    } catch (IOException e) {
      throw ProtocolException.of(ProtocolException.BAD_GATEWAY, "malformed JSON: " + e.getMessage(), e);
    }
  }
}
