package dev.affinity.tokenizer;

/**
 * The two rewrites of a chat template's source that let jinjava parse what Jinja2 parses, each exact for what it
 * rewrites (anything else is left for jinjava, whose errors name the template line):
 * <ul>
 *   <li>{@code x[::-1]} (a reversed copy; jinjava's slices take no step) becomes {@code (x|reverse|list)}, where
 *       {@code x} is the primary it follows (a name with its attribute, index and call suffixes, or a bracketed
 *       expression);
 *   <li>keyword arguments of a call ({@code namespace(a=true, last=messages|length - 1)}) get their values bracketed,
 *       {@code (messages|length - 1)}, since jinjava binds {@code name=value} tighter than the filter and the
 *       arithmetic after it.
 * </ul>
 * Both act only inside {@code {{ }}} and {@code {% %}} tags, outside string literals.
 */
final class TemplateSource {
  private TemplateSource() {}

  static String rewrite(String source) {
    StringBuilder out = new StringBuilder(source.length() + 64);
    int i = 0;
    int n = source.length();
    while (i < n) {
      int open = nextTag(source, i);
      if (open < 0) {
        out.append(source, i, n);
        break;
      }
      out.append(source, i, open + 2);
      String close = source.charAt(open + 1) == '{' ? "}}" : "%}";
      int end = tagEnd(source, open + 2, close);
      if (end < 0) {
        out.append(source, open + 2, n);
        break;
      }
      out.append(rewriteExpression(source.substring(open + 2, end)));
      out.append(close);
      i = end + 2;
    }
    return out.toString();
  }

  private static int nextTag(String s, int from) {
    for (int i = s.indexOf('{', from); i >= 0 && i + 1 < s.length(); i = s.indexOf('{', i + 1)) {
      char c = s.charAt(i + 1);
      if (c == '{' || c == '%') {
        return i;
      }
      if (c == '#') {  // a comment: skip to its end
        int e = s.indexOf("#}", i + 2);
        if (e < 0) {
          return -1;
        }
        i = e;
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

  static String rewriteExpression(String e) {
    return bracketKeywordArguments(reverseSlices(e));
  }

  private static String reverseSlices(String e) {
    String marker = "[::-1]";
    int at = find(e, marker, 0);
    while (at >= 0) {
      int start = primaryStart(e, at);
      e = e.substring(0, start) + "(" + e.substring(start, at) + "|reverse|list)" + e.substring(at + marker.length());
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
