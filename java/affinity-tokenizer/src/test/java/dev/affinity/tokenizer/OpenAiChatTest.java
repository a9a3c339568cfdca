package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

/** {@link OpenAiChat#toInput} and {@link OpenAiChat#hasMedia}: every conversion rule of the class javadoc. */
class OpenAiChatTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static ChatCompletionRequest chat(String json) {
    return CODEC.parseChatCompletionRequest(json.replace('\'', '"').getBytes(StandardCharsets.UTF_8));
  }

  private static ChatInput input(String json) {
    return OpenAiChat.toInput(chat(json));
  }

  private static String messagesJson(String messages) {
    return dev.affinity.protocol.PythonJsonDumps.tojson(input("{'model': 'm', 'messages': " + messages + "}").messages());
  }

  @Test
  void stringContentAsIsWithAnEmptyMediaList() {
    assertEquals("[{\"role\": \"user\", \"content\": \"  hi\\n\", \"media\": []}]",
        messagesJson("[{'role': 'user', 'content': '  hi\\n'}]"));
    assertEquals("[{\"role\": \"user\", \"content\": \"\", \"media\": []}]",
        messagesJson("[{'role': 'user', 'content': ''}]"));
  }

  @Test
  void textPartsJoinedWithNewlinesSkippingEmptyOnesAndMedia() {
    String out = messagesJson("[{'role': 'user', 'content': [{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': ''},"
        + " {'type': 'image_url', 'image_url': {'url': 'http://x/y.png'}}, {'type': 'text', 'text': 'b'},"
        + " {'type': 'text', 'text': ' c '}]}]");
    assertEquals("[{\"role\": \"user\", \"content\": \"a\\nb\\n c \", \"media\": []}]", out);
    assertEquals("[{\"role\": \"user\", \"content\": \"\", \"media\": []}]",
        messagesJson("[{'role': 'user', 'content': []}]"));
  }

  @Test
  void nullOrAbsentContentIsEmpty() {
    assertEquals("[{\"role\": \"assistant\", \"content\": \"\", \"media\": []}, "
        + "{\"role\": \"assistant\", \"content\": \"\", \"media\": []}]",
        messagesJson("[{'role': 'assistant', 'content': null}, {'role': 'assistant'}]"));
  }

  @Test
  void toolCallArgumentsAreJsonDecoded() {
    String out = messagesJson("[{'role': 'assistant', 'content': null, 'tool_calls': [{'id': 'c1', 'type': 'function',"
        + " 'function': {'name': 'f', 'arguments': '{\\'city\\': \\'Paris\\', \\'n\\': 2, \\'x\\': 1.0, \\'l\\': [true, null]}'}}]}]");
    assertEquals("[{\"role\": \"assistant\", \"content\": \"\", \"media\": [], \"tool_calls\": [{\"id\": \"c1\", "
        + "\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"city\": \"Paris\", \"n\": 2, "
        + "\"x\": 1.0, \"l\": [true, null]}}}]}]", out);
    Map<?, ?> call = (Map<?, ?>) ((List<?>) input("{'model': 'm', 'messages': [{'role': 'assistant', 'tool_calls': "
        + "[{'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{\\'a\\': {\\'b\\': 1}}'}}]}]}")
        .messages().get(0).get("tool_calls")).get(0);
    Map<?, ?> arguments = (Map<?, ?>) ((Map<?, ?>) call.get("function")).get("arguments");
    assertEquals(Map.of("b", 1), arguments.get("a"));
  }

  @Test
  void toolCallArgumentsThatAreNotJsonAreKeptAsTheString() {
    String out = messagesJson("[{'role': 'assistant', 'tool_calls': [{'id': 'c1', 'type': 'function',"
        + " 'function': {'name': 'f', 'arguments': '{not json'}}]}]");
    assertTrue(out.contains("\"arguments\": \"{not json\""), out);
  }

  @Test
  void absentToolCallArgumentsAreAnEmptyObject() {
    String out = messagesJson("[{'role': 'assistant', 'tool_calls': [{'id': 'c1', 'type': 'function',"
        + " 'function': {'name': 'f'}}]}]");
    assertEquals("[{\"role\": \"assistant\", \"content\": \"\", \"media\": [], \"tool_calls\": [{\"id\": \"c1\", "
        + "\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {}}}]}]", out);
  }

  /**
   * BUG (OpenAiChat.arguments): Jackson's {@code readTree} is not {@code json.loads}: an empty string is read as
   * "no content" (the arguments become null; upstream's {@code json.loads("")} fails and keeps {@code ""}), and
   * trailing text after a value is ignored ({@code '{"a": 1} trailing'} becomes {@code {"a": 1}}; upstream keeps the
   * string: "Extra data"). Upstream: {@code _normalize_tool_call_arguments} in tensorrt_llm/serve/chat_utils.py.
   */
  @Test
  void argumentsThatJsonLoadsRefusesAreKeptAsTheString() {
    String empty = messagesJson("[{'role': 'assistant', 'tool_calls': [{'id': 'c1', 'type': 'function',"
        + " 'function': {'name': 'f', 'arguments': ''}}]}]");
    assertTrue(empty.contains("\"arguments\": \"\""), empty);
    String trailing = messagesJson("[{'role': 'assistant', 'tool_calls': [{'id': 'c1', 'type': 'function',"
        + " 'function': {'name': 'f', 'arguments': '{\\'a\\': 1} trailing'}}]}]");
    assertTrue(trailing.contains("\"arguments\": \"{\\\"a\\\": 1} trailing\""), trailing);
  }

  @Test
  void toolCallIdReasoningAndMessageTools() {
    List<Map<String, Object>> messages = input("{'model': 'm', 'messages': ["
        + "{'role': 'assistant', 'content': 'x', 'reasoning': 'r1', 'reasoning_content': 'r2'},"
        + "{'role': 'assistant', 'content': 'y', 'reasoning_content': 'r3'},"
        + "{'role': 'tool', 'content': '42', 'tool_call_id': 'call_1', 'name': 'calc'},"
        + "{'role': 'system', 'content': 's', 'tools': [{'type': 'function', 'function': {'name': 'g'}}]}]}").messages();
    assertEquals("r1", messages.get(0).get("reasoning_content"), "reasoning wins over reasoning_content");
    assertEquals("r3", messages.get(1).get("reasoning_content"));
    assertEquals("call_1", messages.get(2).get("tool_call_id"));
    assertFalse(messages.get(2).containsKey("name"), "name dropped");
    assertEquals(List.of("role", "content", "media", "tool_call_id"), new ArrayList<>(messages.get(2).keySet()));
    assertEquals(List.of(Map.of("type", "function", "function", Map.of("name", "g"))), messages.get(3).get("tools"));
    assertFalse(messages.get(1).containsKey("tool_calls"));
    assertFalse(messages.get(1).containsKey("tool_call_id"));
  }

  @Test
  void toolsNormalizedWithNullsAndKeyOrder() {
    ChatInput in = input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], 'tools': ["
        + "{'function': {'parameters': {'type': 'object', 'properties': {}}, 'name': 'f', 'extra': 1}, 'other': 2},"
        + "{'type': 'function', 'function': {'strict': true, 'description': 'd', 'name': 'g'}}], 'tool_choice': 'none'}");
    assertEquals("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": null, \"parameters\": "
        + "{\"type\": \"object\", \"properties\": {}}, \"strict\": null}}, {\"type\": \"function\", \"function\": "
        + "{\"name\": \"g\", \"description\": \"d\", \"parameters\": null, \"strict\": true}}]",
        dev.affinity.protocol.PythonJsonDumps.tojson(in.tools()));
  }

  @Test
  void noToolsIsNull() {
    assertNull(input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}").tools());
    assertEquals(List.of(), input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], 'tools': []}")
        .tools());
  }

  @Test
  void addGenerationPromptDefaultsToTrue() {
    assertTrue(input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}").addGenerationPrompt());
    assertTrue(input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], 'add_generation_prompt': true}")
        .addGenerationPrompt());
    assertFalse(input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], 'add_generation_prompt': false}")
        .addGenerationPrompt());
  }

  @Test
  void chatTemplateKwargsAndDocuments() {
    ChatInput in = input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], "
        + "'chat_template_kwargs': {'enable_thinking': false, 'n': 3, 'o': {'k': [1]}, 'z': null},"
        + "'documents': [{'title': 't', 'text': 'body'}]}");
    assertEquals(false, in.kwargs().get("enable_thinking"));
    assertEquals(3, in.kwargs().get("n"));
    assertEquals(Map.of("k", List.of(1)), in.kwargs().get("o"));
    assertTrue(in.kwargs().containsKey("z"));
    assertNull(in.kwargs().get("z"));
    assertEquals(List.of(Map.of("title", "t", "text", "body")), in.kwargs().get("documents"));
    assertEquals(List.of("enable_thinking", "n", "o", "z", "documents"), new ArrayList<>(in.kwargs().keySet()));
    assertEquals(Map.of(), input("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}], 'documents': null}")
        .kwargs());
  }

  @Test
  void hasMedia() {
    assertFalse(OpenAiChat.hasMedia(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}")));
    assertFalse(OpenAiChat.hasMedia(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': "
        + "[{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': ''}]}, {'role': 'assistant', 'content': null}]}")));
    assertTrue(OpenAiChat.hasMedia(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}, "
        + "{'role': 'user', 'content': [{'type': 'text', 'text': 'a'}, {'type': 'image_url', 'image_url': "
        + "{'url': 'data:image/png;base64,AAAA'}}]}]}")));
    assertTrue(OpenAiChat.hasMedia(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': "
        + "[{'type': 'input_audio', 'input_audio': {'data': 'AAAA', 'format': 'wav'}}]}]}")));
  }

  @Test
  void renderedThroughATemplate() {
    ChatTemplate t = ChatTemplate.compile("{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        + "{% if m.tool_calls is defined %}{% for c in m.tool_calls %}[{{ c.function.name }} "
        + "{{ c.function.arguments|tojson }}]{% endfor %}{% endif %}{% endfor %}", "test", Map.of());
    String out = t.render(input("{'model': 'm', 'messages': [{'role': 'user', 'content': [{'type': 'text', "
        + "'text': 'a'}, {'type': 'text', 'text': 'b'}]}, {'role': 'assistant', 'content': null, 'tool_calls': "
        + "[{'id': 'c', 'type': 'function', 'function': {'name': 'f', 'arguments': '{\\'x\\':1}'}}]}]}"));
    assertEquals("<user>a\nb<assistant>[f {\"x\": 1}]", out);
  }
}
