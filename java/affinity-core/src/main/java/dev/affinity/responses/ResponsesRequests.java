package dev.affinity.responses;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatTools;
import dev.affinity.protocol.FieldRule;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.RequestFields;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * Converts an OpenAI Responses API body ({@code POST /v1/responses}, stateless form) into the chat completion
 * request that then takes the same disaggregated context → generation path as {@code /v1/chat/completions}. The
 * request fields are those of the OpenAI API reference ("Create a model response"); upstream serves the same
 * route in TensorRT-LLM's {@code tensorrt_llm/serve/openai_server.py} with the conversion in
 * {@code tensorrt_llm/serve/responses_utils.py}. docs/responses.md has the table and what is refused.
 *
 * <p>The frontend keeps no state, so everything that needs a stored response, conversation or prompt is refused
 * with a {@link ProtocolException} (400) naming the field: {@code previous_response_id}, {@code store: true},
 * {@code conversation}, {@code background: true}, {@code prompt}, {@code item_reference} input items. An absent
 * {@code store} is served as {@code false} (the answer says {@code "store": false}): the SDKs leave it out unless
 * the caller sets it, and refusing the API's default would refuse most clients. Built-in tools (web search, file
 * search, ...) run on OpenAI's platform and are refused too; function tools pass through as chat tools. Unknown
 * top-level fields are refused, as OpenAI's API does.
 */
public final class ResponsesRequests {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Accepted top-level fields; those that need state are accepted only with their stateless value. */
  private static final Set<String> FIELDS = Set.of("model", "input", "instructions", "max_output_tokens",
      "temperature", "top_p", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "store",
      "background", "metadata", "user", "safety_identifier", "prompt_cache_key", "service_tier", "include", "text",
      "reasoning", "truncation", "top_logprobs", "previous_response_id", "conversation", "prompt",
      "max_tool_calls");

  private ResponsesRequests() {}

  /**
   * A converted request: the chat request to run, and the request parameters the response object repeats
   * ({@code instructions}, {@code tools}, {@code temperature}, ...; see {@link ResponsesOutput}).
   */
  public record Converted(ChatCompletionRequest chat, ObjectNode echo) {}

  /** The chat JSON and the echo, before the chat request's own checks (visible for tests). */
  record ChatJson(ObjectNode chat, ObjectNode echo) {}

  /**
   * The chat request for a Responses body.
   *
   * @throws ProtocolException 400 naming the field
   */
  public static Converted toChat(byte[] body, ProtocolCodec codec) {
    JsonNode root = codec.readTree(body);
    if (!root.isObject()) {
      throw ProtocolException.of(ProtocolException.BAD_REQUEST, "the request body must be a JSON object", null);
    }
    ChatJson json = toChatJson((ObjectNode) root);
    return new Converted(codec.parseChatCompletionRequest(json.chat()), json.echo());
  }

  /**
   * An error about the converted chat request (admission's prompt bound, its checks of the knobs) named in the
   * Responses body's terms: {@code messages} is {@code input}, {@code max_completion_tokens} is
   * {@code max_output_tokens}; other fields keep their name (they are the same in both APIs).
   */
  public static ProtocolException inResponsesTerms(ProtocolException e) {
    String field = e.field();
    if (e.status() != ProtocolException.BAD_REQUEST || field == null) {
      return e;
    }
    String renamed = field.equals("messages") || field.startsWith("messages[") || field.startsWith("messages.")
        ? "input" : field.equals("max_completion_tokens") ? "max_output_tokens" : null;
    return renamed == null ? e : ProtocolException.invalidField(renamed,
        e.detail().replace("max_completion_tokens", "max_output_tokens"), e);
  }

  static ChatJson toChatJson(ObjectNode req) {
    refuseStateful(req);
    ObjectNode chat = F.objectNode();
    ObjectNode echo = F.objectNode();
    JsonNode model = req.get("model");
    if (model == null || !model.isTextual() || model.asText().isEmpty()) {
      throw ProtocolException.invalidField("model", "required: a non-empty string");
    }
    chat.put("model", model.asText());

    JsonNode max = req.get("max_output_tokens");
    if (present(RequestFields.RESPONSES_MAX_OUTPUT_TOKENS.check(max))) {
      chat.put("max_completion_tokens", max.asInt());
    }
    echo.set("max_output_tokens", present(max) ? max : F.nullNode());

    if (RequestFields.STREAM.isTrue(req)) {
      chat.put("stream", true);
      ObjectNode so = chat.putObject("stream_options");
      so.put("include_usage", true);
      so.put("continuous_usage_stats", true);
    }
    echo.set("temperature", number(req, RequestFields.RESPONSES_TEMPERATURE, chat));
    echo.set("top_p", number(req, RequestFields.RESPONSES_TOP_P, chat));

    ArrayNode tools = tools(req.get("tools"));
    echo.set("tools", present(req.get("tools")) ? req.get("tools").deepCopy() : F.arrayNode());
    if (!tools.isEmpty()) {
      chat.set("tools", tools);
    }
    String choice = toolChoice(req.get("tool_choice"));
    if (choice != null && (!tools.isEmpty() || choice.equals("none"))) {
      chat.put("tool_choice", choice);
    }
    echo.put("tool_choice", choice == null ? "auto" : choice);
    JsonNode parallel = req.get("parallel_tool_calls");
    if (present(parallel) && (!parallel.isBoolean() || !parallel.asBoolean())) {
      throw ProtocolException.invalidField("parallel_tool_calls",
          "only true is served: the model server cannot limit a turn to one tool call");
    }
    echo.put("parallel_tool_calls", true);

    JsonNode text = req.get("text");
    JsonNode format = textFormat(text);
    if (format != null) {
      chat.set("response_format", format);
    }
    echo.set("text", present(text) ? text.deepCopy()
        : F.objectNode().set("format", F.objectNode().put("type", "text")));
    JsonNode reasoning = req.get("reasoning");
    String effort = reasoningEffort(reasoning);
    if (effort != null) {
      chat.put("reasoning_effort", effort);
    }
    echo.set("reasoning", present(reasoning) ? reasoning.deepCopy()
        : F.objectNode().putNull("effort").putNull("summary"));

    JsonNode user = req.get("user");
    if (present(user)) {
      if (!user.isTextual()) {
        throw ProtocolException.invalidField("user", "must be a string");
      }
      chat.put("user", user.asText());
    }
    echo.set("user", present(user) ? user : F.nullNode());
    JsonNode metadata = req.get("metadata");
    if (present(metadata) && !metadata.isObject()) {
      throw ProtocolException.invalidField("metadata", "must be an object of strings");
    }
    echo.set("metadata", present(metadata) ? metadata.deepCopy() : F.objectNode());
    RequestFields.RESPONSES_INCLUDE.check(req.get("include"));
    RequestFields.RESPONSES_PROMPT_CACHE_KEY.check(req.get("prompt_cache_key"));

    JsonNode instructions = req.get("instructions");
    if (present(instructions) && !instructions.isTextual()) {
      throw ProtocolException.invalidField("instructions", "must be a string");
    }
    echo.set("instructions", present(instructions) ? instructions : F.nullNode());
    echo.put("model", model.asText());
    chat.set("messages", ResponsesInput.messages(present(instructions) ? instructions.asText() : null,
        req.get("input")));
    return new ChatJson(chat, echo);
  }

  /** Refuses unknown fields and the features that need stored state. */
  private static void refuseStateful(ObjectNode req) {
    for (Iterator<Map.Entry<String, JsonNode>> it = req.fields(); it.hasNext(); ) {
      String f = it.next().getKey();
      if (!FIELDS.contains(f)) {
        throw ProtocolException.invalidField(f, "unknown parameter");
      }
    }
    String stateless = "needs a response stored by the server; this frontend keeps no state (send the whole "
        + "conversation as input, with store false)";
    if (present(req.get("previous_response_id"))) {
      throw ProtocolException.invalidField("previous_response_id", stateless);
    }
    if (present(req.get("conversation"))) {
      throw ProtocolException.invalidField("conversation", "needs a conversation stored by the server; this "
          + "frontend keeps no state (send the whole conversation as input)");
    }
    if (RequestFields.RESPONSES_STORE.isTrue(req)) {
      throw ProtocolException.invalidField("store", "true is not served: this frontend keeps no state; send "
          + "store false (an absent store is served as false)");
    }
    if (RequestFields.RESPONSES_BACKGROUND.isTrue(req)) {
      throw ProtocolException.invalidField("background", "true is not served: a background response must be "
          + "stored and polled, and this frontend keeps no state");
    }
    if (present(req.get("prompt"))) {
      throw ProtocolException.invalidField("prompt", "prompt templates are stored on OpenAI's platform and are not "
          + "served here; send instructions and input");
    }
    JsonNode truncation = req.get("truncation");
    if (present(truncation) && !"disabled".equals(truncation.asText(null))) {
      throw ProtocolException.invalidField("truncation", "only 'disabled' is served: the frontend does not drop "
          + "input items to fit the context window");
    }
    if (present(req.get("max_tool_calls"))) {
      throw ProtocolException.invalidField("max_tool_calls", "is not served: the model server cannot limit the "
          + "number of tool calls");
    }
    JsonNode logprobs = req.get("top_logprobs");
    if (present(logprobs) && !(logprobs.isIntegralNumber() && logprobs.asInt() == 0)) {
      throw ProtocolException.invalidField("top_logprobs", "is not served on /v1/responses; use "
          + "/v1/chat/completions with logprobs");
    }
  }

  static boolean present(JsonNode n) {
    return n != null && !n.isNull();
  }

  /** A sampling knob copied to the chat request; returns the value to echo (null when absent). */
  private static JsonNode number(ObjectNode req, FieldRule rule, ObjectNode chat) {
    JsonNode n = rule.check(req.get(rule.field()));
    if (!present(n)) {
      return F.nullNode();
    }
    chat.put(rule.field(), n.asDouble());
    return n;
  }

  /** Function tools become chat tools; built-in tools are refused. */
  private static ArrayNode tools(JsonNode tools) {
    ArrayNode out = F.arrayNode();
    if (!present(tools)) {
      return out;
    }
    if (!tools.isArray()) {
      throw ProtocolException.invalidField("tools", "must be an array");
    }
    for (int i = 0; i < tools.size(); i++) {
      JsonNode t = tools.get(i);
      String field = "tools." + i;
      if (!t.isObject() || !t.path("type").isTextual()) {
        throw ProtocolException.invalidField(field + ".type", "required: 'function'");
      }
      String type = t.get("type").asText();
      if (!type.equals("function")) {
        throw ProtocolException.invalidField(field + ".type", "'" + type + "' is a built-in tool run by OpenAI's "
            + "platform (or a custom grammar tool) and is not served here; only function tools are");
      }
      if (!t.path("name").isTextual() || t.get("name").asText().isEmpty()) {
        throw ProtocolException.invalidField(field + ".name", "required: a non-empty string");
      }
      JsonNode params = t.get("parameters");
      if (present(params) && !params.isObject()) {
        throw ProtocolException.invalidField(field + ".parameters", "must be a JSON schema object");
      }
      ChatTools.addFunction(out, t, present(params) ? params : F.objectNode().put("type", "object"));
    }
    return out;
  }

  /** "auto", "none" or null (absent); forcing a call is refused, as on /v1/messages. */
  private static String toolChoice(JsonNode c) {
    if (!present(c)) {
      return null;
    }
    if (c.isTextual()) {
      return switch (c.asText()) {
        case "auto", "none" -> c.asText();
        case "required" -> throw ProtocolException.invalidField("tool_choice",
            "'required' is not served: the model server cannot force a tool call; use auto or none");
        default -> throw ProtocolException.invalidField("tool_choice", "must be auto, none or required, got '"
            + c.asText() + "'");
      };
    }
    throw ProtocolException.invalidField("tool_choice", "a named or hosted tool choice is not served: the model "
        + "server cannot force a tool call; use auto or none");
  }

  /** {@code text.format} as the chat request's {@code response_format}, or null for plain text. */
  private static JsonNode textFormat(JsonNode text) {
    if (!present(text)) {
      return null;
    }
    if (!text.isObject()) {
      throw ProtocolException.invalidField("text", "must be an object");
    }
    JsonNode format = text.get("format");
    if (!present(format)) {
      return null;
    }
    String type = format.path("type").asText("");
    return switch (type) {
      case "text" -> null;
      case "json_object" -> F.objectNode().put("type", "json_object");
      case "json_schema" -> {
        if (!format.path("schema").isObject()) {
          throw ProtocolException.invalidField("text.format.schema", "required: a JSON schema object");
        }
        ObjectNode js = F.objectNode();
        js.put("name", format.path("name").asText("response"));
        if (format.path("description").isTextual()) {
          js.put("description", format.get("description").asText());
        }
        js.set("schema", format.get("schema").deepCopy());
        if (format.path("strict").isBoolean()) {
          js.put("strict", format.get("strict").asBoolean());
        }
        ObjectNode rf = F.objectNode().put("type", "json_schema");
        rf.set("json_schema", js);
        yield rf;
      }
      default -> throw ProtocolException.invalidField("text.format.type",
          "must be text, json_object or json_schema, got '" + type + "'");
    };
  }

  /** {@code reasoning.effort}, forwarded as the chat request's {@code reasoning_effort}; the summary is ignored. */
  private static String reasoningEffort(JsonNode reasoning) {
    if (!present(reasoning)) {
      return null;
    }
    if (!reasoning.isObject()) {
      throw ProtocolException.invalidField("reasoning", "must be an object");
    }
    JsonNode effort = reasoning.get("effort");
    if (!present(effort)) {
      return null;
    }
    if (!effort.isTextual()) {
      throw ProtocolException.invalidField("reasoning.effort", "must be a string");
    }
    return effort.asText();
  }
}
