package dev.affinity.admission;

import dev.affinity.protocol.Utf8;
import java.util.Arrays;

/**
 * Where a chat body's {@code messages} sit in its bytes: the array's {@code [}, and the {@code }} that ends each
 * message. Read from a body the protocol parser has accepted (valid JSON), so the scan only follows strings and
 * nesting. {@link #of} says null when it cannot tell which member the parser took as {@code messages}: a key spelled
 * with an escape, {@code messages} twice, an element that is not an object.
 *
 * @param open the offset of the array's {@code [}
 * @param ends the offset of each message's closing brace, in order
 */
record MessageSpans(int open, int[] ends) {

  private static final byte[] MESSAGES = {'m', 'e', 's', 's', 'a', 'g', 'e', 's'};

  /** The spans of {@code body}, or null. */
  static MessageSpans of(byte[] body) {
    int length = body.length;
    int i = Utf8.skipJsonSpace(body, 0);
    if (i >= length || body[i] != '{') {
      return null;
    }
    i = Utf8.skipJsonSpace(body, i + 1);
    Found found = null;
    while (i < length && body[i] == '"') {
      int keyEnd = stringEnd(body, i);
      if (keyEnd < 0) {
        return null;
      }
      boolean messages = Arrays.equals(body, i + 1, keyEnd, MESSAGES, 0, MESSAGES.length);
      for (int k = i + 1; k < keyEnd; k++) {
        if (body[k] == '\\') {
          return null;  // an escaped key could spell "messages"
        }
      }
      i = Utf8.skipJsonSpace(body, keyEnd + 1);
      if (i >= length || body[i] != ':') {
        return null;
      }
      i = Utf8.skipJsonSpace(body, i + 1);
      if (messages) {
        if (found != null || i >= length || body[i] != '[') {
          return null;
        }
        found = elements(body, i);
        if (found == null) {
          return null;
        }
        i = found.closeAfter;
      } else {
        i = valueEnd(body, i);
        if (i < 0) {
          return null;
        }
      }
      i = Utf8.skipJsonSpace(body, i);
      if (i < length && body[i] == ',') {
        i = Utf8.skipJsonSpace(body, i + 1);
      }
    }
    return found == null ? null : new MessageSpans(found.open, found.ends);
  }

  /** The array's elements, and the offset after its {@code ]}. */
  private record Found(int open, int[] ends, int closeAfter) {}

  /** The elements of the array whose {@code [} is at {@code open}: each an object. */
  private static Found elements(byte[] body, int open) {
    int length = body.length;
    int[] ends = new int[16];
    int n = 0;
    int i = Utf8.skipJsonSpace(body, open + 1);
    if (i < length && body[i] == ']') {
      return new Found(open, new int[0], i + 1);
    }
    while (i < length) {
      if (body[i] != '{') {
        return null;
      }
      int end = valueEnd(body, i);
      if (end < 0) {
        return null;
      }
      if (n == ends.length) {
        ends = Arrays.copyOf(ends, n * 2);
      }
      ends[n++] = end - 1;
      i = Utf8.skipJsonSpace(body, end);
      if (i < length && body[i] == ']') {
        return new Found(open, Arrays.copyOf(ends, n), i + 1);
      }
      if (i >= length || body[i] != ',') {
        return null;
      }
      i = Utf8.skipJsonSpace(body, i + 1);
    }
    return null;
  }

  /** The offset of the closing quote of the string whose opening quote is at {@code i}, or -1. */
  private static int stringEnd(byte[] b, int i) {
    for (int k = i + 1; k < b.length; k++) {
      byte c = b[k];
      if (c == '"') {
        return k;
      }
      if (c == '\\') {
        k++;
      }
    }
    return -1;
  }

  /** The offset just after the JSON value that starts at {@code i}, or -1. */
  private static int valueEnd(byte[] b, int i) {
    int length = b.length;
    if (i >= length) {
      return -1;
    }
    byte c = b[i];
    if (c == '"') {
      int e = stringEnd(b, i);
      return e < 0 ? -1 : e + 1;
    }
    if (c != '{' && c != '[') {  // a number or a literal
      int k = i;
      while (k < length && b[k] != ',' && b[k] != '}' && b[k] != ']' && b[k] != ' ' && b[k] != '\n'
          && b[k] != '\r' && b[k] != '\t') {
        k++;
      }
      return k;
    }
    int depth = 0;
    for (int k = i; k < length; k++) {
      byte x = b[k];
      if (x == '"') {
        k = stringEnd(b, k);
        if (k < 0) {
          return -1;
        }
      } else if (x == '{' || x == '[') {
        depth++;
      } else if (x == '}' || x == ']') {
        if (--depth == 0) {
          return k + 1;
        }
      }
    }
    return -1;
  }
}
