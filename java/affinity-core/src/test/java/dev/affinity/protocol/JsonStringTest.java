package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A client's message text keeps its spelling ({@link JsonString}): a leg body carries the bytes the client sent,
 * which decode to the same text, for random texts spelled with every kind of escape; a text made in code, a tree's,
 * and a character writer's output are escaped as before.
 */
class JsonStringTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  private static final String[] PIECES = {"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\r", "\b", "\f", "\u0001",
      "\u001f", "\u007f", "é", "ß", "中", "😀", "{\"k\": [1, 2]}", "def f(x):\n    return \"x\"\n", "\u2028", "<|im_end|>"};

  /** {@code c} spelled one of the ways JSON allows, chosen at random (escaped, \\u-escaped, or as it is). */
  private static void spell(StringBuilder json, String piece, Random r) {
    for (int i = 0; i < piece.length(); i++) {
      char c = piece.charAt(i);
      if (Character.isHighSurrogate(c)) { // a pair: both halves escaped, or the character as it is
        json.append(r.nextBoolean() ? String.format("\\u%04x\\u%04x", (int) c, (int) piece.charAt(i + 1))
            : piece.substring(i, i + 2));
        i++;
        continue;
      }
      boolean mustEscape = c == '"' || c == '\\' || c < 0x20;
      int way = r.nextInt(3);
      if (way == 0 || (mustEscape && way == 2)) {
        json.append(String.format("\\u%04x", (int) c));
      } else if (way == 1 && (mustEscape || c == '/')) {
        json.append(switch (c) {
          case '"' -> "\\\"";
          case '\\' -> "\\\\";
          case '/' -> "\\/";
          case '\n' -> "\\n";
          case '\t' -> "\\t";
          case '\r' -> "\\r";
          case '\b' -> "\\b";
          case '\f' -> "\\f";
          default -> String.format("\\u%04x", (int) c);
        });
      } else if (mustEscape) {
        json.append(String.format("\\u%04X", (int) c));
      } else {
        json.append(c);
      }
    }
  }

  @Test
  void aClientsTextIsWrittenToTheLegAsItWasSpelledAndDecodesToTheSameText() {
    Random r = new Random(46);
    for (int i = 0; i < 300; i++) {
      StringBuilder text = new StringBuilder();
      StringBuilder spelled = new StringBuilder();
      for (int n = r.nextInt(12); n >= 0; n--) {
        String piece = PIECES[r.nextInt(PIECES.length)];
        text.append(piece);
        spell(spelled, piece, r);
      }
      String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
          + "{\"role\":\"user\",\"content\":\"" + spelled + "\"}],\"max_tokens\":3}";
      ChatCompletionRequest request = CODEC.parseChatCompletionRequest(body.getBytes(StandardCharsets.UTF_8));
      assertEquals(text.toString(), request.messages().get(1).contentText(), body);
      MessageContent.Text content = (MessageContent.Text) request.messages().get(1).content();
      assertNotNull(content.json(), body);

      OpenAiRequest leg = request.forLeg(true, null, new ConversationParams("c"), TokenIds.of(1, 2, 3));
      String written = new String(CODEC.toJsonBytes(leg), StandardCharsets.UTF_8);
      assertTrue(written.contains("\"content\":\"" + spelled + "\""), written);
      ChatCompletionRequest back = CODEC.parseChatCompletionRequest(written.getBytes(StandardCharsets.UTF_8));
      assertEquals(request.messages(), back.messages(), written);
      assertEquals(text.toString(), back.messages().get(1).contentText());

      // a tree and a String are written by other generators: escaped as usual, the same text
      JsonNode tree = CODEC.toTree(leg);
      assertEquals(text.toString(), tree.at("/messages/1/content").asText());
      assertEquals(text.toString(), CODEC.readTree(CODEC.toJsonString(leg).getBytes(StandardCharsets.UTF_8))
          .at("/messages/1/content").asText());
    }
  }

  @Test
  void aTextMadeInCodeOrReadFromATreeIsEscapedAsBefore() {
    ChatCompletionRequest made = ChatCompletionRequest.builder("m", List.of(ChatMessage.of("user", "a\"b\u00e9"))).build();
    assertNull(((MessageContent.Text) made.messages().get(0).content()).json());
    assertTrue(CODEC.toJsonString(made).contains("\"content\":\"a\\\"bé\""), CODEC.toJsonString(made));

    JsonNode tree = CODEC.readTree("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\\u0061\\/\"}]}"
        .getBytes(StandardCharsets.UTF_8));
    ChatCompletionRequest fromTree = CODEC.parseChatCompletionRequest(tree);
    assertNull(((MessageContent.Text) fromTree.messages().get(0).content()).json());
    assertTrue(CODEC.toJsonString(fromTree).contains("\"content\":\"a/\""), CODEC.toJsonString(fromTree));
  }

  @Test
  void equalityIsTheTextsAlone() {
    ChatCompletionRequest a = CODEC.parseChatCompletionRequest(
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\\u0061\"}]}".getBytes(StandardCharsets.UTF_8));
    MessageContent spelled = a.messages().get(0).content();
    assertEquals(MessageContent.of("a"), spelled);
    assertEquals(MessageContent.of("a").hashCode(), spelled.hashCode());
  }

  /**
   * A record's text is what a plain parser decodes from the same body, whatever the spelling; a string JSON does not
   * allow (an unknown or short escape, a lone surrogate, a raw control character, an unterminated string) is refused
   * with a 400, spelling kept or not.
   */
  @Test
  void aRecordsTextIsWhatAPlainParserDecodesAndBadStringsAreRefused() throws Exception {
    com.fasterxml.jackson.databind.ObjectMapper plain = new com.fasterxml.jackson.databind.ObjectMapper();
    Random r = new Random(47);
    for (int i = 0; i < 500; i++) {
      StringBuilder spelled = new StringBuilder();
      for (int n = r.nextInt(12); n >= 0; n--) {
        spell(spelled, PIECES[r.nextInt(PIECES.length)], r);
      }
      String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + spelled + "\"}]}";
      String byParser = plain.readTree(body).at("/messages/0/content").asText();
      assertEquals(byParser, CODEC.parseChatCompletionRequest(body.getBytes(StandardCharsets.UTF_8)).messages().get(0)
          .contentText(), body);
    }
    for (String bad : new String[] {"a\\qb", "\\u12", "\\u12g4", "x\\ud800y", "\\udc00", "\\ud83d\\u0041", "a\u0001b",
        "tab\there", "\\"}) {
      String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + bad + "\"}]}";
      ProtocolException e = org.junit.jupiter.api.Assertions.assertThrows(ProtocolException.class,
          () -> CODEC.parseChatCompletionRequest(body.getBytes(StandardCharsets.UTF_8)), body);
      assertEquals(400, e.status(), body);
    }
  }
}
