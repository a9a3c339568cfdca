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
}
