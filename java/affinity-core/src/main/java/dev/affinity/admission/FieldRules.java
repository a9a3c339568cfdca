package dev.affinity.admission;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.FieldRule;
import dev.affinity.protocol.FieldRule.Api;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.RequestFields;
import java.util.Map;
import java.util.Set;

/**
 * The OpenAI API's rules for the request fields the protocol records keep as they came ({@code extra()}: sampling
 * knobs the frontend forwards without reading, read from {@link RequestFields}' table) and the structure of the chat
 * fields the records keep opaque ({@code tools}, {@code tool_choice}, {@code logit_bias}, message roles): each rule
 * a 400 naming its field, as OpenAI's API answers. A field outside them passes through unchecked (workers check
 * what they model).
 */
final class FieldRules {
  private FieldRules() {}

  /** {@code tool_choice}'s string values (OpenAI's API). */
  private static final Set<String> TOOL_CHOICES = Set.of("none", "auto", "required");
  /** The longest message role accepted (upstream accepts custom roles, such as Llama 3.1's {@code ipython}). */
  static final int MAX_ROLE_LENGTH = 64;

  /** Throws a 400 {@link ProtocolException} naming the first field that breaks its rule. */
  static void check(OpenAiRequest request) {
    Map<String, JsonNode> extra = request.extra();
    for (FieldRule rule : RequestFields.forwarded(request.isChat() ? Api.CHAT : Api.COMPLETION)) {
      rule.check(extra.get(rule.field()));
    }
    logitBias(extra.get("logit_bias"));
    JsonNode bestOf = extra.get("best_of");
    if (request instanceof CompletionRequest c && bestOf != null && bestOf.isIntegralNumber() && c.sampling().n() != null
        && bestOf.asInt() < c.sampling().n()) {
      throw ProtocolException.invalidField("best_of", "best_of must be at least n (" + c.sampling().n() + "), got "
          + bestOf.asInt());
    }
    if (request instanceof ChatCompletionRequest chat) {
      tools(chat.tools());
      toolChoice(chat.toolChoice());
      for (int i = 0; i < chat.messages().size(); i++) {
        role(chat.messages().get(i), i);
      }
    }
  }

  /** An object from token ids (integers, as strings) to biases in [-100, 100]. */
  private static void logitBias(JsonNode v) {
    if (v == null || v.isNull()) {
      return;
    }
    if (!v.isObject()) {
      throw wrongType("logit_bias", "an object from token ids to biases", v);
    }
    v.fields().forEachRemaining(e -> {
      if (!e.getKey().matches("[0-9]{1,10}")) {
        throw ProtocolException.invalidField("logit_bias", "keys must be token ids, got \"" + e.getKey() + "\"");
      }
      JsonNode b = e.getValue();
      if (!b.isNumber() || !(b.asDouble() >= -100 && b.asDouble() <= 100)) {
        throw ProtocolException.invalidField("logit_bias", "values must be numbers in [-100, 100], got "
            + b + " for " + e.getKey());
      }
    });
  }

  /** Each tool an object with a string {@code type}; a function tool names its function. */
  private static void tools(JsonNode tools) {
    if (tools == null || tools.isNull()) {
      return;
    }
    for (int i = 0; i < tools.size(); i++) {
      JsonNode t = tools.get(i);
      String at = "tools[" + i + "]";
      if (!t.isObject()) {
        throw wrongType(at, "an object", t);
      }
      if (!t.path("type").isTextual()) {
        throw ProtocolException.invalidField(at + ".type", "is required: a string such as \"function\"");
      }
      if (t.get("type").asText().equals("function") && !t.path("function").path("name").isTextual()) {
        throw ProtocolException.invalidField(at + ".function.name", "is required: a string");
      }
    }
  }

  /** {@code none}, {@code auto}, {@code required}, or an object naming a tool. */
  private static void toolChoice(JsonNode choice) {
    if (choice == null || choice.isNull()) {
      return;
    }
    if (choice.isTextual()) {
      if (!TOOL_CHOICES.contains(choice.asText())) {
        throw ProtocolException.invalidField("tool_choice", "must be \"none\", \"auto\", \"required\" or an "
            + "object naming a tool, got \"" + choice.asText() + "\"");
      }
      return;
    }
    if (!choice.path("type").isTextual()) {
      throw ProtocolException.invalidField("tool_choice.type", "is required: a string such as \"function\"");
    }
    if (choice.get("type").asText().equals("function") && !choice.path("function").path("name").isTextual()) {
      throw ProtocolException.invalidField("tool_choice.function.name", "is required: a string");
    }
  }

  /** A role is a non-empty name of at most {@value #MAX_ROLE_LENGTH} letters, digits, {@code _} or {@code -}. */
  private static void role(ChatMessage m, int i) {
    String role = m.role();
    if (role.isEmpty() || role.length() > MAX_ROLE_LENGTH || !roleName(role)) {
      throw ProtocolException.invalidField("messages[" + i + "].role", "must be a role name "
          + "such as system, user, assistant or tool (letters, digits, _ and -; at most " + MAX_ROLE_LENGTH
          + " characters), got \"" + printable(role) + "\"");
    }
  }

  /**
   * {@code [A-Za-z][A-Za-z0-9_-]*}, checked by hand: {@code String.matches} compiled the pattern for every message of
   * every request (a sixth of an agent turn's tokenizing thread at 400 messages).
   */
  private static boolean roleName(String role) {
    for (int i = 0; i < role.length(); i++) {
      char c = role.charAt(i);
      boolean letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
      if (!letter && (i == 0 || !((c >= '0' && c <= '9') || c == '_' || c == '-'))) {
        return false;
      }
    }
    return true;
  }

  private static ProtocolException wrongType(String field, String expected, JsonNode got) {
    return FieldRule.typeError(field, expected, got);
  }

  private static String printable(String s) {
    StringBuilder sb = new StringBuilder();
    s.codePoints().limit(MAX_ROLE_LENGTH).forEach(c -> {
      if (c < 0x20 || c == 0x7f) {
        sb.append(String.format("\\u%04x", c));
      } else {
        sb.appendCodePoint(c);
      }
    });
    return sb.toString();
  }
}
