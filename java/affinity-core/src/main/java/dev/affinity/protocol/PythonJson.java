package dev.affinity.protocol;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The exact text of Python's {@code json.dumps(value, sort_keys=True, separators=(",", ":"))} with the
 * default {@code ensure_ascii=True}, for the values internal-auth payloads hold: {@code null}, booleans,
 * integers, strings, string-keyed maps and lists. Floats are rejected (Python's {@code repr} of a float
 * is not reproduced here).
 *
 * <p>Rules, as CPython's encoder applies them: keys sorted by code point; no whitespace; in strings
 * {@code "} and {@code \} are escaped, {@code \n \r \t \b \f} use their short forms, every other
 * character outside printable ASCII (U+0020..U+007E, so also DEL and all non-ASCII) becomes
 * {@code \}{@code uXXXX} with lowercase hex, astral characters as their UTF-16 surrogate pair.
 */
final class PythonJson {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private PythonJson() {}

  /** The canonical text (pure ASCII). */
  static String dumps(Object value) {
    StringBuilder out = new StringBuilder(128);
    write(out, value);
    return out.toString();
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      writeString(out, s);
    } else if (value instanceof Boolean b) {
      out.append(b ? "true" : "false");
    } else if (value instanceof Long || value instanceof Integer || value instanceof Short
        || value instanceof Byte || value instanceof BigInteger) {
      out.append(value);
    } else if (value instanceof Map<?, ?> map) {
      writeObject(out, map);
    } else if (value instanceof Collection<?> list) {
      out.append('[');
      boolean first = true;
      for (Object item : list) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(out, item);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("canonical JSON supports null, booleans, integers, strings, maps and"
          + " lists; got " + value.getClass().getName());
    }
  }

  private static void writeObject(StringBuilder out, Map<?, ?> map) {
    List<String> keys = new ArrayList<>(map.size());
    for (Object k : map.keySet()) {
      if (!(k instanceof String s)) {
        throw new IllegalArgumentException("canonical JSON object keys must be strings; got " + k);
      }
      keys.add(s);
    }
    keys.sort(PythonJson::compareCodePoints);
    out.append('{');
    for (int i = 0; i < keys.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      writeString(out, keys.get(i));
      out.append(':');
      write(out, map.get(keys.get(i)));
    }
    out.append('}');
  }

  /** Python orders str by code point, which differs from UTF-16 order above U+D7FF. */
  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Boolean.compare(i < a.length(), j < b.length());
  }

  static void writeString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c >= 0x20 && c <= 0x7e) {
            out.append(c);
          } else {
            // UTF-16 units: an astral character comes out as its surrogate pair, as in Python
            out.append("\\u").append(HEX[(c >> 12) & 0xf]).append(HEX[(c >> 8) & 0xf])
                .append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
          }
        }
      }
    }
    out.append('"');
  }
}
