package dev.affinity.tokenizer;

/**
 * A chat template's source made to render under jinjava as Jinja2 renders it in Hugging Face's environment. The
 * rewrites are exact for what they touch; anything else is left for jinjava, whose errors name the template line.
 * <ul>
 *   <li>Jinja2's lexer rules that jinjava's differ from, applied here with jinjava's own trim and lstrip off:
 *       newlines normalized to {@code \n}; one trailing newline dropped ({@code keep_trailing_newline=False});
 *       {@code lstrip_blocks} (spaces and tabs before a block or comment tag removed only when nothing else precedes
 *       it on its line; {@code {%+} keeps them); {@code trim_blocks} (the first newline after a block or comment tag
 *       removed; {@code +%}} keeps it). {@code {%-} and {@code -%}} stay jinjava's, which matches.
 *   <li>{@code x[::-1]} (a reversed copy; jinjava's slices take no step) becomes {@code (x|py_reverse)} (a reversed
 *       string for a string, a list otherwise), where {@code x} is the primary it follows (a name with its
 *       attribute, index and call suffixes, or a bracketed expression);
 *   <li>the expression of an {@code if}, {@code elif} or {@code set NAME =} tag that only adds, subtracts and
 *       compares whole numbers read from {@code loop}'s counters, a namespace's attributes and
 *       {@code messages|length} ({@link DerivedExpression}) becomes {@code _affinity_derived_('expression')}, which
 *       gives jinjava's value ({@link ChatTemplate#derived}) and lets a render that reuses the last one's loop
 *       iterations compare that value rather than the numbers it was computed from;
 *   <li>keyword arguments of a call ({@code namespace(a=true, last=messages|length - 1)}) get their values bracketed,
 *       {@code (messages|length - 1)}, since jinjava binds {@code name=value} tighter than the filter and the
 *       arithmetic after it.
 * </ul>
 * Expression rewrites act only inside {@code {{ }}} and {@code {% %}} tags, outside string literals; the text of a
 * {@code {% raw %}} block is left as it is.
 */
final class TemplateSource {
  /** The function a {@link DerivedExpression} tag's expression is handed to. */
  static final String DERIVED = "_affinity_derived_";

  private static final java.util.regex.Pattern DERIVED_TAG = java.util.regex.Pattern.compile(
      "([-]?\\s*(?:(?:if|elif)\\s+|set\\s+[A-Za-z_][A-Za-z0-9_]*\\s*=\\s*))(.+?)(\\s*-?)",
      java.util.regex.Pattern.DOTALL);

  private TemplateSource() {}

  static String rewrite(String source) {
    String src = source.replace("\r\n", "\n").replace('\r', '\n');
    if (src.endsWith("\n")) {
      src = src.substring(0, src.length() - 1);
    }
    StringBuilder out = new StringBuilder(src.length() + 64);
    int i = 0;
    int n = src.length();
    boolean trimNext = false;
    while (i < n) {
      int open = nextTag(src, i);
      String text = src.substring(i, open < 0 ? n : open);
      if (trimNext && text.startsWith("\n")) {
        text = text.substring(1);
      }
      trimNext = false;
      out.append(text);
      if (open < 0) {
        break;
      }
      char kind = src.charAt(open + 1);
      String close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
      int end = kind == '#' ? src.indexOf("#}", open + 2) : tagEnd(src, open + 2, close);
      if (end < 0) {
        out.append(src, open, n);
        break;
      }
      String inner = src.substring(open + 2, end);
      if (kind != '{') {
        if (inner.startsWith("+")) {
          inner = inner.substring(1);
        } else if (!inner.startsWith("-")) {
          lstrip(out, src, open);
        }
        if (inner.endsWith("+")) {
          inner = inner.substring(0, inner.length() - 1);
        } else if (!inner.endsWith("-")) {
          trimNext = true;
        }
      }
      out.append(src, open, open + 2);
      out.append(kind == '#' ? inner : kind == '%' ? derivedTag(rewriteExpression(inner)) : rewriteExpression(inner));
      out.append(close);
      i = end + 2;
      if (kind == '%' && isRaw(inner)) {  // copy the raw text up to {% endraw %} as it is
        int endRaw = endRaw(src, i);
        if (endRaw < 0) {
          out.append(src, i, n);
          break;
        }
        String raw = src.substring(i, endRaw);
        if (trimNext && raw.startsWith("\n")) {
          raw = raw.substring(1);
        }
        trimNext = false;
        out.append(raw);
        i = endRaw;
      }
    }
    return out.toString();
  }

  /**
   * lstrip_blocks: the spaces and tabs before the tag at {@code open}, when only they stand between it and the start of
   * its source line, are removed from the end of {@code out} (where they were just copied).
   */
  private static void lstrip(StringBuilder out, String src, int open) {
    int j = open;
    while (j > 0 && (src.charAt(j - 1) == ' ' || src.charAt(j - 1) == '\t')) {
      j--;
    }
    if (j < open && (j == 0 || src.charAt(j - 1) == '\n')) {
      out.setLength(out.length() - (open - j));
    }
  }

  private static boolean isRaw(String inner) {
    String t = inner.strip();
    if (t.startsWith("-") || t.startsWith("+")) {
      t = t.substring(1);
    }
    if (t.endsWith("-") || t.endsWith("+")) {
      t = t.substring(0, t.length() - 1);
    }
    return t.strip().equals("raw");
  }

  /** Where the {@code {% endraw %}} tag after {@code from} starts, or -1. */
  private static int endRaw(String s, int from) {
    for (int at = s.indexOf("{%", from); at >= 0; at = s.indexOf("{%", at + 2)) {
      int end = s.indexOf("%}", at + 2);
      if (end < 0) {
        return -1;
      }
      String t = s.substring(at + 2, end).strip();
      t = t.replaceFirst("^[-+]\\s*", "").replaceFirst("\\s*[-+]$", "");
      if (t.equals("endraw")) {
        return at;
      }
    }
    return -1;
  }

  /** The next {@code {{}, {@code {%} or {@code {#} at or after {@code from}, or -1. */
  private static int nextTag(String s, int from) {
    for (int i = s.indexOf('{', from); i >= 0 && i + 1 < s.length(); i = s.indexOf('{', i + 1)) {
      char c = s.charAt(i + 1);
      if (c == '{' || c == '%' || c == '#') {
        return i;
      }
    }
    return -1;
  }

  /** Where the tag's closing delimiter starts, skipping string literals. */
  private static int tagEnd(String s, int from, String close) {
    for (int i = from; i + 1 < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\'' || c == '"') {
        i = stringEnd(s, i);
        if (i < 0) {
          return -1;
        }
      } else if (c == close.charAt(0) && s.charAt(i + 1) == close.charAt(1)) {
        return i;
      }
    }
    return -1;
  }

  private static int stringEnd(String s, int quote) {
    char q = s.charAt(quote);
    for (int i = quote + 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\') {
        i++;
      } else if (c == q) {
        return i;
      }
    }
    return -1;
  }

  /** A block tag's inside ({@code - if EXPR }) with a {@link DerivedExpression} handed to {@link #DERIVED}. */
  static String derivedTag(String inner) {
    java.util.regex.Matcher m = DERIVED_TAG.matcher(inner);
    if (!m.matches() || DerivedExpression.parse(m.group(2)) == null) {
      return inner;
    }
    return m.group(1) + DERIVED + "('" + m.group(2) + "')" + m.group(3);
  }

  static String rewriteExpression(String e) {
    return bracketKeywordArguments(reverseSlices(e));
  }

  private static String reverseSlices(String e) {
    String marker = "[::-1]";
    int at = find(e, marker, 0);
    while (at >= 0) {
      int start = primaryStart(e, at);
      e = e.substring(0, start) + "(" + e.substring(start, at).stripTrailing() + "|py_reverse)"
          + e.substring(at + marker.length());
      at = find(e, marker, at + 1);
    }
    return e;
  }

  /** The first index of {@code needle} at or after {@code from} outside string literals. */
  private static int find(String e, String needle, int from) {
    for (int i = from; i < e.length(); i++) {
      char c = e.charAt(i);
      if (c == '\'' || c == '"') {
        int end = stringEnd(e, i);
        if (end < 0) {
          return -1;
        }
        i = end;
      } else if (e.startsWith(needle, i)) {
        return i;
      }
    }
    return -1;
  }

  /** The start of the primary expression (with its suffixes) that ends just before {@code end}. */
  private static int primaryStart(String e, int end) {
    int i = end;
    while (i > 0 && e.charAt(i - 1) == ' ') {  // Jinja2 allows space before a subscript
      i--;
    }
    while (i > 0) {
      char c = e.charAt(i - 1);
      if (c == ']' || c == ')') {
        i = matchingOpen(e, i - 1);
        if (i < 0) {
          return end;
        }
      } else if (Character.isLetterOrDigit(c) || c == '_' || c == '.') {
        i--;
      } else if (c == '\'' || c == '"') {
        int j = i - 2;
        while (j >= 0 && e.charAt(j) != c) {
          j--;
        }
        i = Math.max(j, 0);
      } else {
        break;
      }
    }
    return i;
  }

  private static int matchingOpen(String e, int close) {
    int depth = 0;
    for (int i = close; i >= 0; i--) {
      char c = e.charAt(i);
      if (c == ')' || c == ']') {
        depth++;
      } else if (c == '(' || c == '[') {
        depth--;
        if (depth == 0) {
          return i;
        }
      }
    }
    return -1;
  }

  /** {@code f(a=x|g - 1, b=y)} becomes {@code f(a=(x|g - 1), b=(y))}. */
  private static String bracketKeywordArguments(String e) {
    StringBuilder out = new StringBuilder(e.length() + 16);
    int depth = 0;
    int[] parenDepthOfCall = new int[64];
    int calls = 0;
    for (int i = 0; i < e.length(); i++) {
      char c = e.charAt(i);
      if (c == '\'' || c == '"') {
        int end = stringEnd(e, i);
        if (end < 0) {
          out.append(e, i, e.length());
          return out.toString();
        }
        out.append(e, i, end + 1);
        i = end;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        depth++;
        if (c == '(' && calls < parenDepthOfCall.length) {
          parenDepthOfCall[calls++] = depth;
        }
        out.append(c);
        continue;
      }
      if (c == ')' || c == ']' || c == '}') {
        if (c == ')' && calls > 0 && parenDepthOfCall[calls - 1] == depth) {
          calls--;
        }
        depth--;
        out.append(c);
        continue;
      }
      boolean inCall = calls > 0 && parenDepthOfCall[calls - 1] == depth;
      if (inCall && c == '=' && isKeywordEquals(e, i)) {
        int valueEnd = argumentEnd(e, i + 1);
        String value = e.substring(i + 1, valueEnd);
        out.append("=(").append(bracketKeywordArguments(value.strip())).append(')');
        i = valueEnd - 1;
        continue;
      }
      out.append(c);
    }
    return out.toString();
  }

  /** A single {@code =} after an identifier (not {@code ==}, {@code !=}, {@code <=}, {@code >=}). */
  private static boolean isKeywordEquals(String e, int i) {
    if (i + 1 < e.length() && e.charAt(i + 1) == '=') {
      return false;
    }
    int j = i - 1;
    while (j >= 0 && e.charAt(j) == ' ') {
      j--;
    }
    if (j < 0 || !(Character.isLetterOrDigit(e.charAt(j)) || e.charAt(j) == '_')) {
      return false;
    }
    while (j >= 0 && (Character.isLetterOrDigit(e.charAt(j)) || e.charAt(j) == '_')) {
      j--;
    }
    while (j >= 0 && e.charAt(j) == ' ') {
      j--;
    }
    return j >= 0 && (e.charAt(j) == '(' || e.charAt(j) == ',');
  }

  /** The end of a call argument starting at {@code from}: the next {@code ,} or {@code )} at this depth. */
  private static int argumentEnd(String e, int from) {
    int depth = 0;
    for (int i = from; i < e.length(); i++) {
      char c = e.charAt(i);
      if (c == '\'' || c == '"') {
        int end = stringEnd(e, i);
        if (end < 0) {
          return e.length();
        }
        i = end;
      } else if (c == '(' || c == '[' || c == '{') {
        depth++;
      } else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) {
          return i;
        }
        depth--;
      } else if (c == ',' && depth == 0) {
        return i;
      }
    }
    return e.length();
  }
}
