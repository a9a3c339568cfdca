package dev.affinity.responses;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The conversion rules of a Responses body into a chat request, and every refusal (400 naming the field). */
class ResponsesRequestsTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static ResponsesRequests.ChatJson convert(String body) throws Exception {
    return ResponsesRequests.toChatJson((ObjectNode) JSON.readTree(body.replace('\'', '"')));
  }

  static ObjectNode chat(String body) throws Exception {
    return convert(body).chat();
  }

  static ProtocolException refused(String body) {
    return assertThrows(ProtocolException.class, () -> chat(body));
  }

  @Test
  void aStringInputIsOneUserMessageAndInstructionsTheSystemMessage() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'instructions': 'Be brief.', 'input': 'hi', 'max_output_tokens': 12,"
        + " 'temperature': 0.5, 'top_p': 0.9, 'store': false}");
    assertEquals("m", c.get("model").asText());
    assertEquals(12, c.get("max_completion_tokens").asInt());
    assertEquals(0.5, c.get("temperature").asDouble());
    assertEquals(0.9, c.get("top_p").asDouble());
    assertEquals("[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"hi\"}]",
        c.get("messages").toString());
    assertFalse(c.has("stream"));
    assertFalse(c.has("tools"));
  }

  @Test
  void anAbsentStoreIsServedStatelessly() throws Exception {
    ResponsesRequests.ChatJson j = convert("{'model': 'm', 'input': 'hi'}");
    assertEquals(1, j.chat().get("messages").size());
    assertTrue(j.echo().get("instructions").isNull());
    assertTrue(j.echo().get("max_output_tokens").isNull());
  }

  @Test
  void streamingAsksForUsageOnEveryChunk() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'input': 'hi', 'stream': true}");
    assertTrue(c.get("stream").asBoolean());
    assertEquals("{\"include_usage\":true,\"continuous_usage_stats\":true}", c.get("stream_options").toString());
  }

  @Test
  void messageItemsKeepTheirRolesAndTextParts() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'instructions': 'Sys.', 'input': ["
        + " {'role': 'developer', 'content': 'Dev.'},"
        + " {'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'Q1'}]},"
        + " {'type': 'message', 'role': 'assistant', 'content': [{'type': 'output_text', 'text': 'A1', 'annotations': []}]},"
        + " {'role': 'system', 'content': [{'type': 'input_text', 'text': 'Later.'}]},"
        + " {'role': 'user', 'content': [{'type': 'input_text', 'text': 'look'},"
        + "   {'type': 'input_image', 'image_url': 'https://x/y.png', 'detail': 'low'}]}]}");
    JsonNode m = c.get("messages");
    assertEquals(5, m.size(), m.toString());
    assertEquals("{\"role\":\"system\",\"content\":\"Sys.\\n\\nDev.\"}", m.get(0).toString(),
        "instructions and the leading developer message join into one system message");
    assertEquals("{\"role\":\"user\",\"content\":\"Q1\"}", m.get(1).toString());
    assertEquals("{\"role\":\"assistant\",\"content\":\"A1\"}", m.get(2).toString());
    assertEquals("{\"role\":\"system\",\"content\":\"Later.\"}", m.get(3).toString(), "a later one stays in place");
    assertEquals("[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image_url\",\"image_url\":"
        + "{\"url\":\"https://x/y.png\",\"detail\":\"low\"}}]", m.get(4).get("content").toString());
  }

  @Test
  void functionCallsJoinTheAssistantTurnAndOutputsBecomeToolMessages() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'input': [{'role': 'user', 'content': 'weather?'},"
        + " {'type': 'reasoning', 'id': 'rs_1', 'summary': [], 'encrypted_content': 'xyz'},"
        + " {'type': 'message', 'role': 'assistant', 'content': [{'type': 'output_text', 'text': 'Checking.'}]},"
        + " {'type': 'function_call', 'call_id': 'call_a', 'name': 'get_weather', 'arguments': '{\\'city\\':\\'Oslo\\'}'},"
        + " {'type': 'function_call', 'call_id': 'call_b', 'name': 'get_time', 'arguments': '{}'},"
        + " {'type': 'function_call_output', 'call_id': 'call_a', 'output': 'rain'},"
        + " {'type': 'function_call_output', 'call_id': 'call_b', 'output': [{'type': 'input_text', 'text': '12:00'}]}]}");
    JsonNode m = c.get("messages");
    assertEquals(4, m.size(), m.toString());
    JsonNode a = m.get(1);
    assertEquals("assistant", a.get("role").asText());
    assertEquals("Checking.", a.get("content").asText());
    assertEquals(2, a.get("tool_calls").size());
    assertEquals("{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        + "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}", a.get("tool_calls").get(0).toString());
    assertEquals("{\"role\":\"tool\",\"tool_call_id\":\"call_a\",\"content\":\"rain\"}", m.get(2).toString());
    assertEquals("12:00", m.get(3).get("content").asText());
  }

  @Test
  void aFunctionCallWithoutAPrecedingAssistantMessageStartsOne() throws Exception {
    JsonNode m = chat("{'model': 'm', 'input': [{'role': 'user', 'content': 'go'},"
        + " {'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{}'}]}").get("messages");
    assertEquals("{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        + "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}", m.get(1).toString());
  }

  @Test
  void functionToolsBecomeChatToolsAndAreEchoed() throws Exception {
    ResponsesRequests.ChatJson j = convert("{'model': 'm', 'input': 'hi', 'tool_choice': 'auto', 'tools': [{'type': 'function',"
        + " 'name': 'get_weather', 'description': 'Weather.', 'parameters': {'type': 'object', 'properties': {}},"
        + " 'strict': true}]}");
    assertEquals("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather.\","
        + "\"parameters\":{\"type\":\"object\",\"properties\":{}},\"strict\":true}}]", j.chat().get("tools").toString());
    assertEquals("auto", j.chat().get("tool_choice").asText());
    assertEquals("get_weather", j.echo().at("/tools/0/name").asText(), "the response repeats the tools as sent");
    assertEquals("auto", j.echo().get("tool_choice").asText());
  }

  @Test
  void textFormatAndReasoningEffortAreForwarded() throws Exception {
    ObjectNode c = chat("{'model': 'm', 'input': 'hi', 'reasoning': {'effort': 'low', 'summary': 'auto'},"
        + " 'text': {'format': {'type': 'json_schema', 'name': 'out', 'schema': {'type': 'object'}, 'strict': true}}}");
    assertEquals("{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"out\",\"schema\":{\"type\":\"object\"},"
        + "\"strict\":true}}", c.get("response_format").toString());
    assertEquals("low", c.get("reasoning_effort").asText());
    assertFalse(chat("{'model': 'm', 'input': 'hi', 'text': {'format': {'type': 'text'}}}").has("response_format"));
    assertEquals("json_object", chat("{'model': 'm', 'input': 'hi', 'text': {'format': {'type': 'json_object'}}}")
        .at("/response_format/type").asText());
  }

  @Test
  void theConvertedRequestPassesTheChatChecks() {
    ResponsesRequests.Converted c = ResponsesRequests.toChat(("{\"model\": \"m\", \"input\": \"hi\","
        + " \"include\": [\"reasoning.encrypted_content\"], \"store\": false, \"metadata\": {\"k\": \"v\"}}")
        .getBytes(StandardCharsets.UTF_8), CODEC);
    ChatCompletionRequest chat = c.chat();
    assertEquals("m", chat.model());
    assertEquals(1, chat.messages().size());
    assertEquals("v", c.echo().at("/metadata/k").asText());
  }

  @ParameterizedTest(name = "{0} is refused naming {1}")
  @CsvSource(delimiter = '|', value = {
      "'previous_response_id': 'resp_1'|previous_response_id",
      "'store': true|store",
      "'conversation': 'conv_1'|conversation",
      "'conversation': {'id': 'conv_1'}|conversation",
      "'background': true|background",
      "'prompt': {'id': 'pmpt_1'}|prompt",
      "'truncation': 'auto'|truncation",
      "'max_tool_calls': 3|max_tool_calls",
      "'top_logprobs': 2|top_logprobs",
      "'parallel_tool_calls': false|parallel_tool_calls",
      "'tool_choice': 'required'|tool_choice",
      "'tool_choice': {'type': 'function', 'name': 'f'}|tool_choice",
      "'tools': [{'type': 'web_search'}]|tools.0.type",
      "'tools': [{'type': 'file_search', 'vector_store_ids': ['vs']}]|tools.0.type",
      "'tools': [{'type': 'function'}]|tools.0.name",
      "'temperature': 2.5|temperature",
      "'top_p': 0|top_p",
      "'max_output_tokens': 0|max_output_tokens",
      "'stream': 'yes'|stream",
      "'text': {'format': {'type': 'xml'}}|text.format.type",
      "'frequency_penalty': 0.1|frequency_penalty",
      "'instructions': 5|instructions",
  })
  void statefulAndUnservableFieldsAreRefusedByName(String extra, String field) {
    ProtocolException e = refused("{'model': 'm', 'input': 'hi', " + extra + "}");
    assertEquals(400, e.status());
    assertEquals(field, e.field(), e.getMessage());
    ErrorResponse body = e.toErrorResponse();
    assertEquals(field, body.error().param());
    assertEquals("invalid_request_error", body.error().type());
  }

  @ParameterizedTest(name = "input {0} is refused naming {1}")
  @CsvSource(delimiter = '|', value = {
      "[{'type': 'item_reference', 'id': 'msg_1'}]|input.0.type",
      "[{'role': 'user', 'content': 'a'}, {'type': 'web_search_call', 'id': 'ws'}]|input.1.type",
      "[{'role': 'user', 'content': [{'type': 'input_file', 'file_id': 'f'}]}]|input.0.content.0.type",
      "[{'role': 'user', 'content': [{'type': 'input_image', 'file_id': 'f'}]}]|input.0.content.0.file_id",
      "[{'role': 'tool', 'content': 'x'}]|input.0.role",
      "[{'type': 'function_call', 'name': 'f', 'arguments': '{}'}]|input.0.call_id",
      "[{'type': 'function_call_output', 'call_id': 'c'}]|input.0.output",
      "[{'content': 'no role or type'}]|input.0.type",
      "[]|input",
      "7|input",
  })
  void unservableInputItemsAreRefusedByPath(String input, String field) {
    ProtocolException e = refused("{'model': 'm', 'input': " + input + "}");
    assertEquals(field, e.field(), e.getMessage());
  }

  @Test
  void errorsAboutTheConvertedChatRequestNameTheResponsesField() {
    ProtocolException prompt = ResponsesRequests.inResponsesTerms(
        ProtocolException.invalidField("messages", "the prompt has 9 tokens; at most 8 fit"));
    assertEquals("input", prompt.field());
    assertEquals("input: the prompt has 9 tokens; at most 8 fit", prompt.getMessage());
    ProtocolException max = ResponsesRequests.inResponsesTerms(
        ProtocolException.invalidField("max_completion_tokens", "max_completion_tokens must be at least 1, got 0"));
    assertEquals("max_output_tokens: max_output_tokens must be at least 1, got 0", max.getMessage());
    ProtocolException same = ProtocolException.invalidField("temperature", "bad");
    assertEquals(same, ResponsesRequests.inResponsesTerms(same));
  }

  @Test
  void modelAndInputAreRequired() {
    assertEquals("model", refused("{'input': 'hi'}").field());
    assertEquals("input", refused("{'model': 'm'}").field());
    assertEquals("input", refused("{'model': 'm', 'instructions': 'only instructions'}").field());
  }
}
