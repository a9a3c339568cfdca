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
 * One {@code choices[i]} of a chat completion response. {@code disaggregated_params} is set on a context
 * worker's response; strip it before answering a client.
 *
 * @param logprobs opaque ({@code content: [...]})
 * @param finishReason always written, as {@code null} while unfinished (OpenAI's schema has it on every choice)
 * @param stopReason the stop string or token id (a JSON scalar, immutable: read as it is)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatChoice(
    @JsonProperty("index") Integer index,
    @JsonProperty("message") ChatMessage message,
    @JsonProperty("logprobs") JsonNode logprobs,
    @JsonProperty("finish_reason") @JsonInclude(JsonInclude.Include.ALWAYS) String finishReason,
    @JsonProperty("stop_reason") JsonNode stopReason,
    @JsonProperty("disaggregated_params") DisaggregatedParams disaggregatedParams,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS =
      Set.of("index", "message", "logprobs", "finish_reason", "stop_reason", "disaggregated_params");

  public ChatChoice {
    logprobs = Json.opaque(logprobs, "logprobs", "an object", JsonNodeType.OBJECT);
    stopReason = Json.opaque(stopReason, "stop_reason", "a string or an integer", JsonNodeType.STRING,
        JsonNodeType.NUMBER);
    extra = Json.freezeExtra(extra, FIELDS);
  }

  /** This choice without {@code disaggregated_params}. */
  public ChatChoice withoutDisaggregatedParams() {
    return disaggregatedParams == null ? this
        : new ChatChoice(index, message, logprobs, finishReason, stopReason, null, extra);
  }

  @Override
  public JsonNode logprobs() {
    return Json.copy(logprobs);
  }
}
