package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TextParts;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The messages of an Anthropic Messages API body as chat messages (TensorRT-LLM
 * {@code tensorrt_llm/serve/anthropic_adapter.py}, {@code convert_anthropic_request}): the system prompt and its
 * blocks, user messages with text, images and tool results, assistant messages with text, thinking and tool uses
 * (docs/anthropic.md). The rest of the request is {@link AnthropicRequests}'.
 */
final class AnthropicMessages {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Claude Code's billing telemetry in the first system block; upstream drops it so that prefixes match. */
  private static final Pattern BILLING_HEADER = Pattern.compile("^\\s*x-anthropic-billing-header:\\s*\\S+=.*",
      Pattern.DOTALL);

  private AnthropicMessages() {}

  /** What {@link #messages(ObjectNode, Counts)} says of where its chat messages come from. */
  static final class Counts {
    final int[] ends;
    boolean leadingSystem;
    boolean system;

    Counts(int messages) {
      ends = new int[messages];
    }
  }

  /**
   * The chat's messages: the system prompt ({@code system}, and system-role messages while they lead the list) first,
   * then each user and assistant message with its content blocks converted.
   *
   * @throws ProtocolException 400 naming the field by its Anthropic path
   */
  static ArrayNode messages(ObjectNode req) {
    return messages(req, null);
  }

  /**
   * {@link #messages(ObjectNode)}, and where each Anthropic message's chat messages end: {@code counts.ends[i]} chat
   * messages (the system prompt's included) come from the system prompt and messages {@code 0..i}; and whether
   * system-role messages led the list (folded into the system prompt).
   */
  static ArrayNode messages(ObjectNode req, Counts counts) {
    JsonNode msgs = req.get("messages");
    if (msgs == null || !msgs.isArray() || msgs.isEmpty()) {
      throw ProtocolException.invalidField("messages", "required: a non-empty array");
    }
    List<String> system = new ArrayList<>();
    systemParts(req.get("system"), system);
    ArrayNode out = F.arrayNode();
    boolean leading = true;
    for (int i = 0; i < msgs.size(); i++) {
      JsonNode m = msgs.get(i);
      String field = "messages." + i;
      if (!m.isObject() || !m.path("role").isTextual()) {
        throw ProtocolException.invalidField(field + ".role", "required: user or assistant");
      }
      String role = m.get("role").asText();
      if (role.equals("system") && leading) {
        // system-role messages count as system only while they lead the list (upstream): later ones stay put
        system.add(TextParts.ANTHROPIC_TEXT_BLOCKS.join(m.get("content"), field + ".content"));
        if (counts != null) {
          counts.leadingSystem = true;
          counts.ends[i] = out.size();
        }
        continue;
      }
      leading = false;
      switch (role) {
        case "user" -> userMessage(m.get("content"), field + ".content", out);
        case "assistant" -> assistantMessage(m.get("content"), field + ".content", out);
        case "system" -> out.addObject().put("role", "system")
            .put("content", TextParts.ANTHROPIC_TEXT_BLOCKS.join(m.get("content"), field + ".content"));
        default -> throw ProtocolException.invalidField(field + ".role", "must be user or assistant, got '" + role + "'");
      }
      if (counts != null) {
        counts.ends[i] = out.size();
      }
    }
    if (!system.isEmpty()) {
      out.insertObject(0).put("role", "system").put("content", String.join("\n\n", system));
      if (counts != null) {
        for (int i = 0; i < counts.ends.length; i++) {
          counts.ends[i]++;
        }
        counts.system = true;
      }
    }
    return out;
  }

  private static void systemParts(JsonNode system, List<String> parts) {
    if (system == null || system.isNull()) {
      return;
    }
    if (system.isTextual()) {
      if (!system.asText().isEmpty()) {
        parts.add(system.asText());
      }
      return;
    }
    if (!system.isArray()) {
      throw ProtocolException.invalidField("system", "must be a string or an array of text blocks");
    }
    for (int i = 0; i < system.size(); i++) {
      JsonNode b = system.get(i);
      if (!b.isObject() || !"text".equals(b.path("type").asText()) || !b.path("text").isTextual()) {
        throw ProtocolException.invalidField("system." + i, "must be a text block {type: text, text}");
      }
      String text = b.get("text").asText();
      if (i == 0 && BILLING_HEADER.matcher(text).matches()) {
        continue;
      }
      parts.add(text);
    }
  }

  private static ArrayNode blocks(JsonNode content, String field) {
    if (content == null || content.isNull()) {
      throw ProtocolException.invalidField(field, "required: a string or an array of content blocks");
    }
    if (content.isTextual()) {
      ArrayNode a = F.arrayNode();
      a.addObject().put("type", "text").put("text", content.asText());
      return a;
    }
    if (!content.isArray()) {
      throw ProtocolException.invalidField(field, "must be a string or an array of content blocks");
    }
    return (ArrayNode) content;
  }

  private static void userMessage(JsonNode content, String field, ArrayNode out) {
    if (content != null && content.isTextual()) {
      out.addObject().put("role", "user").put("content", content.asText());
      return;
    }
    ArrayNode blocks = blocks(content, field);
    ArrayNode parts = F.arrayNode();
    for (int j = 0; j < blocks.size(); j++) {
      JsonNode b = blocks.get(j);
      String bf = field + "." + j;
      String type = b.path("type").asText("");
      switch (type) {
        case "text" -> parts.add(textPart(b, bf));
        case "image" -> parts.add(imagePart(b, bf));
        case "tool_result" -> {
          // tool results answer the previous assistant turn's calls: they go first, as role tool messages
          if (!b.path("tool_use_id").isTextual()) {
            throw ProtocolException.invalidField(bf + ".tool_use_id", "required: a string");
          }
          String text = TextParts.ANTHROPIC_TEXT_BLOCKS.join(b.get("content"), bf + ".content");
          if (b.path("is_error").asBoolean(false)) {
            text = AnthropicRequests.TOOL_ERROR_PREFIX + text;
          }
          out.addObject().put("role", "tool").put("tool_call_id", b.get("tool_use_id").asText()).put("content", text);
        }
        default -> throw unservedBlock(bf, type, "user");
      }
    }
    if (!parts.isEmpty()) {
      ObjectNode msg = out.addObject().put("role", "user");
      msg.set("content", simplify(parts));
    }
  }

  private static void assistantMessage(JsonNode content, String field, ArrayNode out) {
    ObjectNode msg = F.objectNode().put("role", "assistant");
    if (content != null && content.isTextual()) {
      out.add(msg.put("content", content.asText()));
      return;
    }
    ArrayNode blocks = blocks(content, field);
    StringBuilder text = new StringBuilder();
    StringBuilder reasoning = new StringBuilder();
    ArrayNode calls = F.arrayNode();
    for (int j = 0; j < blocks.size(); j++) {
      JsonNode b = blocks.get(j);
      String bf = field + "." + j;
      String type = b.path("type").asText("");
      switch (type) {
        case "text" -> text.append(textPart(b, bf).get("text").asText());
        case "thinking" -> reasoning.append(b.path("thinking").asText(""));
        case "tool_use" -> {
          if (!b.path("id").isTextual() || !b.path("name").isTextual()) {
            throw ProtocolException.invalidField(bf, "a tool_use block needs id and name");
          }
          JsonNode input = b.get("input");
          if (input != null && !input.isNull() && !input.isObject()) {
            throw ProtocolException.invalidField(bf + ".input", "must be an object");
          }
          ObjectNode call = calls.addObject();
          call.put("id", b.get("id").asText());
          call.put("type", "function");
          ObjectNode fn = call.putObject("function");
          fn.put("name", b.get("name").asText());
          fn.put("arguments", input == null || input.isNull() ? "{}" : input.toString());
        }
        default -> throw unservedBlock(bf, type, "assistant");
      }
    }
    msg.put("content", text.toString());
    if (reasoning.length() > 0) {
      msg.put("reasoning", reasoning.toString());
    }
    if (!calls.isEmpty()) {
      msg.set("tool_calls", calls);
    }
    out.add(msg);
  }

  private static ProtocolException unservedBlock(String field, String type, String role) {
    if (type.equals("redacted_thinking")) {
      return ProtocolException.invalidField(field + ".type",
          "redacted_thinking blocks are encrypted by Anthropic's API and cannot be served here");
    }
    return ProtocolException.invalidField(field + ".type", "a " + role + " message cannot carry a '" + type
        + "' block here (served: " + (role.equals("user") ? "text, image, tool_result" : "text, thinking, tool_use")
        + ")");
  }

  private static ObjectNode textPart(JsonNode b, String field) {
    if (!b.path("text").isTextual()) {
      throw ProtocolException.invalidField(field + ".text", "required: a string");
    }
    return F.objectNode().put("type", "text").put("text", b.get("text").asText());
  }

  private static ObjectNode imagePart(JsonNode b, String field) {
    JsonNode src = b.path("source");
    String type = src.path("type").asText("");
    String url = switch (type) {
      case "url" -> src.path("url").asText("");
      case "base64" -> "data:" + src.path("media_type").asText("image/png") + ";base64," + src.path("data").asText("");
      default -> throw ProtocolException.invalidField(field + ".source.type", "must be url or base64, got '" + type + "'");
    };
    if (url.isEmpty() || url.endsWith(";base64,")) {
      throw ProtocolException.invalidField(field + ".source", "an image source needs its url or data");
    }
    ObjectNode part = F.objectNode().put("type", "image_url");
    part.putObject("image_url").put("url", url);
    return part;
  }

  /** One text part becomes a plain string (what a chat client would send); anything else stays a part list. */
  private static JsonNode simplify(ArrayNode parts) {
    if (parts.size() == 1 && "text".equals(parts.get(0).path("type").asText())) {
      return parts.get(0).get("text");
    }
    return parts;
  }
}
