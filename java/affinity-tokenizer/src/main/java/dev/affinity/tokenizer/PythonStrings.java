package dev.affinity.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import jinjava.javax.el.ELContext;

/**
 * The methods of Python's {@code str} that chat templates call on message fields ({@code content.strip()},
 * {@code content.split('</think>')[-1].lstrip('\n')}, {@code startswith}, {@code endswith}, ...), which jinjava would
 * look up as Java methods of {@link String} and not find. Semantics are CPython's: {@code strip()} without an
 * argument strips Unicode whitespace, with one strips any of its characters; {@code split()} without a separator
 * splits on runs of whitespace; {@code startswith}/{@code endswith} take a string or a list of them.
 */
final class PythonStrings extends LookupResolver {

  @Override
  public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
    if (!(base instanceof String s) || method == null) {
      return null;
    }
    Object[] p = params == null ? new Object[0] : params;
    Object result = call(s, method.toString(), p);
    if (result != NO_SUCH_METHOD) {
      context.setPropertyResolved(true);
      return result;
    }
    return null;
  }

  private static final Object NO_SUCH_METHOD = new Object();

  static Object call(String s, String name, Object[] p) {
    switch (name) {
      case "strip": return strip(s, arg(p, 0), true, true);
      case "lstrip": return strip(s, arg(p, 0), true, false);
      case "rstrip": return strip(s, arg(p, 0), false, true);
      case "startswith": return affix(s, p.length > 0 ? p[0] : null, true);
      case "endswith": return affix(s, p.length > 0 ? p[0] : null, false);
      case "split": return split(s, arg(p, 0), p.length > 1 ? ((Number) p[1]).intValue() : -1);
      case "upper": return s.toUpperCase(Locale.ROOT);
      case "lower": return s.toLowerCase(Locale.ROOT);
      case "title": return title(s);
      case "capitalize": return s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
      case "replace": {
        if (p.length < 2) {
          return NO_SUCH_METHOD;
        }
        return replace(s, String.valueOf(p[0]), String.valueOf(p[1]), p.length > 2 ? ((Number) p[2]).intValue() : -1);
      }
      case "find": {
        if (p.length == 0) {
          return NO_SUCH_METHOD;
        }
        int at = s.indexOf(String.valueOf(p[0]));
        return at < 0 ? -1L : (long) s.codePointCount(0, at);  // Python counts code points
      }
      case "count": {
        if (p.length == 0) {
          return NO_SUCH_METHOD;
        }
        String needle = String.valueOf(p[0]);
        if (needle.isEmpty()) {
          return (long) s.codePointCount(0, s.length()) + 1;
        }
        long n = 0;
        for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + needle.length())) {
          n++;
        }
        return n;
      }
      case "isspace": return !s.isEmpty() && s.codePoints().allMatch(PythonStrings::isSpace);
      case "isdigit": return !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
      case "join": {
        if (p.length == 0 || !(p[0] instanceof Iterable<?> items)) {
          return NO_SUCH_METHOD;
        }
        StringBuilder out = new StringBuilder();
        boolean first = true;
        for (Object item : items) {
          if (!first) {
            out.append(s);
          }
          first = false;
          out.append(item);
        }
        return out.toString();
      }
      default: return NO_SUCH_METHOD;
    }
  }

  /** {@code str.replace(old, new, count)}: at most {@code count} replacements, all when negative. */
  static String replace(String s, String from, String to, int count) {
    if (count < 0) {
      return s.replace(from, to);
    }
    StringBuilder out = new StringBuilder();
    int start = 0;
    for (int n = 0; n < count; n++) {
      int at = s.indexOf(from, start);
      if (at < 0 || (from.isEmpty() && at > s.length())) {
        break;
      }
      out.append(s, start, at).append(to);
      if (from.isEmpty()) {
        if (at < s.length()) {
          out.appendCodePoint(s.codePointAt(at));
          start = at + Character.charCount(s.codePointAt(at));
        } else {
          start = at;
          break;
        }
      } else {
        start = at + from.length();
      }
    }
    return out.append(s, Math.min(start, s.length()), s.length()).toString();
  }

  private static String arg(Object[] p, int i) {
    return p.length > i && p[i] != null ? p[i].toString() : null;
  }

  /** Python's {@code str.isspace} per character (the whitespace {@code strip()} and {@code split()} use). */
  static boolean isSpace(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x1F
        || c == 0x85;
  }

  static String strip(String s, String chars, boolean left, boolean right) {
    int start = 0;
    int end = s.length();
    if (left) {
      while (start < end) {
        int c = s.codePointAt(start);
        if (!(chars == null ? isSpace(c) : chars.indexOf(c) >= 0)) {
          break;
        }
        start += Character.charCount(c);
      }
    }
    if (right) {
      while (end > start) {
        int c = s.codePointBefore(end);
        if (!(chars == null ? isSpace(c) : chars.indexOf(c) >= 0)) {
          break;
        }
        end -= Character.charCount(c);
      }
    }
    return s.substring(start, end);
  }

  private static Object affix(String s, Object arg, boolean prefix) {
    if (arg instanceof Iterable<?> options) {
      for (Object o : options) {
        if (prefix ? s.startsWith(String.valueOf(o)) : s.endsWith(String.valueOf(o))) {
          return true;
        }
      }
      return false;
    }
    if (arg == null) {
      return NO_SUCH_METHOD;
    }
    return prefix ? s.startsWith(arg.toString()) : s.endsWith(arg.toString());
  }

  static List<String> split(String s, String sep, int maxSplit) {
    List<String> out = new ArrayList<>();
    if (sep == null) {
      int i = 0;
      int n = s.length();
      while (true) {
        while (i < n && isSpace(s.codePointAt(i))) {
          i += Character.charCount(s.codePointAt(i));
        }
        if (i >= n) {
          break;
        }
        if (maxSplit >= 0 && out.size() == maxSplit) {
          out.add(s.substring(i));  // the rest as it is, its trailing whitespace included
          break;
        }
        int j = i;
        while (j < n && !isSpace(s.codePointAt(j))) {
          j += Character.charCount(s.codePointAt(j));
        }
        out.add(s.substring(i, j));
        i = j;
      }
      return out;
    }
    if (sep.isEmpty()) {
      throw new IllegalArgumentException("empty separator");
    }
    int start = 0;
    for (int i = s.indexOf(sep); i >= 0 && (maxSplit < 0 || out.size() < maxSplit); i = s.indexOf(sep, start)) {
      out.add(s.substring(start, i));
      start = i + sep.length();
    }
    out.add(s.substring(start));
    return out;
  }

  private static String title(String s) {
    StringBuilder out = new StringBuilder(s.length());
    boolean previousCased = false;
    for (int i = 0; i < s.length(); ) {
      int c = s.codePointAt(i);
      out.appendCodePoint(previousCased ? Character.toLowerCase(c) : Character.toTitleCase(c));
      previousCased = Character.isLetter(c);
      i += Character.charCount(c);
    }
    return out.toString();
  }

  /** The methods {@link #call} knows: the names a template calls on a string. */
  static final java.util.Set<String> METHODS = java.util.Set.of("strip", "lstrip", "rstrip", "startswith", "endswith",
      "split", "upper", "lower", "title", "capitalize", "replace", "find", "count", "isspace", "isdigit", "join");

  // Resolution of properties is left to the resolvers after this one (a string's method names: CallLookups).
  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    return null;
  }
}
