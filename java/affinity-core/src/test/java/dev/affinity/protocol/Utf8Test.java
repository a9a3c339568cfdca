package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Strict UTF-8, checked against the JDK's own strict decoder on random and hand-picked inputs. */
class Utf8Test {
  static boolean jdkValid(byte[] b) {
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  static byte[] bytes(int... v) {
    byte[] b = new byte[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = (byte) v[i];
    }
    return b;
  }

  @Test
  void theKnownInvalidFormsAreInvalid() {
    assertEquals(0, Utf8.firstInvalid(bytes(0xc0, 0xaf), 0, 2), "overlong /");
    assertEquals(1, Utf8.firstInvalid(bytes('a', 0xe0, 0x80, 0xaf), 0, 4), "overlong 3-byte");
    assertEquals(0, Utf8.firstInvalid(bytes(0xf0, 0x80, 0x80, 0xaf), 0, 4), "overlong 4-byte");
    assertEquals(0, Utf8.firstInvalid(bytes(0xed, 0xa0, 0x80), 0, 3), "CESU-8 surrogate");
    assertEquals(0, Utf8.firstInvalid(bytes(0xf4, 0x90, 0x80, 0x80), 0, 4), "above U+10FFFF");
    assertEquals(0, Utf8.firstInvalid(bytes(0xe2, 0x82), 0, 2), "truncated");
    assertEquals(0, Utf8.firstInvalid(bytes(0x80), 0, 1), "lone continuation");
    assertEquals(-1, Utf8.firstInvalid("héllo €𝄞 中".getBytes(StandardCharsets.UTF_8), 0, 14));
    assertEquals(-1, Utf8.firstInvalid(bytes(0xf4, 0x8f, 0xbf, 0xbf), 0, 4), "U+10FFFF");
  }

  @Test
  void randomBytesAgreeWithTheJdksStrictDecoder() {
    Random r = new Random(31);
    int[] pool = {0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
        0x9f, 0xa0, 0x8f, 0x90};
    for (int n = 0; n < 200_000; n++) {
      byte[] b = new byte[1 + r.nextInt(8)];
      for (int i = 0; i < b.length; i++) {
        b[i] = (byte) (r.nextBoolean() ? pool[r.nextInt(pool.length)] : r.nextInt(256));
      }
      assertEquals(jdkValid(b), Utf8.firstInvalid(b, 0, b.length) < 0, java.util.HexFormat.of().formatHex(b));
    }
  }

  @Test
  void jsonBodiesAreUtf8WithAnOptionalByteOrderMark() {
    byte[] json = "{\"a\": \"é\"}".getBytes(StandardCharsets.UTF_8);
    assertArrayEquals(json, Utf8.jsonBody(json));
    byte[] bom = new byte[json.length + 3];
    bom[0] = (byte) 0xef;
    bom[1] = (byte) 0xbb;
    bom[2] = (byte) 0xbf;
    System.arraycopy(json, 0, bom, 3, json.length);
    assertArrayEquals(json, Utf8.jsonBody(bom));
    for (java.nio.charset.Charset cs : new java.nio.charset.Charset[] {StandardCharsets.UTF_16, StandardCharsets.UTF_16LE,
        StandardCharsets.UTF_16BE, java.nio.charset.Charset.forName("UTF-32LE")}) {
      ProtocolException e = assertThrows(ProtocolException.class, () -> Utf8.jsonBody("{\"a\": 1}".getBytes(cs)));
      assertTrue(e.getMessage().contains("UTF-16"), cs + ": " + e.getMessage());
    }
    ProtocolException bad = assertThrows(ProtocolException.class, () -> Utf8.jsonBody(bytes('{', '"', 0xc0, 0x80, '"')));
    assertEquals(400, bad.status());
    assertTrue(bad.getMessage().contains("offset 2"), bad.getMessage());
  }

  @Test
  void headerValuesAreCheckedAsTheBytesHttpCarried() {
    assertEquals(-1, Utf8.firstInvalidInHeader("plain-session-7"));
    String utf8AsLatin1 = new String("sess-é".getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    assertEquals(-1, Utf8.firstInvalidInHeader(utf8AsLatin1));
    assertEquals(1, Utf8.firstInvalidInHeader("s\u00c0\u00afx"), "overlong");
    assertEquals(0, Utf8.firstInvalidInHeader("\u00ed\u00a0\u0080"), "CESU");
  }
}
