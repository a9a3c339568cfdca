package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;

/** JSON equivalence for tests: structural equality, numbers compared by value (1 == 1.0). */
final class JsonAssert {

  static final ProtocolCodec CODEC = new ProtocolCodec();

  private static final Comparator<JsonNode> NUMERIC = (a, b) -> {
    if (a.equals(b)) {
      return 0;
    }
    if (a.isNumber() && b.isNumber()) {
      return a.decimalValue().compareTo(b.decimalValue());
    }
    return 1;
  };

  private JsonAssert() {}

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static JsonNode tree(String json) {
    return CODEC.readTree(utf8(json));
  }

  static JsonNode tree(byte[] json) {
    return CODEC.readTree(json);
  }

  static boolean equivalent(JsonNode expected, JsonNode actual) {
    return expected.equals(NUMERIC, actual);
  }

  static void assertEquivalent(JsonNode expected, JsonNode actual) {
    assertTrue(equivalent(expected, actual), () -> "JSON differs\nexpected: " + expected + "\nactual:   " + actual);
  }

  /** Asserts no object anywhere in {@code node} has a key named {@code key}. */
  static void assertNoKey(JsonNode node, String key) {
    assertTrue(node.findValues(key).isEmpty(), () -> "found key '" + key + "' in " + node);
  }
}
