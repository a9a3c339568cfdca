package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Upstream's chat content key. The expected values are BLAKE3 digests computed independently with the reference
 * implementation's command-line tool ({@code printf 'TensorRT-LLM-route-affinity-v1!!' | b3sum --keyed --length 8}
 * over the text upstream hashes), read as little-endian integers.
 */
class ContentKeyTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static ChatCompletionRequest chat(String messages) {
    return CODEC.parseChatCompletionRequest(("{\"model\": \"m\", \"messages\": " + messages + "}")
        .getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void theKeyedDigestOfTheFirstContentAsUpstreamComputesIt() {
    // b3sum over "hello": 9cf8c9aac08d6565
    assertEquals(Long.parseUnsignedLong("65658dc0aac9f89c", 16),
        ContentKey.of(chat("[{\"role\": \"user\", \"content\": \"hello\"}]"), null));
  }

  @Test
  void twoContentsANullOneAsNoneAndTheLeadingIds() {
    // b3sum over "sys promptNone[1, 2, 3]": 5248245da3af1181
    assertEquals(Long.parseUnsignedLong("8111afa35d244852", 16), ContentKey.of(chat(
        "[{\"role\": \"system\", \"content\": \"sys prompt\"}, {\"role\": \"user\", \"content\": null},"
            + " {\"role\": \"user\", \"content\": \"ignored\"}]"), new int[] {1, 2, 3}));
  }

  @Test
  void onlyTheFirstTwoMessagesAndTheFirst256IdsCount() {
    ChatCompletionRequest a = chat("[{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"},"
        + " {\"role\": \"assistant\", \"content\": \"one\"}]");
    ChatCompletionRequest b = chat("[{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"},"
        + " {\"role\": \"assistant\", \"content\": \"two\"}]");
    assertEquals(ContentKey.of(a, null), ContentKey.of(b, null));
    int[] long1 = new int[300];
    int[] long2 = new int[300];
    long2[299] = 7;
    assertEquals(ContentKey.of(a, long1), ContentKey.of(a, long2), "ids past the first 256 do not count");
    long2[10] = 7;
    assertNotEquals(ContentKey.of(a, long1), ContentKey.of(a, long2));
    assertNotEquals(ContentKey.of(a, null), ContentKey.of(a, long1));
  }

  @Test
  void contentPartsArePythonReprs() {
    StringBuilder out = new StringBuilder();
    ContentKey.repr(out, new com.fasterxml.jackson.databind.ObjectMapper().valueToTree(java.util.List.of(
        java.util.Map.of("type", "text"), java.util.Map.of("text", "it's \"q\"\n"))));
    assertEquals("[{'type': 'text'}, {'text': 'it\\'s \"q\"\\n'}]", out.toString());
    StringBuilder s = new StringBuilder();
    ContentKey.stringRepr(s, "it's");
    assertEquals("\"it's\"", s.toString(), "double quotes when the text has a single quote only");
    StringBuilder u = new StringBuilder();
    ContentKey.stringRepr(u, "é\u0007\u00a0");
    assertEquals("'é\\x07\\xa0'", u.toString());
  }
}
