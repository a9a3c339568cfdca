package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The byte pass that takes a context answer's top-level {@code prompt_token_ids} out before the scan
 * ({@link ResponseScan#withoutPromptIds}): for random answers (the field anywhere among the others, any whitespace,
 * decoys in strings and nested objects), the result is the same JSON with that array empty; answers whose array is
 * not plain integers, or that have none at the top level, are left as they are.
 */
class PromptIdsExciseTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static String ws(Random r) {
    return new String[] {"", "", " ", "\n  ", "\t"}[r.nextInt(5)];
  }

  @Test
  void theTopLevelIdsAreEmptiedAndNothingElseChanges() throws Exception {
    Random r = new Random(46);
    for (int i = 0; i < 500; i++) {
      StringBuilder ids = new StringBuilder("[");
      int n = r.nextInt(50);
      for (int k = 0; k < n; k++) {
        ids.append(k == 0 ? "" : "," + ws(r)).append(r.nextInt(200_000));
      }
      ids.append(ws(r)).append(']');
      String[] fields = {
          "\"id\":" + ws(r) + "\"chatcmpl-1 \\\"prompt_token_ids\\\":[1]\"",
          "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"a]}\\\\\",\"prompt_token_ids\":[9]}}]",
          "\"usage\":{\"prompt_tokens\":" + n + ",\"prompt_token_ids\":[5,6]}",
          "\"prompt_token_ids\"" + ws(r) + ":" + ws(r) + ids};
      for (int k = fields.length - 1; k > 0; k--) { // the ids anywhere among the fields
        int j = r.nextInt(k + 1);
        String t = fields[k];
        fields[k] = fields[j];
        fields[j] = t;
      }
      String answer = "{" + ws(r) + String.join("," + ws(r), fields) + ws(r) + "}";
      byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
      JsonNode out = JSON.readTree(ResponseScan.withoutPromptIds(bytes, null));
      ObjectNode expected = (ObjectNode) JSON.readTree(bytes);
      expected.putArray("prompt_token_ids");
      assertEquals(expected, out, answer);
    }
  }

  @Test
  void anArrayOfOtherThingsOrNoneAtTheTopIsLeftAsItIs() {
    for (String answer : new String[] {
        "{\"prompt_token_ids\":[1,\"2\"]}", "{\"prompt_token_ids\":null}", "{\"prompt_token_ids\":[1.5]}",
        "{\"a\":{\"prompt_token_ids\":[1]}}", "{\"a\":\"\\\"prompt_token_ids\\\":[1]\"}", "{\"prompt_token_ids\":[1,2"}) {
      byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
      assertSame(bytes, ResponseScan.withoutPromptIds(bytes, null), answer);
    }
  }

  /**
   * A leg's ids whose JSON is kept: where the answer spells them as the leg did, the array's end is found by comparing
   * (the same result as reading it); any other spelling, other ids, a longer or shorter array, or ids cut short are read,
   * as without them.
   */
  @Test
  void theSentIdsSpelledAsSentAreFoundByComparingAndAnythingElseIsRead() throws Exception {
    Random r = new Random(47);
    int[] sent = new int[3000];
    for (int i = 0; i < sent.length; i++) {
      sent[i] = r.nextInt(200_000);
    }
    TokenIds ids = TokenIds.of(sent);
    String spelled = new String(JSON.writeValueAsBytes(ids), StandardCharsets.UTF_8);
    org.junit.jupiter.api.Assertions.assertTrue(ids.jsonKept());
    String spaced = spelled.replace(",", ", ");
    String longer = spelled.replace("]", ",7]");
    String shorter = spelled.substring(0, spelled.lastIndexOf(',')) + "]";
    String other = "[" + (sent[0] + 1) + spelled.substring(spelled.indexOf(','));
    String cut = spelled.substring(0, spelled.length() / 2);
    for (String array : new String[] {spelled, spaced, longer, shorter, other, cut, "[]", "[1,\"2\"]"}) {
      for (String after : new String[] {"", ",\"usage\":{\"prompt_tokens\":3000}", " "}) {
        String answer = "{\"id\":\"x\",\"choices\":[],\"prompt_token_ids\":" + array + after + "}";
        byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
        byte[] withIds = ResponseScan.withoutPromptIds(bytes, ids);
        assertEquals(new String(ResponseScan.withoutPromptIds(bytes, null), StandardCharsets.UTF_8),
            new String(withIds, StandardCharsets.UTF_8), array.length() > 40 ? array.substring(0, 40) : array);
      }
    }
    byte[] asSent = ("{\"prompt_token_ids\":" + spelled + "}").getBytes(StandardCharsets.UTF_8);
    assertEquals("{\"prompt_token_ids\":[]}", new String(ResponseScan.withoutPromptIds(asSent, ids), StandardCharsets.UTF_8));
    assertEquals(spelled.length(), ids.keptJsonAt(asSent, "{\"prompt_token_ids\":".length()));
    assertEquals(-1, ids.keptJsonAt(("{\"prompt_token_ids\":" + spaced + "}").getBytes(StandardCharsets.UTF_8),
        "{\"prompt_token_ids\":".length()));
    assertEquals(-1, TokenIds.of(1, 2, 3).keptJsonAt(asSent, 20)); // no JSON kept: read
  }

  /** The eight-byte check of the ids' scan says what a byte-by-byte check of digits, commas and minus signs says. */
  @Test
  void theEightByteCheckAgreesWithTheByteByByteOne() {
    Random r = new Random(8);
    byte[] likely = "0123456789,-./+ ]\n\u0000".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    for (int i = 0; i < 2_000_000; i++) {
      byte[] b = new byte[8];
      boolean expected = true;
      for (int k = 0; k < 8; k++) {
        b[k] = r.nextInt(4) == 0 ? (byte) r.nextInt(256) : likely[r.nextInt(likely.length)];
        char c = (char) (b[k] & 0xff);
        expected &= c >= '0' && c <= '9' || c == ',' || c == '-';
      }
      long w = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
      assertEquals(expected, ResponseScan.digitsAndCommas(w), java.util.Arrays.toString(b));
    }
    for (int v = 0; v < 256; v++) {  // every byte value in every place, among digits
      for (int k = 0; k < 8; k++) {
        byte[] b = "12,-3456".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        b[k] = (byte) v;
        boolean expected = v >= '0' && v <= '9' || v == ',' || v == '-';
        long w = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
        assertEquals(expected, ResponseScan.digitsAndCommas(w), "byte " + v + " at " + k);
      }
    }
  }
}
