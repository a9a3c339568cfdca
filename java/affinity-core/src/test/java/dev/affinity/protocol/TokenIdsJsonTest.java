package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A prompt's ids on the wire: a long sequence keeps its JSON once written and writes the same bytes every time, in a
 * leg body, a tree and a string, as a plain Jackson int array would; and the base64 int32 form of
 * {@code prompt_token_ids_b64} (TensorRT-LLM: little-endian, standard alphabet) both ways, with bad strings named.
 */
class TokenIdsJsonTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  private static final ObjectMapper PLAIN = new ObjectMapper();

  @Test
  void anIdsDecimalLengthIsItsText() {
    int[] edges = {0, 1, 9, 10, 99, 100, 151_935, 999_999, 1_000_000, 999_999_999, 1_000_000_000, Integer.MAX_VALUE,
        -1, -9, -10, -100, Integer.MIN_VALUE + 1, Integer.MIN_VALUE};
    for (int v : edges) {
      assertEquals(String.valueOf(v).length(), TokenIds.intChars(v), "of " + v);
    }
    java.util.Random r = new java.util.Random(46);
    for (int k = 0; k < 10_000; k++) {
      int v = r.nextInt() >> r.nextInt(32);
      assertEquals(String.valueOf(v).length(), TokenIds.intChars(v), "of " + v);
    }
  }

  @Test
  void aLongSequenceWritesWhatJacksonWouldEveryTime() throws Exception {
    Random r = new Random(46);
    for (int n : new int[] {0, 1, 1023, 1024, 1025, 5000, 100_000}) {
      int[] ids = new int[n];
      for (int i = 0; i < n; i++) {
        ids[i] = switch (r.nextInt(4)) {
          case 0 -> r.nextInt(10);
          case 1 -> Integer.MIN_VALUE + r.nextInt(3);
          case 2 -> Integer.MAX_VALUE - r.nextInt(3);
          default -> r.nextInt();
        };
      }
      TokenIds t = TokenIds.of(ids);
      String expected = PLAIN.writeValueAsString(ids);
      ChatCompletionRequest leg = ChatCompletionRequest.builder("m", List.of(ChatMessage.of("user", "x")))
          .promptTokenIds(t).build();
      for (int k = 0; k < 2; k++) { // the first write keeps the JSON, the next copies it
        String written = new String(CODEC.toJsonBytes(leg), StandardCharsets.UTF_8);
        assertEquals(expected, PLAIN.readTree(written).get("prompt_token_ids").toString(), "n=" + n);
        assertEquals(expected, CODEC.toTree(leg).get("prompt_token_ids").toString(), "a tree, n=" + n);
        assertEquals(t, CODEC.parseChatCompletionRequest(written.getBytes(StandardCharsets.UTF_8)).promptTokenIds());
      }
    }
  }

  @Test
  void aBase64StringIsCopiedAsItIsAndAnyOtherStringEscaped() throws Exception {
    for (String b64 : new String[] {TokenIds.of(1, 2, 151_643).toBase64(), "", "a\"b\\c\n", "é+/=", "AQ==\u0000"}) {
      ChatCompletionRequest r = ChatCompletionRequest.builder("m", List.of(ChatMessage.of("user", "x")))
          .promptTokenIdsB64(b64).build();
      String written = new String(CODEC.toJsonBytes(r), StandardCharsets.UTF_8);
      assertEquals(b64, PLAIN.readTree(written).get("prompt_token_ids_b64").asText(), written);
      assertEquals(b64, CODEC.toTree(r).get("prompt_token_ids_b64").asText());
    }
  }

  @Test
  void baseSixtyFourIsLittleEndianInt32() {
    assertEquals("AQAAAA==", TokenIds.of(1).toBase64(), "upstream's own example");
    int[] ids = {0, 1, 151_643, -1, Integer.MAX_VALUE};
    assertArrayEquals(ids, TokenIds.fromBase64(TokenIds.of(ids).toBase64(), "f").toArray());
    assertEquals(0, TokenIds.fromBase64("", "f").size());
    ProtocolException notBase64 = assertThrows(ProtocolException.class, () -> TokenIds.fromBase64("@@", "prompt_token_ids_b64"));
    assertEquals(400, notBase64.status());
    assertEquals(true, notBase64.getMessage().contains("prompt_token_ids_b64"), notBase64.getMessage());
    ProtocolException notWhole = assertThrows(ProtocolException.class, () -> TokenIds.fromBase64("AQID", "prompt_token_ids_b64"));
    assertEquals(true, notWhole.getMessage().contains("3 bytes"), notWhole.getMessage());
  }
}
