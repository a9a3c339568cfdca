package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import java.util.Map;
import java.util.Set;

/**
 * One {@code choices[i]} of a chat stream chunk. Unmodelled fields are kept.
 *
 * @param finishReason always written, as {@code null} while unfinished (OpenAI's schema has it on every choice)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatStreamChoice(
    @JsonProperty("index") Integer index,
    @JsonProperty("delta") ChatDelta delta,
    @JsonProperty("logprobs") JsonNode logprobs,
    @JsonProperty("finish_reason") @JsonInclude(JsonInclude.Include.ALWAYS) String finishReason,
    @JsonProperty("stop_reason") JsonNode stopReason,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("index", "delta", "logprobs", "finish_reason", "stop_reason");

  public ChatStreamChoice {
    logprobs = Json.opaque(logprobs, "logprobs", "an object", JsonNodeType.OBJECT);
    stopReason = Json.opaque(stopReason, "stop_reason", "a string or an integer", JsonNodeType.STRING,
        JsonNodeType.NUMBER);
    extra = Json.freezeExtra(extra, FIELDS);
  }

  @Override
  public JsonNode logprobs() {
    return Json.copy(logprobs);
  }
}
