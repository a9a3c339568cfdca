package dev.affinity.bench.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** Reads JSON Lines one object per line, with errors that name the source, line and field. */
final class JsonLines {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private final String source;
  private long line;
  private ObjectNode current;

  JsonLines(String source) {
    this.source = source;
  }

  /** A JSON line as read: its 1-based number and its object. Blank lines are skipped. */
  record Line(long number, ObjectNode object) {}

  /** Reads every non-blank line as a JSON object. */
  List<Line> readAll(BufferedReader in) throws IOException {
    List<Line> lines = new ArrayList<>();
    String text;
    line = 0;
    while ((text = in.readLine()) != null) {
      line++;
      if (text.isBlank()) {
        continue;
      }
      JsonNode node;
      try {
        node = MAPPER.readTree(text);
      } catch (JsonProcessingException e) {
        throw error("malformed JSON at column " + e.getLocation().getColumnNr() + ": " + e.getOriginalMessage());
      }
      if (node == null || !node.isObject()) {
        throw error("expected a JSON object, found " + (node == null ? "nothing" : node.getNodeType().name().toLowerCase()));
      }
      lines.add(new Line(line, (ObjectNode) node));
    }
    return lines;
  }

  /** Makes {@code l} the line that the field accessors and {@link #error} refer to. */
  JsonLines at(Line l) {
    line = l.number();
    current = l.object();
    return this;
  }

  TraceFormatException error(String problem) {
    return new TraceFormatException(source, line, problem);
  }

  long requiredLong(String field, long min) {
    JsonNode n = current.get(field);
    if (n == null || n.isNull()) {
      throw error("missing field '" + field + "'");
    }
    return checkLong(field, n, min);
  }

  int requiredInt(String field, int min) {
    long v = requiredLong(field, min);
    if (v > Integer.MAX_VALUE) {
      throw error("field '" + field + "' is too large: " + v);
    }
    return (int) v;
  }

  double requiredDouble(String field, double min) {
    JsonNode n = current.get(field);
    if (n == null || n.isNull()) {
      throw error("missing field '" + field + "'");
    }
    if (!n.isNumber() || !Double.isFinite(n.doubleValue()) || n.doubleValue() < min) {
      throw error("field '" + field + "' must be a number >= " + min + ", found " + n);
    }
    return n.doubleValue();
  }

  String optionalString(String field) {
    JsonNode n = current.get(field);
    if (n == null || n.isNull()) {
      return null;
    }
    if (!n.isTextual() || n.asText().isEmpty()) {
      throw error("field '" + field + "' must be a non-empty string, found " + n);
    }
    return n.asText();
  }

  List<Long> requiredLongArray(String field, long min) {
    JsonNode n = current.get(field);
    if (n == null || n.isNull()) {
      throw error("missing field '" + field + "'");
    }
    if (!n.isArray()) {
      throw error("field '" + field + "' must be an array of integers, found " + n.getNodeType().name().toLowerCase());
    }
    List<Long> values = new ArrayList<>(n.size());
    for (int i = 0; i < n.size(); i++) {
      values.add(checkLong(field + "[" + i + "]", n.get(i), min));
    }
    return values;
  }

  /** Builds the line's value; a rule the value's type enforces is reported at this line. */
  <T> T build(Supplier<T> constructor) {
    try {
      return constructor.get();
    } catch (IllegalArgumentException e) {
      throw error(e.getMessage());
    }
  }

  /** Fails on any field of the current line that is not in {@code known}. */
  void rejectUnknown(List<String> known) {
    current.fieldNames().forEachRemaining(name -> {
      if (!known.contains(name)) {
        throw error("unknown field '" + name + "' (known: " + String.join(", ", known) + ")");
      }
    });
  }

  private long checkLong(String field, JsonNode n, long min) {
    if (!n.isIntegralNumber() || !n.canConvertToLong()) {
      throw error("field '" + field + "' must be an integer, found " + n);
    }
    if (n.longValue() < min) {
      throw error("field '" + field + "' must be >= " + min + ", found " + n.longValue());
    }
    return n.longValue();
  }
}
