package dev.affinity.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * Content sent as a string or as an array of typed text parts, flattened to its text, as the Anthropic Messages API
 * ({@link #ANTHROPIC_TEXT_BLOCKS}: {@code {type: text, text}}, joined by newlines) and the Responses API
 * ({@link #RESPONSES_TEXT_PARTS}: {@code input_text}, {@code output_text}, {@code refusal}, joined as they are) send it.
 * A part of another type, or without its text, is a 400 naming the field.
 */
public final class TextParts {
  public static final TextParts ANTHROPIC_TEXT_BLOCKS = new TextParts("text blocks", "\n", Map.of("text", "text"));
  public static final TextParts RESPONSES_TEXT_PARTS = new TextParts("text parts", "",
      Map.of("input_text", "text", "output_text", "text", "refusal", "refusal"));

  private final String noun;
  private final String separator;
  private final Map<String, String> textFieldByType;

  /**
   * @param noun what the parts are called in errors ("text blocks")
   * @param separator what goes between two parts' texts
   * @param textFieldByType the part types allowed, each with the field that holds its text
   */
  public TextParts(String noun, String separator, Map<String, String> textFieldByType) {
    this.noun = noun;
    this.separator = separator;
    this.textFieldByType = Map.copyOf(textFieldByType);
  }

  /** The text of {@code content} (a string or an array of parts; absent or null: ""), {@code field} naming it in errors. */
  public String join(JsonNode content, String field) {
    if (content == null || content.isNull()) {
      return "";
    }
    if (content.isTextual()) {
      return content.asText();
    }
    if (!content.isArray()) {
      throw ProtocolException.invalidField(field, "must be a string or an array of " + noun);
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < content.size(); i++) {
      JsonNode part = content.get(i);
      String type = part.path("type").asText("");
      String textField = textFieldByType.get(type);
      if (textField == null) {
        throw ProtocolException.invalidField(field + "." + i + ".type", "only " + noun + " are allowed here, got '"
            + type + "'");
      }
      if (!part.path(textField).isTextual()) {
        throw ProtocolException.invalidField(field + "." + i + "." + textField, "required: a string");
      }
      if (i > 0) {
        sb.append(separator);
      }
      sb.append(part.get(textField).asText());
    }
    return sb.toString();
  }
}
