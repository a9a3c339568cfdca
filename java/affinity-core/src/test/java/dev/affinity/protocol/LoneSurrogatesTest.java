package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.anthropic.AnthropicRequests;
import dev.affinity.responses.ResponsesRequests;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An escaped lone surrogate ({@code "\ud800"}) in a client body is a 400 naming its field, on every API and in each
 * API's own terms; a surrogate pair and an escaped backslash followed by {@code ud800} are text and pass.
 */
class LoneSurrogatesTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static ProtocolException refused(Runnable parse) {
    ProtocolException e = assertThrows(ProtocolException.class, parse::run);
    assertEquals(400, e.status());
    assertTrue(e.detail().contains("unpaired UTF-16 surrogate"), e.detail());
    return e;
  }

  @ParameterizedTest
  @ValueSource(strings = {"\\ud800", "\\uDBFF", "\\udc00", "a\\ude00b", "\\ud83d\\ud83d\\ude00"})
  void aChatMessageWithALoneSurrogateIsRefusedNamingItsContent(String escaped) {
    String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
        + "{\"role\":\"user\",\"content\":\"" + escaped + "\"}]}";
    assertEquals("messages[1].content", refused(() -> CODEC.parseChatCompletionRequest(utf8(body))).field());
  }

  @Test
  void aCompletionPromptAKeyAndAnUnmodelledFieldAreNamed() {
    assertEquals("prompt", refused(() -> CODEC.parseCompletionRequest(
        utf8("{\"model\":\"m\",\"prompt\":\"x\\ud800\"}"))).field());
    assertEquals("user", refused(() -> CODEC.parseCompletionRequest(
        utf8("{\"model\":\"m\",\"prompt\":\"x\",\"user\":\"\\udfff\"}"))).field());
    assertEquals("extra", refused(() -> CODEC.parseCompletionRequest(
        utf8("{\"model\":\"m\",\"prompt\":\"x\",\"extra\":{\"k\\ud800\":1}}"))).field());
  }

  @Test
  void messagesAndResponsesNameTheirOwnPaths() {
    String messages = "{\"model\":\"m\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":"
        + "[{\"type\":\"text\",\"text\":\"\\ud800\"}]}]}";
    assertEquals("messages[0].content[0].text",
        refused(() -> AnthropicRequests.toChat(utf8(messages), CODEC, false)).field());
    String responses = "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"ok\"},"
        + "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"\\udc00\"}]}]}";
    assertEquals("input[1].content[0].text", refused(() -> ResponsesRequests.toChat(utf8(responses), CODEC)).field());
    assertEquals("instructions", refused(() -> ResponsesRequests.toChat(
        utf8("{\"model\":\"m\",\"input\":\"hi\",\"instructions\":\"\\ud800\"}"), CODEC)).field());
  }

  @Test
  void pairsAndEscapedBackslashesAreText() {
    ChatCompletionRequest emoji = CODEC.parseChatCompletionRequest(
        utf8("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\\ud83d\\ude00 \\\\ud800\"}]}"));
    assertEquals("\uD83D\uDE00 \\ud800", emoji.messages().get(0).contentText());
  }

  @Test
  void workerBodiesAreNotTheClientsFault() {
    // a worker's text is relayed as it came; only client bodies are refused for it
    CompletionResponse r = CODEC.parseCompletionResponse(utf8("{\"id\":\"c\",\"object\":\"text_completion\","
        + "\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\\ud800\",\"finish_reason\":null}],"
        + "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}"));
    assertEquals("\uD800", r.choices().get(0).text());
  }

  /** The word-at-a-time search finds a surrogate escape wherever it sits, as a byte-by-byte search does. */
  @Test
  void theWordAtATimeSearchAgreesWithAByteByByteOne() {
    java.util.Random r = new java.util.Random(20261207);
    String[] pieces = {"a", "\\", "\\u", "\\ud", "\\uD8", "\\ud83d", "\\uDFFF", "\\ue000", "\\u0041", "\\ucafe", "u",
        "d8", " ", "\"", "\\\\ud800", "é"};
    for (int n = 0; n < 5000; n++) {
      StringBuilder sb = new StringBuilder();
      for (int k = r.nextInt(20); k >= 0; k--) {
        sb.append(pieces[r.nextInt(pieces.length)]);
      }
      byte[] body = sb.toString().getBytes(StandardCharsets.UTF_8);
      boolean expected = false;
      for (int i = 0; i + 6 <= body.length && !expected; i++) {
        expected = body[i] == '\\' && body[i + 1] == 'u' && (body[i + 2] | 0x20) == 'd'
            && "89abcdef".indexOf(body[i + 3] | 0x20) >= 0;
      }
      assertEquals(expected, LoneSurrogates.mayContain(body), sb.toString());
    }
  }
}
