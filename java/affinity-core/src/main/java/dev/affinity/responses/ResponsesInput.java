package dev.affinity.responses;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TextParts;
import java.util.ArrayList;
import java.util.List;

/**
 * The chat messages of a Responses request's {@code instructions} and {@code input} (OpenAI API reference, "Create
 * a model response", input items; upstream: {@code tensorrt_llm/serve/responses_utils.py}):
 *
 * <ul>
 *   <li>a string input is one user message;
 *   <li>message items ({@code type: message}, or no type with a {@code role}) keep their role; their content is a
 *       string or parts: {@code input_text}/{@code output_text}/{@code refusal} as text, {@code input_image} with an
 *       {@code image_url} as an image part;
 *   <li>{@code instructions} and the {@code system}/{@code developer} messages that lead the input become one
 *       system message (later ones stay in place as system messages), as {@code /v1/messages} does;
 *   <li>{@code function_call} items become the preceding assistant message's tool calls (a new assistant message
 *       when there is none), {@code function_call_output} items tool messages;
 *   <li>{@code reasoning} items are dropped (their text is OpenAI's encrypted or summarised reasoning, which a chat
 *       template does not replay).
 * </ul>
 *
 * What needs stored state ({@code item_reference}), a file store ({@code input_file}, {@code file_id}) or a
 * built-in tool's call is refused, naming the item by its path ({@code input.3.type}).
 */
final class ResponsesInput {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private ResponsesInput() {}

  static ArrayNode messages(String instructions, JsonNode input) {
    if (!ResponsesRequests.present(input)) {
      throw ProtocolException.invalidField("input", "required: a string or an array of input items");
    }
    List<String> system = new ArrayList<>();
    if (instructions != null && !instructions.isEmpty()) {
      system.add(instructions);
    }
    ArrayNode out = F.arrayNode();
    if (input.isTextual()) {
      out.addObject().put("role", "user").put("content", input.asText());
    } else if (input.isArray()) {
      items(input, system, out);
    } else {
      throw ProtocolException.invalidField("input", "must be a string or an array of input items");
    }
    if (out.isEmpty()) {
      throw ProtocolException.invalidField("input", "must contain at least one message or function call item");
    }
    if (!system.isEmpty()) {
      out.insertObject(0).put("role", "system").put("content", String.join("\n\n", system));
    }
    return out;
  }

  private static void items(JsonNode input, List<String> system, ArrayNode out) {
    boolean leading = true;
    for (int i = 0; i < input.size(); i++) {
      JsonNode item = input.get(i);
      String field = "input." + i;
      if (!item.isObject()) {
        throw ProtocolException.invalidField(field, "must be an input item object");
      }
      String type = item.path("type").asText(item.has("role") ? "message" : "");
      switch (type) {
        case "message" -> {
          String role = item.path("role").asText("");
          if ((role.equals("system") || role.equals("developer")) && leading) {
            system.add(text(item.get("content"), field + ".content"));
            continue;
          }
          message(item, role, field, out);
        }
        case "function_call" -> functionCall(item, field, out);
        case "function_call_output" -> functionCallOutput(item, field, out);
        case "reasoning" -> {
          continue; // dropped: see the class comment
        }
        case "item_reference" -> throw ProtocolException.invalidField(field + ".type", "item_reference needs an "
            + "item stored by the server; this frontend keeps no state (send the item itself)");
        case "" -> throw ProtocolException.invalidField(field + ".type", "required: message, function_call or "
            + "function_call_output");
        default -> throw ProtocolException.invalidField(field + ".type", "'" + type + "' items are not served "
            + "here (served: message, function_call, function_call_output, reasoning)");
      }
      leading = false;
    }
  }

  private static void message(JsonNode item, String role, String field, ArrayNode out) {
    switch (role) {
      case "user" -> {
        ObjectNode m = out.addObject().put("role", "user");
        m.set("content", userContent(item.get("content"), field + ".content"));
      }
      case "assistant" -> out.addObject().put("role", "assistant")
          .put("content", text(item.get("content"), field + ".content"));
      case "system", "developer" -> out.addObject().put("role", "system")
          .put("content", text(item.get("content"), field + ".content"));
      default -> throw ProtocolException.invalidField(field + ".role",
          "must be user, assistant, system or developer, got '" + role + "'");
    }
  }

  /** A user message's content: a string, or text and image parts (one text part becomes a string). */
  private static JsonNode userContent(JsonNode content, String field) {
    if (content != null && content.isTextual()) {
      return content;
    }
    if (content == null || !content.isArray()) {
      throw ProtocolException.invalidField(field, "required: a string or an array of content parts");
    }
    ArrayNode parts = F.arrayNode();
    for (int j = 0; j < content.size(); j++) {
      JsonNode p = content.get(j);
      String pf = field + "." + j;
      String type = p.path("type").asText("");
      switch (type) {
        case "input_text", "output_text" -> parts.addObject().put("type", "text").put("text", partText(p, pf));
        case "input_image" -> {
          if (ResponsesRequests.present(p.get("file_id"))) {
            throw ProtocolException.invalidField(pf + ".file_id", "files are stored on OpenAI's platform and are "
                + "not served here; send the image as image_url (a URL or a data URL)");
          }
          if (!p.path("image_url").isTextual() || p.get("image_url").asText().isEmpty()) {
            throw ProtocolException.invalidField(pf + ".image_url", "required: a URL or a data URL");
          }
          ObjectNode img = parts.addObject().put("type", "image_url").putObject("image_url")
              .put("url", p.get("image_url").asText());
          if (p.path("detail").isTextual()) {
            img.put("detail", p.get("detail").asText());
          }
        }
        default -> throw ProtocolException.invalidField(pf + ".type", "'" + type + "' content is not served here "
            + "(served: input_text, input_image)");
      }
    }
    if (parts.size() == 1 && parts.get(0).path("type").asText().equals("text")) {
      return parts.get(0).get("text");
    }
    return parts;
  }

  /** The text of a string or of text parts ({@code input_text}, {@code output_text}, {@code refusal}). */
  static String text(JsonNode content, String field) {
    if (content == null || content.isNull()) {
      throw ProtocolException.invalidField(field, "required: a string or an array of text parts");
    }
    return TextParts.RESPONSES_TEXT_PARTS.join(content, field);
  }

  private static String partText(JsonNode p, String field) {
    if (!p.path("text").isTextual()) {
      throw ProtocolException.invalidField(field + ".text", "required: a string");
    }
    return p.get("text").asText();
  }

  private static void functionCall(JsonNode item, String field, ArrayNode out) {
    String callId = required(item, "call_id", field);
    String name = required(item, "name", field);
    JsonNode args = item.get("arguments");
    if (args != null && !args.isNull() && !args.isTextual()) {
      throw ProtocolException.invalidField(field + ".arguments", "must be a string (JSON text)");
    }
    ObjectNode assistant;
    JsonNode last = out.isEmpty() ? null : out.get(out.size() - 1);
    if (last != null && "assistant".equals(last.path("role").asText())) {
      assistant = (ObjectNode) last;
    } else {
      assistant = out.addObject().put("role", "assistant").put("content", "");
    }
    ArrayNode calls = assistant.has("tool_calls") ? (ArrayNode) assistant.get("tool_calls")
        : assistant.putArray("tool_calls");
    ObjectNode call = calls.addObject().put("id", callId).put("type", "function");
    call.putObject("function").put("name", name).put("arguments", args == null || args.isNull() ? "{}"
        : args.asText());
  }

  private static void functionCallOutput(JsonNode item, String field, ArrayNode out) {
    String callId = required(item, "call_id", field);
    JsonNode output = item.get("output");
    String text = output != null && output.isTextual() ? output.asText() : text(output, field + ".output");
    out.addObject().put("role", "tool").put("tool_call_id", callId).put("content", text);
  }

  private static String required(JsonNode item, String name, String field) {
    JsonNode v = item.get(name);
    if (v == null || !v.isTextual() || v.asText().isEmpty()) {
      throw ProtocolException.invalidField(field + "." + name, "required: a non-empty string");
    }
    return v.asText();
  }
}
