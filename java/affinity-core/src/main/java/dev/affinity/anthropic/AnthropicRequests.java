package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatTools;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.RequestFields;
import java.util.List;
import java.util.Set;

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
    return codec.parseChatCompletionRequest(chat);
  }

  /**
   * A Messages body's chat request, and where each Anthropic message's chat messages end in it (what a conversation's
   * next turn reuses: {@code dev.affinity.admission.KeptTurns}).
   *
   * @param chatEnds {@code chatEnds[i]}: how many of the chat's messages (its system message included) come from the
   *     system prompt and Anthropic messages {@code 0..i}
   * @param system whether the chat's first message is the system prompt ({@code system}, leading system messages)
   * @param leadingSystem whether system-role messages led the list and were folded into the system prompt
   */
  public record Counted(ChatCompletionRequest chat, int[] chatEnds, boolean system, boolean leadingSystem) {}

  /**
   * {@link #toChat(byte[], ProtocolCodec, boolean)} for a Messages request (not {@code count_tokens}), with where its
   * chat messages come from.
   *
   * @throws ProtocolException 400 naming the field
   */
  public static Counted toChatCounted(byte[] body, ProtocolCodec codec) {
    JsonNode root = codec.readTree(body);
    if (!root.isObject()) {
      throw ProtocolException.of(ProtocolException.BAD_REQUEST, "the request body must be a JSON object", null);
    }
    JsonNode msgs = root.get("messages");
    AnthropicMessages.Counts counts = new AnthropicMessages.Counts(msgs == null || !msgs.isArray() ? 0 : msgs.size());
    ObjectNode chat = toChatJson((ObjectNode) root, false, counts);
    return new Counted(codec.parseChatCompletionRequest(chat), counts.ends, counts.system, counts.leadingSystem);
  }

  /** The chat request's JSON (visible for tests). */
  static ObjectNode toChatJson(ObjectNode req, boolean countTokens) {
    return toChatJson(req, countTokens, null);
  }

  private static ObjectNode toChatJson(ObjectNode req, boolean countTokens, AnthropicMessages.Counts counts) {
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

    boolean stream = !countTokens && RequestFields.STREAM.isTrue(req);
    if (stream) {
      chat.put("stream", true);
      ObjectNode so = chat.putObject("stream_options");
      so.put("include_usage", true);
      so.put("continuous_usage_stats", true);
    }
    sampling(req, chat);
    stopSequences(req, chat);
    metadata(req.get("metadata"));
    RequestFields.MESSAGES_SERVICE_TIER.check(req.get("service_tier"));

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
    chat.set("messages", AnthropicMessages.messages(req, counts));
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
    RequestFields.MESSAGES_MAX_TOKENS.check(n);
    return countTokens ? 1 : n.asInt();
  }

  /** Not used here, but checked as Anthropic's API does: an object whose {@code user_id} is a string. */
  private static void metadata(JsonNode metadata) {
    RequestFields.MESSAGES_METADATA.check(metadata);
    JsonNode user = metadata == null ? null : metadata.get("user_id");
    if (user != null && !user.isNull() && !user.isTextual()) {
      throw ProtocolException.invalidField("metadata.user_id", "must be a string, got " + user);
    }
  }

  private static void sampling(ObjectNode req, ObjectNode chat) {
    JsonNode t = RequestFields.MESSAGES_TEMPERATURE.check(req.get("temperature"));
    if (t != null && !t.isNull()) {
      chat.put("temperature", t.asDouble());
    }
    JsonNode p = RequestFields.MESSAGES_TOP_P.check(req.get("top_p"));
    if (p != null && !p.isNull()) {
      chat.put("top_p", p.asDouble());
    }
    JsonNode k = RequestFields.MESSAGES_TOP_K.check(req.get("top_k"));
    if (k != null && !k.isNull()) {
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
}
