package dev.affinity.protocol;

import java.util.Arrays;

/**
 * Strict UTF-8 (RFC 3629) for request bodies and header values: no overlong forms, no surrogates (CESU-8), nothing
 * above U+10FFFF, no truncated sequence. JSON must be UTF-8 (RFC 8259 §8.1): a UTF-8 byte order mark is ignored,
 * as that RFC allows, on every endpoint alike, and UTF-16 or UTF-32 bodies (which a JSON parser would otherwise
 * detect and accept) are refused.
 */
public final class Utf8 {
  private Utf8() {}

  /** The offset of the first byte of {@code b[from, to)} that starts an invalid sequence, or -1 when all is valid. */
  public static int firstInvalid(byte[] b, int from, int to) {
    int i = from;
    while (i < to) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i++;
        continue;
      }
      int n;
      int min;
      if (c >= 0xc2 && c <= 0xdf) {
        n = 1;
        min = 0x80;
      } else if (c >= 0xe0 && c <= 0xef) {
        n = 2;
        min = 0x800;
      } else if (c >= 0xf0 && c <= 0xf4) {
        n = 3;
        min = 0x10000;
      } else {
        return i;  // a continuation byte, C0/C1 (always overlong) or F5-FF
      }
      if (i + n >= to) {
        return i;  // truncated
      }
      int cp = c & (0x3f >> n);
      for (int k = 1; k <= n; k++) {
        int cc = b[i + k] & 0xff;
        if ((cc & 0xc0) != 0x80) {
          return i;
        }
        cp = (cp << 6) | (cc & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return i;
      }
      i += n + 1;
    }
    return -1;
  }

  /** The first index from {@code i} on that is not JSON whitespace (space, tab, newline, carriage return). */
  public static int skipJsonSpace(byte[] json, int i) {
    while (i < json.length && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r')) {
      i++;
    }
    return i;
  }

  /**
   * A JSON body as UTF-8 bytes: without its UTF-8 byte order mark, if any.
   *
   * @throws ProtocolException 400 when the body is UTF-16 or UTF-32, or not valid UTF-8 (naming the offset)
   */
  public static byte[] jsonBody(byte[] body) {
    int start = body.length >= 3 && (body[0] & 0xff) == 0xef && (body[1] & 0xff) == 0xbb && (body[2] & 0xff) == 0xbf
        ? 3 : 0;
    int head = Math.min(body.length, start + 4);
    for (int i = start; i < head; i++) {
      if (body[i] == 0) {
        throw ProtocolException.of(400, "the body must be UTF-8 JSON: UTF-16 and UTF-32 are not accepted", null);
      }
    }
    if (body.length >= 2 && ((body[0] & 0xff) == 0xfe && (body[1] & 0xff) == 0xff
        || (body[0] & 0xff) == 0xff && (body[1] & 0xff) == 0xfe)) {
      throw ProtocolException.of(400, "the body must be UTF-8 JSON: UTF-16 and UTF-32 are not accepted", null);
    }
    int bad = firstInvalid(body, start, body.length);
    if (bad >= 0) {
      throw ProtocolException.of(400, "the body is not valid UTF-8: byte 0x" + Integer.toHexString(body[bad] & 0xff)
          + " at offset " + bad + " does not start a valid sequence (overlong forms, surrogates and code points above "
          + "U+10FFFF are invalid)", null);
    }
    return start == 0 ? body : Arrays.copyOfRange(body, start, body.length);
  }

  /**
   * Where a header value, as HTTP decodes it (one char per byte, ISO-8859-1), stops being valid UTF-8: the char
   * index, or -1 when it is valid (pure ASCII always is).
   */
  public static int firstInvalidInHeader(String latin1) {
    int i = 0;
    while (i < latin1.length() && latin1.charAt(i) < 0x80) {
      i++;
    }
    if (i == latin1.length()) {
      return -1;
    }
    byte[] b = new byte[latin1.length()];
    for (int k = 0; k < b.length; k++) {
      char ch = latin1.charAt(k);
      if (ch > 0xff) {
        return -1;  // already text (an embedding caller's header): not bytes to check
      }
      b[k] = (byte) ch;
    }
    return firstInvalid(b, 0, b.length);
  }
}
