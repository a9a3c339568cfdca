package dev.affinity.protocol;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The exact text of CPython's {@code json.dumps}, for the two places Affinity must match it byte for byte: the
 * internal-auth payloads ({@link #canonical}: {@code sort_keys=True, separators=(",", ":")}, ASCII, what upstream
 * signs) and Hugging Face's {@code tojson} template filter ({@code transformers/utils/chat_template_utils.py}: {@code
 * ensure_ascii=False} with the template's indent, separators and {@code sort_keys}), so that tool schemas and
 * tool-call arguments render as the worker's template renders them.
 *
 * <p>Rules, as CPython's encoder applies them: separators {@code ", "} and {@code ": "} without indent, {@code ","}
 * and {@code ": "} with one; with an indent every item on its own line, empty containers as {@code []} / {@code {}};
 * keys in insertion order unless sorted (by code point, which differs from UTF-16 order above U+D7FF); in strings
 * {@code "} and {@code \} escaped, {@code \n \r \t \b \f} short, other control characters as {@code \}{@code
 * u00XX}, and with {@code ensure_ascii} every character outside printable ASCII (DEL included) as {@code \}{@code
 * uXXXX} with lowercase hex, astral ones as their surrogate pair, otherwise as is; floats as Python's {@code repr}
 * ({@code 1.0}, {@code 1e-05}, {@code 1e+16}, {@code NaN}, {@code Infinity}).
 */
public final class PythonJsonDumps {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** The internal-auth payloads' form: {@code sort_keys=True, separators=(",", ":")}, ASCII only, strict. */
  private static final PythonJsonDumps CANONICAL = new PythonJsonDumps(-1, ",", ":", true, true, true);
  /** Hugging Face's {@code tojson} without arguments. */
  private static final PythonJsonDumps TOJSON = new PythonJsonDumps(-1, null, null, false, false, false);

  private final String indent;
  private final String itemSeparator;
  private final String keySeparator;
  private final boolean sortKeys;
  private final boolean ensureAscii;
  private final boolean strict;

  /**
   * @param indent spaces per level, or negative for none (Python's {@code indent=None})
   * @param itemSeparator null for the default ({@code ", "}, or {@code ","} with an indent)
   * @param keySeparator null for the default ({@code ": "})
   * @param ensureAscii Python's {@code ensure_ascii}: every character outside printable ASCII as {@code \}{@code uXXXX}
   * @param strict only {@code null}, booleans, integers, strings, string-keyed maps and lists (no float: its
   *     {@code repr} is not part of a signed form); anything else is an {@link IllegalArgumentException}
   */
  public PythonJsonDumps(int indent, String itemSeparator, String keySeparator, boolean sortKeys, boolean ensureAscii,
      boolean strict) {
    this.indent = indent < 0 ? null : " ".repeat(indent);
    this.itemSeparator = itemSeparator != null ? itemSeparator : indent < 0 ? ", " : ",";
    this.keySeparator = keySeparator != null ? keySeparator : ": ";
    this.sortKeys = sortKeys;
    this.ensureAscii = ensureAscii;
    this.strict = strict;
  }

  /**
   * Python's {@code json.dumps(value, sort_keys=True, separators=(",", ":"))} with the default {@code ensure_ascii}, for
   * the values internal-auth payloads hold (pure ASCII text).
   */
  public static String canonical(Object value) {
    return CANONICAL.write(value);
  }

  /** {@code tojson} without arguments: {@code json.dumps(value, ensure_ascii=False)}. */
  public static String tojson(Object value) {
    return TOJSON.write(value);
  }

  public String write(Object value) {
    StringBuilder out = new StringBuilder(64);
    write(out, value, 0);
    return out.toString();
  }

  private void write(StringBuilder out, Object value, int depth) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof CharSequence s) {
      writeString(out, s.toString());
    } else if (value instanceof Boolean b) {
      out.append(b ? "true" : "false");
    } else if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte
        || value instanceof BigInteger) {
      out.append(value);
    } else if (strict && !(value instanceof Map<?, ?> || value instanceof Collection<?>)) {
      throw new IllegalArgumentException("canonical JSON supports null, booleans, integers, strings, maps and"
          + " lists; got " + value.getClass().getName());
    } else if (value instanceof Double || value instanceof Float) {
      out.append(floatRepr(((Number) value).doubleValue()));
    } else if (value instanceof BigDecimal d) {
      out.append(floatRepr(d.doubleValue()));
    } else if (value instanceof Map<?, ?> map) {
      writeObject(out, map, depth);
    } else if (value instanceof Collection<?> list) {
      writeArray(out, new ArrayList<>(list), depth);
    } else if (value instanceof Object[] array) {
      writeArray(out, List.of(array), depth);
    } else if (value instanceof Number n) {
      out.append(n);
    } else {
      throw new IllegalArgumentException("Object of type " + value.getClass().getSimpleName() + " is not JSON serializable");
    }
  }

  private void writeArray(StringBuilder out, List<?> items, int depth) {
    if (items.isEmpty()) {
      out.append("[]");
      return;
    }
    out.append('[');
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) {
        out.append(itemSeparator);
      }
      newline(out, depth + 1);
      write(out, items.get(i), depth + 1);
    }
    newline(out, depth);
    out.append(']');
  }

  private void writeObject(StringBuilder out, Map<?, ?> map, int depth) {
    if (map.isEmpty()) {
      out.append("{}");
      return;
    }
    List<Map.Entry<?, ?>> entries = new ArrayList<>(map.entrySet());
    if (strict) {
      entries.forEach(e -> key(e.getKey()));
    }
    if (sortKeys) {
      entries.sort((a, b) -> compareCodePoints(key(a.getKey()), key(b.getKey())));
    }
    out.append('{');
    boolean first = true;
    for (Map.Entry<?, ?> e : entries) {
      if (!first) {
        out.append(itemSeparator);
      }
      first = false;
      newline(out, depth + 1);
      writeString(out, key(e.getKey()));
      out.append(keySeparator);
      write(out, e.getValue(), depth + 1);
    }
    newline(out, depth);
    out.append('}');
  }

  /** Python's rules for non-string keys: booleans and None as JSON words, numbers as text; strict: strings only. */
  private String key(Object k) {
    if (strict && !(k instanceof String)) {
      throw new IllegalArgumentException("canonical JSON object keys must be strings; got " + k);
    }
    if (k == null) {
      return "null";
    }
    if (k instanceof Boolean b) {
      return b ? "true" : "false";
    }
    if (k instanceof Double || k instanceof Float) {
      return floatRepr(((Number) k).doubleValue());
    }
    return k.toString();
  }

  private void newline(StringBuilder out, int depth) {
    if (indent != null) {
      out.append('\n');
      for (int i = 0; i < depth; i++) {
        out.append(indent);
      }
    }
  }

  private static int compareCodePoints(String a, String b) {
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
    return Integer.compare(a.length() - i, b.length() - j);
  }

  private void writeString(StringBuilder out, String s) {
    writeString(out, s, ensureAscii);
  }

  /** A JSON string as CPython writes it, with or without {@code ensure_ascii}. */
  public static void writeString(StringBuilder out, String s, boolean ensureAscii) {
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
          if (c < 0x20 || ensureAscii && c > 0x7e) {
            // UTF-16 units: an astral character comes out as its surrogate pair, as in Python
            out.append("\\u").append(HEX[(c >> 12) & 0xf]).append(HEX[(c >> 8) & 0xf]).append(HEX[(c >> 4) & 0xf])
                .append(HEX[c & 0xf]);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /** Python's {@code float.__repr__} (what {@code json.dumps} writes for a float). */
  public static String floatRepr(double d) {
    if (Double.isNaN(d)) {
      return "NaN";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "Infinity" : "-Infinity";
    }
    if (d == 0) {
      return (1 / d < 0) ? "-0.0" : "0.0";
    }
    // the shortest digits that round-trip (Python's repr; JDK 17's Double.toString is not always the shortest)
    BigDecimal shortest = null;
    for (int digits = 1; digits <= 17; digits++) {
      BigDecimal candidate = new BigDecimal(d).round(new java.math.MathContext(digits, java.math.RoundingMode.HALF_EVEN));
      if (candidate.doubleValue() == d) {
        shortest = candidate.stripTrailingZeros();
        break;
      }
    }
    String digits = shortest.unscaledValue().abs().toString();
    int exponent = digits.length() - 1 - shortest.scale();  // d = d.ddd x 10^exponent
    String sign = d < 0 ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
      String plain = shortest.abs().toPlainString();
      return sign + (plain.contains(".") ? plain : plain + ".0");
    }
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + (Math.abs(exponent) < 10 ? "0" : "") + Math.abs(exponent);
  }
}
