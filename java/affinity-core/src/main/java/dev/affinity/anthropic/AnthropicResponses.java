package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatChoice;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.ErrorResponse;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.ToolCall;
import dev.affinity.protocol.UsageInfo;
import java.io.IOException;
import java.util.UUID;

/**
 * Anthropic Messages answers built from the chat path's results: the whole message of a non-streamed request
 * (upstream: {@code convert_chat_response} in TensorRT-LLM's {@code tensorrt_llm/serve/anthropic_adapter.py}), the
 * usage block, the stop reason, and Anthropic's error envelope
 * ({@code {"type":"error","error":{"type":...,"message":...}}}).
 */
public final class AnthropicResponses {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private AnthropicResponses() {}

  /** A fresh message id, {@code msg_<32 hex>}. */
  public static String messageId() {
    return "msg_" + UUID.randomUUID().toString().replace("-", "");
  }

  /** A fresh tool-use id for a call the worker left without one, {@code toolu_<24 hex>}. */
  static String toolUseId() {
    return "toolu_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
  }

  /**
   * The Anthropic message for a chat completion. Content order: thinking, text, tool_use blocks; an empty
   * answer is one empty text block.
   *
   * @throws ProtocolException 500 when a tool call's arguments are not a JSON object
   */
  public static ObjectNode toMessage(ChatCompletionResponse chat) {
    ObjectNode msg = F.objectNode();
    msg.put("id", messageId());
    msg.put("type", "message");
    msg.put("role", "assistant");
    msg.put("model", chat.model());
    ArrayNode content = msg.putArray("content");
    ChatChoice choice = chat.choices().isEmpty() ? null : chat.choices().get(0);
    ChatMessage m = choice == null ? null : choice.message();
    boolean toolUse = false;
    if (m != null) {
      String reasoning = m.reasoningContent() != null ? m.reasoningContent() : m.reasoning();
      if (reasoning != null && !reasoning.isEmpty()) {
        content.addObject().put("type", "thinking").put("thinking", reasoning).put("signature", "");
      }
      String text = m.contentText();
      if (!text.isEmpty()) {
        content.addObject().put("type", "text").put("text", text);
      }
      if (m.toolCalls() != null) {
        for (ToolCall call : m.toolCalls()) {
          ObjectNode block = content.addObject();
          block.put("type", "tool_use");
          block.put("id", call.id() != null && !call.id().isEmpty() ? call.id() : toolUseId());
          block.put("name", call.function() == null ? "" : call.function().name());
          block.set("input", toolInput(call.function() == null ? null : call.function().arguments()));
          toolUse = true;
        }
      }
    }
    if (content.isEmpty()) {
      content.addObject().put("type", "text").put("text", "");
    }
    String finish = choice == null ? null : choice.finishReason();
    JsonNode stopReason = choice == null ? null : choice.stopReason();
    StopReason stop = StopReason.of(finish, stopReason, toolUse);
    msg.put("stop_reason", stop.reason());
    msg.put("stop_sequence", stop.sequence());
    msg.set("usage", usage(chat.usage()));
    return msg;
  }

  static JsonNode toolInput(String arguments) {
    if (arguments == null || arguments.isBlank()) {
      return F.objectNode();
    }
    try {
      JsonNode input = MAPPER.readTree(arguments);
      if (input != null && input.isObject()) {
        return input;
      }
    } catch (IOException e) {
      // falls through to the error below
    }
    throw ProtocolException.of(500, "the model's tool call arguments are not a JSON object", null);
  }

  /** Anthropic's stop reason and stop sequence for a chat finish reason. */
  record StopReason(String reason, String sequence) {
    static StopReason of(String finish, JsonNode stopReason, boolean toolUse) {
      String reason = finish == null ? "end_turn" : switch (finish) {
        case "length" -> "max_tokens";
        case "tool_calls" -> "tool_use";
        default -> "end_turn";
      };
      String sequence = null;
      if ("stop".equals(finish) && stopReason != null && stopReason.isTextual()) {
        reason = "stop_sequence";
        sequence = stopReason.asText();
      }
      if (toolUse && !reason.equals("max_tokens")) {
        reason = "tool_use";
        sequence = null;
      }
      return new StopReason(reason, sequence);
    }
  }

  /**
   * Anthropic's usage: {@code input_tokens} are the prompt tokens not read from the cache,
   * {@code cache_read_input_tokens} those read from it (always present, 0 without reuse), {@code output_tokens}.
   */
  public static ObjectNode usage(UsageInfo u) {
    int prompt = u == null || u.promptTokens() == null ? 0 : u.promptTokens();
    int cached = u == null ? 0 : u.cachedTokensOrZero();
    int output = u == null || u.completionTokens() == null ? 0 : u.completionTokens();
    return usage(prompt, cached, output);
  }

  static ObjectNode usage(int prompt, int cached, int output) {
    ObjectNode n = F.objectNode();
    n.put("input_tokens", Math.max(0, prompt - cached));
    n.put("cache_read_input_tokens", Math.max(0, cached));
    n.put("output_tokens", output);
    return n;
  }

  /**
   * Anthropic's error envelope for an error the frontend produced in OpenAI's shape. The field the OpenAI body
   * names in {@code param} leads the message when the message does not already start with it.
   */
  public static ObjectNode error(int status, ErrorResponse openAi) {
    ErrorResponse.ErrorDetail d = openAi.error();
    String message = d.message() == null ? "" : d.message();
    if (d.param() != null && !message.startsWith(d.param())) {
      message = d.param() + ": " + message;
    }
    ObjectNode n = F.objectNode();
    n.put("type", "error");
    n.putObject("error").put("type", errorType(status)).put("message", message);
    return n;
  }

  /** Anthropic's error type for an HTTP status. */
  public static String errorType(int status) {
    return switch (status) {
      case 401 -> "authentication_error";
      case 403 -> "permission_error";
      case 404 -> "not_found_error";
      case 413 -> "request_too_large";
      case 429 -> "rate_limit_error";
      case 529 -> "overloaded_error";
      default -> status >= 500 ? "api_error" : "invalid_request_error";
    };
  }

  /** {@code {"input_tokens": n}}, the answer of {@code count_tokens}. */
  public static ObjectNode tokenCount(int inputTokens) {
    return F.objectNode().put("input_tokens", inputTokens);
  }
}
