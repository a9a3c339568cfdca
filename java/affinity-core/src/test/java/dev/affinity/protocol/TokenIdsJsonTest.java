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

  /**
   * A conversation's turns ({@link TokenIds#following}): each turn's ids share a random part of the last turn's from
   * the start (all of it, a part, none, or all with one id changed) and add their own; whether the last turn's JSON
   * was written or not, each writes the JSON a fresh sequence writes, and finds itself in a body that carries it
   * ({@code keptJsonAt}), and nowhere else.
   */
  @Test
  void turnsThatFollowTheLastWriteWhatAFreshSequenceWrites() throws Exception {
    Random r = new Random(47);
    TokenIds last = null;
    int[] lastIds = new int[0];
    for (int turn = 0; turn < 300; turn++) {
      int keep = switch (r.nextInt(4)) {
        case 0 -> r.nextInt(lastIds.length + 1);
        case 1 -> 0;
        default -> lastIds.length;
      };
      int[] ids = java.util.Arrays.copyOf(lastIds, keep + r.nextInt(r.nextInt(8) == 0 ? 20_000 : 900));
      for (int i = keep; i < ids.length; i++) {
        ids[i] = r.nextInt(8) == 0 ? -r.nextInt(1000) : r.nextInt(152_000);
      }
      if (keep > 0 && r.nextInt(8) == 0) {
        ids[r.nextInt(keep)] += 1;  // an earlier id changed: its chunk and those after are written again
      }
      TokenIds next = TokenIds.following(last, ids);
      if (r.nextInt(6) > 0) {  // written by the turn's legs; else never (the next turn then writes whole)
        String expected = PLAIN.writeValueAsString(ids);
        byte[] body = CODEC.toJsonBytes(java.util.Map.of("prompt_token_ids", next));
        assertEquals("{\"prompt_token_ids\":" + expected + "}", new String(body, StandardCharsets.UTF_8), "turn " + turn);
        assertArrayEquals(body, CODEC.toJsonBytes(java.util.Map.of("prompt_token_ids", next)), "written again");
        if (next.jsonKept()) {
          int at = "{\"prompt_token_ids\":".length();
          assertEquals(expected.length(), next.keptJsonAt(body, at), "turn " + turn);
          assertEquals(-1, next.keptJsonAt(body, at + 1));
          byte[] other = body.clone();
          other[at + 1 + r.nextInt(expected.length() - 2)] = ' ';
          assertEquals(-1, next.keptJsonAt(other, at), "a changed byte");
        }
      }
      last = next;
      lastIds = ids;
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
