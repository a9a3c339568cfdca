package dev.affinity.protocol;

import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.NullNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Package-private helpers shared by the wire types: freezing, defensive copies, checks, paths. */
final class Json {

  /**
   * The server-private routing key. A client can never set it: it is dropped wherever a request carries
   * parameters (top level, {@code conversation_params}, {@code disaggregated_params}).
   */
  static final String SUBAGENT_AFFINITY_ID = "subagent_affinity_id";

  private Json() {}

  /**
   * The unmodelled fields, frozen ({@link FrozenFields}: unmodifiable, deep-copied in and on every read). JSON nulls
   * become {@link NullNode} so they survive re-serialization; {@code dropped} keys are removed silently (reserved
   * names).
   *
   * @throws IllegalArgumentException if a key is a modelled field name (it would be written twice)
   */
  static Map<String, JsonNode> freezeExtra(Map<String, JsonNode> extra, Set<String> modelled,
      String... dropped) {
    if (extra == null || extra.isEmpty()) {
      return Map.of();
    }
    boolean keep = extra instanceof FrozenFields;  // frozen already: taken as it is when no key must go
    for (String key : extra.keySet()) {
      if (key == null) {
        throw new IllegalArgumentException("extra field with a null name");
      }
      if (modelled.contains(key)) {
        throw new IllegalArgumentException("'" + key + "' is a modelled field; set it through its accessor");
      }
    }
    for (String key : dropped) {
      keep &= !extra.containsKey(key);
    }
    if (keep) {
      return extra;
    }
    LinkedHashMap<String, JsonNode> copy = new LinkedHashMap<>(extra.size() * 2);
    extra.forEach((key, v) -> copy.put(key, v == null ? NullNode.getInstance() : v.deepCopy()));
    for (String key : dropped) {
      copy.remove(key);
    }
    return copy.isEmpty() ? Map.of() : new FrozenFields(copy);
  }

  static JsonNode copy(JsonNode node) {
    return node == null ? null : node.deepCopy();
  }

  /**
   * Deep copy of an opaque JSON value after checking its shape. An explicit JSON null (a {@link NullNode})
   * is always allowed and kept, so that it is forwarded as sent.
   */
  static JsonNode opaque(JsonNode node, String field, String expected, JsonNodeType... allowed) {
    if (node == null || node.isNull()) {
      return node;
    }
    for (JsonNodeType t : allowed) {
      if (node.getNodeType() == t) {
        return node.deepCopy();
      }
    }
    throw ProtocolException.invalidField(field, "expected " + expected + " but got " + describe(node));
  }

  /** Immutable copy of a list of records; null stays null (field absent), null elements are rejected. */
  static <T> List<T> list(List<T> list, String field) {
    if (list == null) {
      return null;
    }
    List<T> copy = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      T item = list.get(i);
      if (item == null) {
        throw ProtocolException.invalidField(field + "[" + i + "]", "expected an object but got null");
      }
      copy.add(item);
    }
    return Collections.unmodifiableList(copy);
  }

  static void required(Object value, String field) {
    if (value == null) {
      throw ProtocolException.invalidField(field, "required field is missing");
    }
  }

  /** {@code prefix} + {@code relative}: {@code a} + {@code b} = {@code a.b}, {@code a} + {@code [1]} = {@code a[1]}. */
  static String joinPath(String prefix, String relative) {
    if (prefix == null || prefix.isEmpty()) {
      return relative;
    }
    if (relative == null || relative.isEmpty()) {
      return prefix;
    }
    return relative.charAt(0) == '[' ? prefix + relative : prefix + "." + relative;
  }

  /** "a string", "an integer", ... for a JSON value. */
  static String describe(JsonNode node) {
    if (node == null || node.isNull()) {
      return "null";
    }
    return switch (node.getNodeType()) {
      case STRING -> "a string";
      case NUMBER -> node.isIntegralNumber() ? "an integer" : "a number";
      case BOOLEAN -> "a boolean";
      case ARRAY -> "an array";
      case OBJECT, POJO -> "an object";
      default -> "a " + node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    };
  }

  /** "a string", "an integer", ... for the token a parser stands on. */
  static String describe(JsonToken token) {
    if (token == null) {
      return "end of input";
    }
    return switch (token) {
      case VALUE_STRING -> "a string";
      case VALUE_NUMBER_INT -> "an integer";
      case VALUE_NUMBER_FLOAT -> "a number with a fraction or exponent";
      case VALUE_TRUE, VALUE_FALSE -> "a boolean";
      case VALUE_NULL -> "null";
      case START_ARRAY, END_ARRAY -> "an array";
      case START_OBJECT, END_OBJECT, FIELD_NAME -> "an object";
      default -> "an unexpected value";
    };
  }
}
