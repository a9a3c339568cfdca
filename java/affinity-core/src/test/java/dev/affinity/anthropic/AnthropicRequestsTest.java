package dev.affinity.anthropic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The conversion rules of a Messages body into a chat request, and what is refused (naming the field). */
class AnthropicRequestsTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static ObjectNode chat(String body) throws Exception {
    return AnthropicRequests.toChatJson((ObjectNode) JSON.readTree(body.replace('\'', '"')), false);
  }

  static ProtocolException refused(String body) {
    return assertThrows(ProtocolException.class, () -> chat(body));
  }

  static final String BASE = "'model': 'm', 'max_tokens': 16";

  @Test
  void systemBlocksAndLeadingSystemMessagesJoinIntoOneLeadingSystemMessage() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'system': [{'type': 'text', 'text': 'x-anthropic-billing-header: cc_version=1; cch=9'},"
        + " {'type': 'text', 'text': 'You are helpful.', 'cache_control': {'type': 'ephemeral'}}, {'type': 'text', 'text': 'Be brief.'}],"
        + " 'messages': [{'role': 'system', 'content': 'Lead.'}, {'role': 'user', 'content': 'hi'},"
        + " {'role': 'system', 'content': 'Later.'}]}");
    JsonNode msgs = c.get("messages");
    assertEquals("system", msgs.get(0).get("role").asText());
    assertEquals("You are helpful.\n\nBe brief.\n\nLead.", msgs.get(0).get("content").asText(),
        "billing telemetry dropped, parts joined with a blank line");
    assertEquals("user", msgs.get(1).get("role").asText());
    assertEquals("system", msgs.get(2).get("role").asText(), "a later system message stays in place");
    assertEquals(3, msgs.size());
  }

  @Test
  void samplingStopAndMaxTokensAreCopied() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'temperature': 0.5, 'top_p': 0.9, 'top_k': 40, 'stop_sequences': ['END', '##'],"
        + " 'messages': [{'role': 'user', 'content': 'hi'}]}");
    assertEquals(16, c.get("max_completion_tokens").asInt());
    assertEquals(0.5, c.get("temperature").asDouble());
    assertEquals(0.9, c.get("top_p").asDouble());
    assertEquals(40, c.get("top_k").asInt());
    assertEquals("[\"END\",\"##\"]", c.get("stop").toString());
    assertFalse(c.has("stream"));
  }

  @Test
  void streamingAsksForUsageOnEveryChunk() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'stream': true, 'messages': [{'role': 'user', 'content': 'hi'}]}");
    assertTrue(c.get("stream").asBoolean());
    assertTrue(c.at("/stream_options/include_usage").asBoolean());
    assertTrue(c.at("/stream_options/continuous_usage_stats").asBoolean());
  }

  @Test
  void toolUseAndToolResultBecomeToolCallsAndToolMessages() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'tools': [{'name': 'read', 'description': 'Read a file',"
        + " 'input_schema': {'type': 'object', 'properties': {'path': {'type': 'string'}}}}],"
        + " 'messages': [{'role': 'user', 'content': 'read a'},"
        + " {'role': 'assistant', 'content': [{'type': 'thinking', 'thinking': 'need a', 'signature': 's'},"
        + "   {'type': 'text', 'text': 'Reading.'}, {'type': 'tool_use', 'id': 'toolu_1', 'name': 'read', 'input': {'path': 'a'}}]},"
        + " {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'toolu_1', 'content': [{'type': 'text', 'text': 'A'}]},"
        + "   {'type': 'tool_result', 'tool_use_id': 'toolu_2', 'content': 'nope', 'is_error': true},"
        + "   {'type': 'text', 'text': 'thanks'}]}]}");
    assertEquals("auto", c.get("tool_choice").asText(), "tools without a choice: auto");
    JsonNode fn = c.at("/tools/0/function");
    assertEquals("function", c.at("/tools/0/type").asText());
    assertEquals("read", fn.get("name").asText());
    assertEquals("object", fn.at("/parameters/type").asText());
    JsonNode msgs = c.get("messages");
    JsonNode assistant = msgs.get(1);
    assertEquals("Reading.", assistant.get("content").asText());
    assertEquals("need a", assistant.get("reasoning").asText());
    assertEquals("toolu_1", assistant.at("/tool_calls/0/id").asText());
    assertEquals("{\"path\":\"a\"}", assistant.at("/tool_calls/0/function/arguments").asText());
    assertEquals("tool", msgs.get(2).get("role").asText());
    assertEquals("toolu_1", msgs.get(2).get("tool_call_id").asText());
    assertEquals("A", msgs.get(2).get("content").asText());
    assertEquals(AnthropicRequests.TOOL_ERROR_PREFIX + "nope", msgs.get(3).get("content").asText());
    assertEquals("user", msgs.get(4).get("role").asText());
    assertEquals("thanks", msgs.get(4).get("content").asText(), "the user's text follows the tool results");
  }

  @Test
  void imagesBecomeImageUrlParts() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'see'},"
        + " {'type': 'image', 'source': {'type': 'base64', 'media_type': 'image/jpeg', 'data': 'QUJD'}},"
        + " {'type': 'image', 'source': {'type': 'url', 'url': 'https://x/y.png'}}]}]}");
    JsonNode parts = c.at("/messages/0/content");
    assertEquals("data:image/jpeg;base64,QUJD", parts.at("/1/image_url/url").asText());
    assertEquals("https://x/y.png", parts.at("/2/image_url/url").asText());
  }

  @Test
  void thinkingBecomesChatTemplateKwargs() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'max_tokens': 4096, 'thinking': {'type': 'enabled', 'budget_tokens': 2048},"
        + " 'messages': [{'role': 'user', 'content': 'hi'}]}");
    assertTrue(c.at("/chat_template_kwargs/enable_thinking").asBoolean());
    assertEquals(2048, c.at("/chat_template_kwargs/thinking_token_budget").asInt());
    assertEquals("thinking.budget_tokens", refused("{'model': 'm', 'max_tokens': 1024, 'thinking': {'type': 'enabled',"
        + " 'budget_tokens': 2048}, 'messages': [{'role': 'user', 'content': 'hi'}]}").field());
  }

  @Test
  void toolChoiceNoneDropsServerToolsAndKeepsTheOthers() throws Exception {
    ObjectNode c = chat("{" + BASE + ", 'tool_choice': {'type': 'none'}, 'tools': [{'type': 'web_search_20250305',"
        + " 'name': 'web_search'}, {'name': 'read', 'input_schema': {'type': 'object'}}],"
        + " 'messages': [{'role': 'user', 'content': 'hi'}]}");
    assertEquals("none", c.get("tool_choice").asText());
    assertEquals(1, c.get("tools").size());
    assertEquals("read", c.at("/tools/0/function/name").asText());
  }

  @Test
  void whatCannotBeServedIsA400NamingTheField() {
    String user = "'messages': [{'role': 'user', 'content': 'hi'}]";
    assertEquals("max_tokens", refused("{'model': 'm', " + user + "}").field());
    assertEquals("max_tokens", refused("{'model': 'm', 'max_tokens': 0, " + user + "}").field());
    assertEquals("temperature", refused("{" + BASE + ", 'temperature': 1.5, " + user + "}").field());
    assertEquals("top_k", refused("{" + BASE + ", 'top_k': -1, " + user + "}").field());
    assertEquals("messages", refused("{" + BASE + ", 'messages': []}").field());
    assertEquals("tool_choice.type", refused("{" + BASE + ", 'tool_choice': {'type': 'tool', 'name': 'x'}, " + user + "}")
        .field());
    assertEquals("tool_choice.disable_parallel_tool_use", refused("{" + BASE
        + ", 'tool_choice': {'type': 'auto', 'disable_parallel_tool_use': true}, " + user + "}").field());
    assertEquals("tools.0.type", refused("{" + BASE + ", 'tools': [{'type': 'web_fetch_20250910', 'name': 'f'}], "
        + user + "}").field());
    assertEquals("tools.0.input_schema", refused("{" + BASE + ", 'tools': [{'type': 'bash_20250124', 'name': 'bash'}], "
        + user + "}").field());
    assertEquals("messages.1.content.0.type", refused("{" + BASE + ", 'messages': [{'role': 'user', 'content': 'hi'},"
        + " {'role': 'assistant', 'content': [{'type': 'redacted_thinking', 'data': 'x'}]}]}").field());
    assertEquals("messages.0.content.0.type", refused("{" + BASE + ", 'messages': [{'role': 'user', 'content':"
        + " [{'type': 'document', 'source': {}}]}]}").field());
    assertEquals("messages.0.role", refused("{" + BASE + ", 'messages': [{'role': 'tool', 'content': 'x'}]}").field());
    assertEquals("mcp_servers", refused("{" + BASE + ", 'mcp_servers': [{}], " + user + "}").field());
  }

  @Test
  void countTokensNeedsNoMaxTokensAndNeverStreams() throws Exception {
    ObjectNode c = AnthropicRequests.toChatJson((ObjectNode) JSON.readTree(
        "{\"model\": \"m\", \"stream\": true, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}"), true);
    assertEquals(1, c.get("max_completion_tokens").asInt());
    assertFalse(c.has("stream"));
  }

  @Test
  void theConvertedJsonIsAValidChatRequest() {
    ChatCompletionRequest r = AnthropicRequests.toChat(("{\"model\": \"m\", \"max_tokens\": 8, \"system\": \"S\","
        + " \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}").getBytes(StandardCharsets.UTF_8), CODEC, false);
    assertEquals("m", r.model());
    assertEquals(2, r.messages().size());
    assertEquals(8, r.maxCompletionTokens());
    ProtocolException e = assertThrows(ProtocolException.class,
        () -> AnthropicRequests.toChat("[1]".getBytes(StandardCharsets.UTF_8), CODEC, false));
    assertEquals(400, e.status());
  }
}
