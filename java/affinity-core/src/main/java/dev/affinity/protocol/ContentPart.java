package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/**
 * One element of an array {@code content}: {@code type} (required) and, for {@code "text"} parts,
 * {@code text}. Everything else ({@code image_url}, {@code input_audio}, ...) is kept in {@link #extra()}.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ContentPart(
    @JsonProperty("type") String type,
    @JsonProperty("text") String text,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("type", "text");

  /**
   * @throws ProtocolException (field {@code type}) if the type is missing
   */
  public ContentPart {
    Json.required(type, "type");
    extra = Json.freezeExtra(extra, FIELDS);
  }

  /** A {@code {"type": "text", "text": ...}} part. */
  public static ContentPart text(String text) {
    return new ContentPart("text", text, Map.of());
  }

  /** Whether this is a text part with text. */
  @JsonIgnore
  public boolean isText() {
    return "text".equals(type) && text != null;
  }
}
