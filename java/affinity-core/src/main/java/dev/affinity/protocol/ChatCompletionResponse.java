package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A non-streamed {@code /v1/chat/completions} response. A context worker also returns
 * {@code prompt_token_ids} (or {@code prompt_token_ids_b64}, base64 int32) for the generation leg.
 * Unmodelled fields are kept.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatCompletionResponse(
    @JsonProperty("id") String id,
    @JsonProperty("object") String object,
    @JsonProperty("created") Long created,
    @JsonProperty("model") String model,
    @JsonProperty("choices") List<ChatChoice> choices,
    @JsonProperty("usage") UsageInfo usage,
    @JsonProperty("prompt_token_ids") TokenIds promptTokenIds,
    @JsonProperty("prompt_token_ids_b64") @JsonSerialize(using = TokenIds.Base64Serializer.class)
    String promptTokenIdsB64,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) implements OpenAiResponse {

  static final Set<String> FIELDS = Set.of(
      "id", "object", "created", "model", "choices", "usage", "prompt_token_ids", "prompt_token_ids_b64");

  /** A missing {@code choices} reads as an empty list. */
  public ChatCompletionResponse {
    choices = choices == null ? List.of() : Json.list(choices, "choices");
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public Optional<ChatChoice> firstChoice() {
    return choices.isEmpty() ? Optional.empty() : Optional.of(choices.get(0));
  }

  /** {@code choices[0].disaggregated_params}, as a context worker returns it. */
  public Optional<DisaggregatedParams> firstDisaggregatedParams() {
    return firstChoice().map(ChatChoice::disaggregatedParams);
  }

  /** This response with {@code disaggregated_params} removed from every choice, for a client. */
  public ChatCompletionResponse withoutDisaggregatedParams() {
    return withChoices(choices.stream().map(ChatChoice::withoutDisaggregatedParams).toList());
  }

  public ChatCompletionResponse withChoices(List<ChatChoice> newChoices) {
    return new ChatCompletionResponse(id, object, created, model, newChoices, usage, promptTokenIds,
        promptTokenIdsB64, extra);
  }

  public ChatCompletionResponse withUsage(UsageInfo newUsage) {
    return new ChatCompletionResponse(id, object, created, model, choices, newUsage, promptTokenIds,
        promptTokenIdsB64, extra);
  }

  /** {@link UsageInfo#withContextUsage} applied to this response's usage (no-op without usage). */
  public ChatCompletionResponse withUsageFromContext(UsageInfo ctxUsage) {
    return usage == null ? this : withUsage(usage.withContextUsage(ctxUsage));
  }
}
