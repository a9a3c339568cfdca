package dev.affinity.tokenizer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ContentPart;
import dev.affinity.protocol.MessageContent;
import dev.affinity.protocol.ToolCall;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An OpenAI chat request as the worker's serve layer hands it to the chat template (TensorRT-LLM's
 * {@code tensorrt_llm/serve/chat_utils.py} and {@code openai_protocol.py}), so that the frontend renders the prompt the
 * worker renders:
 * <ul>
 *   <li>each message as {@code role}, {@code content} and {@code media} ({@code []}): string content as is, text parts
 *       joined with {@code "\n"} (empty ones skipped), null or absent content as {@code ""};
 *   <li>assistant {@code tool_calls} as sent, each {@code function.arguments} JSON-decoded (kept as the string when
 *       {@code json.loads} would fail: blank, not JSON, trailing data; absent as {@code {}}); a tool message's
 *       {@code tool_call_id}; an assistant's {@code reasoning} (else {@code reasoning_content}) as
 *       {@code reasoning_content}; a system message's own {@code tools}; {@code name} dropped;
 *   <li>{@code tools} as {@code {"type", "function": {"name", "description", "parameters", "strict"}}}, absent keys as
 *       null (pydantic's {@code model_dump}); kept whatever {@code tool_choice} says;
 *   <li>{@code add_generation_prompt} (default true) and {@code chat_template_kwargs}; {@code documents} when sent.
 * </ul>
 * A message with media (image, audio, video parts) renders with placeholders the worker's processor inserts:
 * {@link #hasMedia} tells the caller that its ids are an estimate.
 */
public final class OpenAiChat {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final com.fasterxml.jackson.databind.ObjectReader STRICT =
      JSON.reader().with(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private OpenAiChat() {}

  /** The template input of a chat request. */
  public static ChatInput toInput(ChatCompletionRequest chat) {
    List<Map<String, Object>> messages = new ArrayList<>(chat.messages().size());
    for (ChatMessage m : chat.messages()) {
      messages.add(message(m));
    }
    List<Object> tools = null;
    if (chat.tools() != null && chat.tools().isArray()) {
      tools = new ArrayList<>();
      for (JsonNode t : chat.tools()) {
        tools.add(tool(t));
      }
    }
    Map<String, Object> kwargs = new LinkedHashMap<>();
    JsonNode extra = chat.chatTemplateKwargs();
    if (extra != null && extra.isObject()) {
      extra.fields().forEachRemaining(e -> kwargs.put(e.getKey(), plain(e.getValue())));
    }
    JsonNode documents = chat.extra().get("documents");
    if (documents != null && !documents.isNull()) {
      kwargs.put("documents", plain(documents));
    }
    boolean generationPrompt = chat.addGenerationPrompt() == null || chat.addGenerationPrompt();
    // each message a function of its parsed message alone (message(m)): the same object, the same map
    return new ChatInput(messages, tools, generationPrompt, kwargs, chat.messages());
  }

  /** Whether a message of the request carries media (its ids would be the worker's placeholders, not text). */
  public static boolean hasMedia(ChatCompletionRequest chat) {
    for (ChatMessage m : chat.messages()) {
      if (m.content() instanceof MessageContent.Parts parts) {
        for (ContentPart p : parts.parts()) {
          if (!p.isText() && !"text".equals(p.type())) {  // a text part without text is skipped, not media
            return true;
          }
        }
      }
    }
    return false;
  }

  private static Map<String, Object> message(ChatMessage m) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("role", m.role());
    out.put("content", content(m.content()));
    out.put("media", List.of());
    boolean assistant = "assistant".equals(m.role());
    if (assistant && m.toolCalls() != null) {
      List<Object> calls = new ArrayList<>();
      for (ToolCall call : m.toolCalls()) {
        calls.add(toolCall(call));
      }
      out.put("tool_calls", calls);
    }
    if ("tool".equals(m.role()) && m.toolCallId() != null) {
      out.put("tool_call_id", m.toolCallId());
    }
    String reasoning = m.reasoning() != null ? m.reasoning() : m.reasoningContent();
    if (assistant && reasoning != null) {
      out.put("reasoning_content", reasoning);
    }
    JsonNode tools = m.extra().get("tools");
    if ("system".equals(m.role()) && tools != null) {
      out.put("tools", plain(tools));
    }
    return out;
  }

  private static String content(MessageContent content) {
    if (content instanceof MessageContent.Text t) {
      return t.value();
    }
    if (content instanceof MessageContent.Parts parts) {
      List<String> texts = new ArrayList<>();
      for (ContentPart p : parts.parts()) {
        if (p.isText() && p.text() != null && !p.text().isEmpty()) {
          texts.add(p.text());
        }
      }
      return String.join("\n", texts);
    }
    return "";
  }

  @SuppressWarnings("unchecked")
  private static Object toolCall(ToolCall call) {
    Map<String, Object> out = (Map<String, Object>) plain(JSON.valueToTree(call));
    if (call.function() != null) {
      Map<String, Object> function = new LinkedHashMap<>((Map<String, Object>) out.getOrDefault("function", Map.of()));
      function.put("arguments", arguments(call.function().arguments()));
      out.put("function", function);
    }
    return out;
  }

  /** {@code json.loads(arguments)}, or the string itself where that fails (blank, not JSON, trailing data). */
  private static Object arguments(String arguments) {
    if (arguments == null) {
      return new LinkedHashMap<>();
    }
    try {
      JsonNode node = STRICT.readTree(arguments);
      return node == null || node.isMissingNode() ? arguments : plain(node);
    } catch (JsonProcessingException e) {
      return arguments;
    }
  }

  private static Object tool(JsonNode t) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("type", t.path("type").isTextual() ? t.get("type").asText() : "function");
    JsonNode f = t.path("function");
    Map<String, Object> function = new LinkedHashMap<>();
    for (String key : new String[] {"name", "description", "parameters", "strict"}) {
      function.put(key, f.has(key) ? plain(f.get(key)) : null);
    }
    out.put("function", function);
    return out;
  }

  /** A JSON value as maps, lists, strings, numbers, booleans and nulls. */
  static Object plain(JsonNode node) {
    return node == null || node.isNull() ? null : JSON.convertValue(node, Object.class);
  }
}
