package dev.affinity.responses;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ToolCall;
import dev.affinity.protocol.UsageInfo;
import java.util.UUID;

/**
 * OpenAI Responses API objects built from the chat path's results (shapes from the OpenAI API reference, "The
 * response object" and its output items; upstream builds the same in TensorRT-LLM's
 * {@code tensorrt_llm/serve/responses_utils.py}): the whole {@code response} of a non-streamed request, its output
 * items ({@code reasoning}, {@code message} with {@code output_text} content, {@code function_call}), the status
 * ({@code incomplete} with reason {@code max_output_tokens} when the chat answer stopped for length, else
 * {@code completed}) and the usage ({@code input_tokens} including cached ones, as OpenAI counts them).
 */
public final class ResponsesOutput {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private ResponsesOutput() {}

  /** A fresh id with {@code prefix} ({@code resp}, {@code msg}, {@code fc}, {@code rs}, {@code call}). */
  static String id(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "");
  }

  /** The response object for a whole chat completion; {@code echo} is {@link ResponsesRequests.Converted#echo}. */
  public static ObjectNode toResponse(ChatCompletionResponse chat, ObjectNode echo) {
    long created = chat.created() == null ? System.currentTimeMillis() / 1000 : chat.created();
    ObjectNode r = skeleton(id("resp"), created, echo, chat.model());
    ArrayNode output = r.putArray("output");
    ChatChoice choice = chat.choices() == null || chat.choices().isEmpty() ? null : chat.choices().get(0);
    ChatMessage m = choice == null ? null : choice.message();
    if (m != null) {
      String reasoning = m.reasoningContent() != null ? m.reasoningContent() : m.reasoning();
      if (reasoning != null && !reasoning.isEmpty()) {
        output.add(reasoningItem(id("rs"), reasoning, "completed"));
      }
      String text = m.contentText();
      boolean calls = m.toolCalls() != null && !m.toolCalls().isEmpty();
      if (!text.isEmpty() || !calls) {
        output.add(messageItem(id("msg"), text, "completed"));
      }
      if (calls) {
        for (ToolCall call : m.toolCalls()) {
          ToolCall.Function fn = call.function();
          output.add(functionCallItem(id("fc"), call.id() == null || call.id().isEmpty() ? id("call") : call.id(),
              fn == null || fn.name() == null ? "" : fn.name(), fn == null || fn.arguments() == null ? "{}"
                  : fn.arguments(), "completed"));
        }
      }
    } else {
      output.add(messageItem(id("msg"), "", "completed"));
    }
    finish(r, choice == null ? null : choice.finishReason(), usage(chat.usage()));
    return r;
  }

  /**
   * The response object without output, usage and final status ({@code in_progress}): what
   * {@code response.created} carries and what the finished response fills in.
   */
  static ObjectNode skeleton(String id, long createdAt, ObjectNode echo, String workerModel) {
    ObjectNode r = F.objectNode();
    r.put("id", id);
    r.put("object", "response");
    r.put("created_at", createdAt);
    r.put("status", "in_progress");
    r.put("background", false);
    r.putNull("error");
    r.putNull("incomplete_details");
    r.set("instructions", echo.get("instructions"));
    r.set("max_output_tokens", echo.get("max_output_tokens"));
    r.put("model", workerModel == null || workerModel.isEmpty() ? echo.path("model").asText() : workerModel);
    r.putArray("output");
    r.put("parallel_tool_calls", echo.path("parallel_tool_calls").asBoolean(true));
    r.putNull("previous_response_id");
    r.set("reasoning", echo.get("reasoning"));
    r.put("store", false);
    r.set("temperature", echo.get("temperature"));
    r.set("text", echo.get("text"));
    r.set("tool_choice", echo.get("tool_choice"));
    r.set("tools", echo.get("tools"));
    r.set("top_p", echo.get("top_p"));
    r.put("truncation", "disabled");
    r.putNull("usage");
    r.set("user", echo.get("user"));
    r.set("metadata", echo.get("metadata"));
    return r;
  }

  /** Sets the final status from the chat finish reason, and the usage. */
  static void finish(ObjectNode r, String finishReason, ObjectNode usage) {
    if ("length".equals(finishReason)) {
      r.put("status", "incomplete");
      r.putObject("incomplete_details").put("reason", "max_output_tokens");
    } else {
      r.put("status", "completed");
      r.putNull("incomplete_details");
    }
    r.set("usage", usage);
  }

  static ObjectNode messageItem(String id, String text, String status) {
    ObjectNode item = F.objectNode();
    item.put("id", id);
    item.put("type", "message");
    item.put("status", status);
    item.put("role", "assistant");
    ArrayNode content = item.putArray("content");
    if (text != null) {
      content.add(textPart(text));
    }
    return item;
  }

  static ObjectNode textPart(String text) {
    ObjectNode part = F.objectNode().put("type", "output_text").put("text", text);
    part.putArray("annotations");
    part.putArray("logprobs");
    return part;
  }

  static ObjectNode reasoningItem(String id, String text, String status) {
    ObjectNode item = F.objectNode();
    item.put("id", id);
    item.put("type", "reasoning");
    item.putArray("summary");
    ArrayNode content = item.putArray("content");
    if (text != null) {
      content.add(reasoningPart(text));
    }
    item.put("status", status);
    return item;
  }

  static ObjectNode reasoningPart(String text) {
    return F.objectNode().put("type", "reasoning_text").put("text", text);
  }

  static ObjectNode functionCallItem(String id, String callId, String name, String arguments, String status) {
    ObjectNode item = F.objectNode();
    item.put("id", id);
    item.put("type", "function_call");
    item.put("status", status);
    item.put("call_id", callId);
    item.put("name", name);
    item.put("arguments", arguments);
    return item;
  }

  /**
   * OpenAI's usage: {@code input_tokens} (all prompt tokens, cached ones included), {@code input_tokens_details}
   * ({@code cached_tokens}; {@code cache_write_tokens} 0: the workers cache every prompt without an explicit write,
   * and the SDKs require the field), {@code output_tokens}, {@code output_tokens_details} ({@code reasoning_tokens},
   * 0: the chat path does not count them apart), {@code total_tokens}.
   */
  public static ObjectNode usage(UsageInfo u) {
    int prompt = u == null || u.promptTokens() == null ? 0 : u.promptTokens();
    int cached = u == null ? 0 : u.cachedTokensOrZero();
    int output = u == null || u.completionTokens() == null ? 0 : u.completionTokens();
    return usage(prompt, cached, output);
  }

  /** The usage of a chat chunk's {@code usage} object (zeros when absent). */
  static ObjectNode usage(JsonNode u) {
    if (u == null || !u.isObject()) {
      return usage(0, 0, 0);
    }
    return usage(u.path("prompt_tokens").asInt(0), u.path("prompt_tokens_details").path("cached_tokens").asInt(0),
        u.path("completion_tokens").asInt(0));
  }

  static ObjectNode usage(int prompt, int cached, int output) {
    ObjectNode n = F.objectNode();
    n.put("input_tokens", prompt);
    n.putObject("input_tokens_details").put("cached_tokens", Math.max(0, cached)).put("cache_write_tokens", 0);
    n.put("output_tokens", output);
    n.putObject("output_tokens_details").put("reasoning_tokens", 0);
    n.put("total_tokens", prompt + output);
    return n;
  }
}
