package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** Content as a string or typed text parts, flattened the Anthropic and the Responses way. */
class TextPartsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static JsonNode json(String s) throws Exception {
    return JSON.readTree(s);
  }

  @Test
  void anthropicTextBlocksJoinWithNewlines() throws Exception {
    TextParts blocks = TextParts.ANTHROPIC_TEXT_BLOCKS;
    assertEquals("a\nb", blocks.join(json("[{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]"),
        "system"));
    assertEquals("plain", blocks.join(json("\"plain\""), "system"));
    assertEquals("", blocks.join(null, "system"));
    assertEquals("", blocks.join(json("null"), "system"));
    ProtocolException image = assertThrows(ProtocolException.class,
        () -> blocks.join(json("[{\"type\": \"image\"}]"), "messages.0.content"));
    assertTrue(image.getMessage().contains("messages.0.content.0.type"), image.getMessage());
    ProtocolException noText = assertThrows(ProtocolException.class,
        () -> blocks.join(json("[{\"type\": \"text\", \"text\": 3}]"), "system"));
    assertTrue(noText.getMessage().contains("system.0.text"), noText.getMessage());
    assertThrows(ProtocolException.class, () -> blocks.join(json("{}"), "system"));
  }

  @Test
  void responsesTextPartsJoinAsTheyAreWithRefusals() throws Exception {
    TextParts parts = TextParts.RESPONSES_TEXT_PARTS;
    assertEquals("ab-no", parts.join(json("[{\"type\": \"input_text\", \"text\": \"a\"}, {\"type\": \"output_text\", "
        + "\"text\": \"b-\"}, {\"type\": \"refusal\", \"refusal\": \"no\"}]"), "input.0.content"));
    ProtocolException refusal = assertThrows(ProtocolException.class,
        () -> parts.join(json("[{\"type\": \"refusal\", \"text\": \"no\"}]"), "input.0.content"));
    assertTrue(refusal.getMessage().contains("input.0.content.0.refusal"), refusal.getMessage());
    ProtocolException image = assertThrows(ProtocolException.class,
        () -> parts.join(json("[{\"type\": \"input_image\"}]"), "input.0.content"));
    assertTrue(image.getMessage().contains("only text parts are allowed here"), image.getMessage());
  }
}
