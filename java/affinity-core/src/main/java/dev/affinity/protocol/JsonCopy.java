package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The field-level steps of {@link ResponseScanner}'s walk over a worker's answer: modelled values read and checked
 * with their records' rules ({@code usage} by hand), copied to the generator when there is one (left out when null, as
 * the records write them), unmodelled values copied as a {@code JsonNode} of the codec would write them. Whatever the
 * records would treat differently throws {@link GiveUp}.
 */
abstract class JsonCopy {
  final ProtocolCodec codec;
  final JsonParser p;
  /** Where the copy goes; null when nothing is copied. */
  final JsonGenerator g;

  JsonCopy(ProtocolCodec codec, JsonParser p, JsonGenerator g) {
    this.codec = codec;
    this.p = p;
    this.g = g;
  }

  /** Thrown where the record path would treat the answer differently; never escapes {@link ResponseScan#scan}. */
  static final class GiveUp extends RuntimeException {
    GiveUp() {
      super(null, null, false, false);
    }
  }

  /**
   * The field names of one object so far. A repeated name makes the scan give up: the records keep the last value
   * at the first one's place (cheaper than the parser's own duplicate detection, which hashes every name).
   */
  static final class Names {
    private String[] names = new String[8];
    private int count;
    private Set<String> many;

    String add(String name) {
      if (many != null) {
        if (!many.add(name)) {
          throw new GiveUp();
        }
        return name;
      }
      for (int i = 0; i < count; i++) {
        if (names[i].equals(name)) {
          throw new GiveUp();
        }
      }
      if (count == names.length) {
        many = new HashSet<>(Arrays.asList(names));
        many.add(name);
        return name;
      }
      names[count++] = name;
      return name;
    }
  }

  /**
   * A {@link UsageInfo} as its record reads it (counts must be ints; other fields are kept as JSON trees); the
   * parser stands on its start.
   */
  final UsageInfo readUsage() throws IOException {
    Integer prompt = null;
    Integer completion = null;
    Integer total = null;
    PromptTokensDetails details = null;
    Map<String, JsonNode> extra = null;
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      switch (name) {
        case "prompt_tokens" -> prompt = count(t);
        case "completion_tokens" -> completion = count(t);
        case "total_tokens" -> total = count(t);
        case "prompt_tokens_details" -> {
          if (t == JsonToken.VALUE_NULL) {
            details = null;
          } else {
            expect(t, JsonToken.START_OBJECT);
            details = readDetails();
          }
        }
        default -> extra = extra(extra, name);
      }
    }
    return new UsageInfo(prompt, completion, total, details, extra);
  }

  final PromptTokensDetails readDetails() throws IOException {
    Integer cached = null;
    Map<String, JsonNode> extra = null;
    Names seen = new Names();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = seen.add(p.currentName());
      JsonToken t = p.nextToken();
      if (name.equals("cached_tokens")) {
        cached = count(t);
      } else {
        extra = extra(extra, name);
      }
    }
    return new PromptTokensDetails(cached, extra);
  }

  /** An {@code Integer} count: null, or an int. */
  final Integer count(JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NULL) {
      return null;
    }
    expect(t, JsonToken.VALUE_NUMBER_INT);
    if (p.getNumberType() != JsonParser.NumberType.INT) {
      throw new GiveUp();
    }
    return p.getIntValue();
  }

  /** {@code extra} with the value the parser stands on added as a JSON tree, as the records' any-setter keeps it. */
  final Map<String, JsonNode> extra(Map<String, JsonNode> extra, String name) throws IOException {
    Map<String, JsonNode> m = extra == null ? new LinkedHashMap<>() : extra;
    m.put(name, codec.readValue(p, JsonNode.class));
    return m;
  }

  /** Token ids: read, and copied unless null (left out, as the records write it); the ids, or null. */
  final TokenIds tokenIds(String name, JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NULL) {
      return null;
    }
    TokenIds ids = TokenIds.read(p);
    if (g != null) {
      g.writeFieldName(name);
      ids.writeTo(g);
    }
    return ids;
  }

  /** A modelled string: left out when null (as the records write it), refused when not a string. */
  final void string(String name, JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NULL) {
      return;
    }
    expect(t, JsonToken.VALUE_STRING);
    if (g != null) {
      g.writeFieldName(name);
      g.writeString(p.getText());
    }
  }

  /** A modelled {@code Integer} ({@code intOnly}) or {@code Long}: left out when null. */
  final void integer(String name, JsonToken t, boolean intOnly) throws IOException {
    if (t == JsonToken.VALUE_NULL) {
      return;
    }
    expect(t, JsonToken.VALUE_NUMBER_INT);
    JsonParser.NumberType type = p.getNumberType();
    if (type != JsonParser.NumberType.INT && (intOnly || type != JsonParser.NumberType.LONG)) {
      throw new GiveUp();
    }
    if (g != null) {
      g.writeFieldName(name);
      if (intOnly) {
        g.writeNumber(p.getIntValue());
      } else {
        g.writeNumber(p.getLongValue());
      }
    }
  }

  /** A field kept as it came (an unmodelled field, an opaque value): the name, then {@link #copyValue}. */
  final void copyField(String name) throws IOException {
    if (g != null) {
      g.writeFieldName(name);
    }
    copyValue();
  }

  /**
   * The value the parser stands on, as a {@code JsonNode} of the codec would write it: decimals exact (as
   * {@code BigDecimal}), integers as int, long or big integer.
   */
  final void copyValue() throws IOException {
    JsonToken t = p.currentToken();
    switch (t) {
      case START_OBJECT -> {
        if (g != null) {
          g.writeStartObject();
        }
        Names seen = new Names();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = seen.add(p.currentName());
          if (g != null) {
            g.writeFieldName(name);
          }
          p.nextToken();
          copyValue();
        }
        if (g != null) {
          g.writeEndObject();
        }
      }
      case START_ARRAY -> {
        if (g != null) {
          g.writeStartArray();
        }
        while (p.nextToken() != JsonToken.END_ARRAY) {
          copyValue();
        }
        if (g != null) {
          g.writeEndArray();
        }
      }
      case VALUE_NUMBER_FLOAT -> {
        java.math.BigDecimal d = p.getDecimalValue(); // also where the records fail on a number out of range
        if (g != null) {
          g.writeNumber(d);
        }
      }
      default -> {
        if (g != null) {
          g.copyCurrentEvent(p);
        }
      }
    }
  }

  static void expect(JsonToken got, JsonToken wanted) {
    if (got != wanted) {
      throw new GiveUp();
    }
  }
}
