package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatTools;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Converts an Anthropic Messages API body ({@code POST /v1/messages}, {@code /v1/messages/count_tokens}) into the
 * chat completion request that then takes the same disaggregated context → generation path as
 * {@code /v1/chat/completions}. The rules follow upstream's adapter (TensorRT-LLM
 * {@code tensorrt_llm/serve/anthropic_adapter.py}, {@code convert_anthropic_request}, with the request models of
 * {@code tensorrt_llm/serve/anthropic_protocol.py}); docs/anthropic.md has the table and the differences.
 *
 * <p>What cannot be served is refused with a {@link ProtocolException} (400) naming the field by its Anthropic
 * path ({@code messages.2.content.0.type}, {@code tool_choice.type}, ...). The converted JSON is then read by
 * {@link ProtocolCodec#parseChatCompletionRequest}, so the chat request's own checks apply as well.
 */
public final class AnthropicRequests {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Claude Code's billing telemetry in the first system block; upstream drops it so that prefixes match. */
  private static final Pattern BILLING_HEADER = Pattern.compile("^\\s*x-anthropic-billing-header:\\s*\\S+=.*",
      Pattern.DOTALL);

  /** Anthropic's server tools: run by Anthropic's API, not by a model server. */
  private static final List<String> SERVER_TOOL_PREFIXES = List.of("web_search", "web_fetch", "code_execution",
      "tool_search_tool_", "advisor_", "mcp_toolset");

  /** Anthropic-defined client tools whose schema the client does not send (the model was trained on it). */
  private static final List<String> SCHEMALESS_TOOL_PREFIXES = List.of("bash_", "text_editor_", "computer_",
      "memory_");

  /** Top-level fields that need Anthropic's platform. */
  private static final Set<String> REFUSED_FIELDS = Set.of("mcp_servers", "container");

  /** The "Tool execution failed: " prefix of a tool_result with is_error (as upstream). */
  static final String TOOL_ERROR_PREFIX = "Tool execution failed: ";

  private AnthropicRequests() {}

  /**
   * The chat request for a Messages body.
   *
   * @param countTokens for {@code count_tokens}: {@code max_tokens} is not required (the prompt is what counts),
   *     and the request is never streamed
   * @throws ProtocolException 400 naming the field
   */
  public static ChatCompletionRequest toChat(byte[] body, ProtocolCodec codec, boolean countTokens) {
    JsonNode root = codec.readTree(body);
    if (!root.isObject()) {
      throw ProtocolException.of(ProtocolException.BAD_REQUEST, "the request body must be a JSON object", null);
    }
    ObjectNode chat = toChatJson((ObjectNode) root, countTokens);
    return codec.parseChatCompletionRequest(codec.toJsonBytes(chat));
  }

  /** The chat request's JSON (visible for tests). */
  static ObjectNode toChatJson(ObjectNode req, boolean countTokens) {
    for (String f : REFUSED_FIELDS) {
      if (req.hasNonNull(f)) {
        throw ProtocolException.invalidField(f, "is a feature of Anthropic's platform and is not served here");
      }
    }
    ObjectNode chat = F.objectNode();
    JsonNode model = req.get("model");
    if (model == null || !model.isTextual() || model.asText().isEmpty()) {
      throw ProtocolException.invalidField("model", "required: a non-empty string");
    }
    chat.put("model", model.asText());

    int maxTokens = maxTokens(req, countTokens);
    chat.put("max_completion_tokens", maxTokens);

    boolean stream = !countTokens && bool(req, "stream");
    if (stream) {
      chat.put("stream", true);
      ObjectNode so = chat.putObject("stream_options");
      so.put("include_usage", true);
      so.put("continuous_usage_stats", true);
    }
    sampling(req, chat);
    stopSequences(req, chat);

    String toolChoice = toolChoice(req.get("tool_choice"));
    ArrayNode tools = tools(req.get("tools"), "none".equals(toolChoice));
    if (tools != null && !tools.isEmpty()) {
      chat.set("tools", tools);
      chat.put("tool_choice", toolChoice == null ? "auto" : toolChoice);
    } else if ("none".equals(toolChoice)) {
      chat.put("tool_choice", "none");
    }
    ObjectNode kwargs = thinking(req.get("thinking"), maxTokens, countTokens);
    if (kwargs != null) {
      chat.set("chat_template_kwargs", kwargs);
    }
    chat.set("messages", messages(req));
    return chat;
  }

  private static int maxTokens(ObjectNode req, boolean countTokens) {
    JsonNode n = req.get("max_tokens");
    if (n == null || n.isNull()) {
      if (countTokens) {
        return 1;
      }
      throw ProtocolException.invalidField("max_tokens", "required field is missing");
    }
    if (!n.canConvertToInt() || !n.isIntegralNumber() || n.asInt() < 1) {
      throw ProtocolException.invalidField("max_tokens", "must be an integer >= 1, got " + n);
    }
    return countTokens ? 1 : n.asInt();
  }

  private static boolean bool(ObjectNode req, String field) {
    JsonNode n = req.get(field);
    if (n == null || n.isNull()) {
      return false;
    }
    if (!n.isBoolean()) {
      throw ProtocolException.invalidField(field, "must be a boolean, got " + n);
    }
    return n.asBoolean();
  }

  private static void sampling(ObjectNode req, ObjectNode chat) {
    JsonNode t = req.get("temperature");
    if (t != null && !t.isNull()) {
      if (!t.isNumber() || t.asDouble() < 0 || t.asDouble() > 1) {
        throw ProtocolException.invalidField("temperature", "must be a number in [0, 1], got " + t);
      }
      chat.put("temperature", t.asDouble());
    }
    JsonNode p = req.get("top_p");
    if (p != null && !p.isNull()) {
      if (!p.isNumber() || p.asDouble() <= 0 || p.asDouble() > 1) {
        throw ProtocolException.invalidField("top_p", "must be a number in (0, 1], got " + p);
      }
      chat.put("top_p", p.asDouble());
    }
    JsonNode k = req.get("top_k");
    if (k != null && !k.isNull()) {
      if (!k.isIntegralNumber() || !k.canConvertToInt() || k.asInt() < 0) {
        throw ProtocolException.invalidField("top_k", "must be an integer >= 0, got " + k);
      }
      chat.put("top_k", k.asInt());
    }
  }

  private static void stopSequences(ObjectNode req, ObjectNode chat) {
    JsonNode s = req.get("stop_sequences");
    if (s == null || s.isNull()) {
      return;
    }
    if (!s.isArray()) {
      throw ProtocolException.invalidField("stop_sequences", "must be an array of strings");
    }
    ArrayNode stop = F.arrayNode();
    for (int i = 0; i < s.size(); i++) {
      if (!s.get(i).isTextual() || s.get(i).asText().isEmpty()) {
        throw ProtocolException.invalidField("stop_sequences." + i, "must be a non-empty string");
      }
      stop.add(s.get(i).asText());
    }
    if (!stop.isEmpty()) {
      chat.set("stop", stop);
    }
  }

  /** "auto", "none" or null (absent); any / tool are refused. */
  private static String toolChoice(JsonNode c) {
    if (c == null || c.isNull()) {
      return null;
    }
    if (!c.isObject() || !c.path("type").isTextual()) {
      throw ProtocolException.invalidField("tool_choice.type", "required: one of auto, any, tool, none");
    }
    String type = c.get("type").asText();
    if (c.path("disable_parallel_tool_use").asBoolean(false)) {
      throw ProtocolException.invalidField("tool_choice.disable_parallel_tool_use",
          "true is not served: the model server cannot limit a turn to one tool call");
    }
    return switch (type) {
      case "auto", "none" -> type;
      case "any", "tool" -> throw ProtocolException.invalidField("tool_choice.type",
          "'" + type + "' is not served: the model server cannot force a tool call; use auto or none");
      default -> throw ProtocolException.invalidField("tool_choice.type", "unknown tool choice '" + type + "'");
    };
  }

  private static ArrayNode tools(JsonNode tools, boolean choiceNone) {
    if (tools == null || tools.isNull()) {
      return null;
    }
    if (!tools.isArray()) {
      throw ProtocolException.invalidField("tools", "must be an array");
    }
    ArrayNode out = F.arrayNode();
    for (int i = 0; i < tools.size(); i++) {
      JsonNode t = tools.get(i);
      String field = "tools." + i;
      if (!t.isObject()) {
        throw ProtocolException.invalidField(field, "must be an object");
      }
      String type = t.path("type").asText("custom");
      if (!type.equals("custom") && startsWithAny(type, SERVER_TOOL_PREFIXES)) {
        if (choiceNone) {
          continue; // never called under tool_choice none (as upstream)
        }
        throw ProtocolException.invalidField(field + ".type", "server tool '" + type
            + "' runs on Anthropic's platform and is not served here");
      }
      if (!t.path("name").isTextual() || t.get("name").asText().isEmpty()) {
        throw ProtocolException.invalidField(field + ".name", "required: a non-empty string");
      }
      JsonNode schema = t.get("input_schema");
      if (schema == null || !schema.isObject()) {
        String why = startsWithAny(type, SCHEMALESS_TOOL_PREFIXES)
            ? "Anthropic-defined tool '" + type + "' carries no input_schema; send it as a custom tool with one"
            : "required: a JSON schema object";
        throw ProtocolException.invalidField(field + ".input_schema", why);
      }
      ChatTools.addFunction(out, t, schema);
    }
    return out;
  }

  private static boolean startsWithAny(String s, List<String> prefixes) {
    for (String p : prefixes) {
      if (s.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  private static ObjectNode thinking(JsonNode t, int maxTokens, boolean countTokens) {
    if (t == null || t.isNull()) {
      return null;
    }
    String type = t.path("type").asText("");
    ObjectNode kwargs = F.objectNode();
    switch (type) {
      case "disabled" -> kwargs.put("enable_thinking", false);
      case "adaptive" -> kwargs.put("enable_thinking", true);
      case "enabled" -> {
        JsonNode b = t.get("budget_tokens");
        if (b == null || !b.isIntegralNumber() || b.asInt() < 1024) {
          throw ProtocolException.invalidField("thinking.budget_tokens", "required: an integer >= 1024");
        }
        if (!countTokens && b.asInt() >= maxTokens) {
          throw ProtocolException.invalidField("thinking.budget_tokens",
              "must be less than max_tokens (" + maxTokens + "), got " + b.asInt());
        }
        kwargs.put("enable_thinking", true);
        kwargs.put("thinking_token_budget", b.asInt());
      }
      default -> throw ProtocolException.invalidField("thinking.type", "must be enabled, adaptive or disabled");
    }
    return kwargs;
  }

  // ---- messages ----

  private static ArrayNode messages(ObjectNode req) {
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
        system.add(flattenText(m.get("content"), field + ".content"));
        continue;
      }
      leading = false;
      switch (role) {
        case "user" -> userMessage(m.get("content"), field + ".content", out);
        case "assistant" -> assistantMessage(m.get("content"), field + ".content", out);
        case "system" -> out.addObject().put("role", "system")
            .put("content", flattenText(m.get("content"), field + ".content"));
        default -> throw ProtocolException.invalidField(field + ".role", "must be user or assistant, got '" + role + "'");
      }
    }
    if (!system.isEmpty()) {
      out.insertObject(0).put("role", "system").put("content", String.join("\n\n", system));
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

  /** Text of a string or an array of text blocks. */
  private static String flattenText(JsonNode content, String field) {
    if (content == null || content.isNull()) {
      return "";
    }
    if (content.isTextual()) {
      return content.asText();
    }
    if (!content.isArray()) {
      throw ProtocolException.invalidField(field, "must be a string or an array of content blocks");
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < content.size(); i++) {
      JsonNode b = content.get(i);
      String type = b.path("type").asText("");
      if (!type.equals("text") || !b.path("text").isTextual()) {
        throw ProtocolException.invalidField(field + "." + i + ".type",
            "only text blocks are allowed here, got '" + type + "'");
      }
      if (sb.length() > 0) {
        sb.append('\n');
      }
      sb.append(b.get("text").asText());
    }
    return sb.toString();
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
          String text = toolResultText(b.get("content"), bf + ".content");
          if (b.path("is_error").asBoolean(false)) {
            text = TOOL_ERROR_PREFIX + text;
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

  private static String toolResultText(JsonNode content, String field) {
    if (content == null || content.isNull()) {
      return "";
    }
    if (content.isTextual()) {
      return content.asText();
    }
    if (!content.isArray()) {
      throw ProtocolException.invalidField(field, "must be a string or an array of text blocks");
    }
    return flattenText(content, field);
  }

  /** One text part becomes a plain string (what a chat client would send); anything else stays a part list. */
  private static JsonNode simplify(ArrayNode parts) {
    if (parts.size() == 1 && "text".equals(parts.get(0).path("type").asText())) {
      return parts.get(0).get("text");
    }
    return parts;
  }
}
