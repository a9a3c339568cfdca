package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Iterator;
import java.util.Map;

/**
 * Text in a client body must be Unicode scalar values. A UTF-8 body cannot carry a surrogate ({@link Utf8} refuses
 * CESU-8), but JSON's escapes can: {@code "\ud800"} decodes into a lone UTF-16 surrogate, which no tokenizer, worker
 * or client encodes (Python's {@code str.encode} raises on it). Such a string is refused with a 400 naming its field.
 *
 * <p>Cheap on every body: only a body whose bytes contain a surrogate escape ({@code \}{@code uD800} to
 * {@code \}{@code uDFFF}, any case) is walked, and then only to name the field of a surrogate that is really alone
 * (a pair such as {@code "\ud83d\ude00"} is an emoji, and {@code "\\ud800"} is six plain characters).
 */
final class LoneSurrogates {
  private LoneSurrogates() {}

  private static final java.lang.invoke.VarHandle LONGS =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
  private static final long BACKSLASHES = 0x5c5c5c5c5c5c5c5cL;
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;

  /**
   * Whether the body's bytes contain an escape of a UTF-16 surrogate (it may be part of a valid pair). Eight bytes at
   * a time: only a word holding a backslash (a zero byte of the word XOR backslashes) is looked at byte by byte.
   */
  static boolean mayContain(byte[] body) {
    int last = body.length - 6;
    int i = 0;
    for (; i + 8 <= body.length; i += 8) {
      long v = (long) LONGS.get(body, i) ^ BACKSLASHES;
      if (((v - ONES) & ~v & HIGHS) != 0) {
        for (int k = i; k < i + 8 && k <= last; k++) {
          if (surrogateEscapeAt(body, k)) {
            return true;
          }
        }
      }
    }
    for (; i <= last; i++) {
      if (surrogateEscapeAt(body, i)) {
        return true;
      }
    }
    return false;
  }

  private static boolean surrogateEscapeAt(byte[] body, int i) {
    if (body[i] == '\\' && body[i + 1] == 'u' && (body[i + 2] | 0x20) == 'd') {
      int third = body[i + 3] | 0x20;
      return third == '8' || third == '9' || third == 'a' || third == 'b' || third == 'c' || third == 'd'
          || third == 'e' || third == 'f';
    }
    return false;
  }

  /**
   * Throws a 400 naming the first field (or the object of a key) of {@code root} whose text holds a lone surrogate.
   *
   * @throws ProtocolException 400 naming the field
   */
  static void check(JsonNode root) {
    String at = find(root, "");
    if (at != null) {
      throw ProtocolException.invalidField(at.isEmpty() ? null : at, "contains an unpaired UTF-16 surrogate "
          + "(an escape such as \\ud800 without its pair): text must be Unicode characters");
    }
  }

  /** The path of the first lone surrogate under {@code node} ({@code path} is the node's own), or null. */
  private static String find(JsonNode node, String path) {
    if (node.isTextual()) {
      return firstLone(node.textValue()) >= 0 ? path : null;
    }
    if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        String found = find(node.get(i), path + "[" + i + "]");
        if (found != null) {
          return found;
        }
      }
      return null;
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (firstLone(e.getKey()) >= 0) {
        return path;  // a key: its object is named (the key itself cannot be written back)
      }
      String found = find(e.getValue(), Json.joinPath(path, e.getKey()));
      if (found != null) {
        return found;
      }
    }
    return null;
  }

  /** The index of the first surrogate of {@code s} that is not half of a pair, or -1. */
  static int firstLone(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }
}
