package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A non-streamed {@code /v1/completions} response. {@code prompt_token_ids} is what a context worker
 * returns so the generation leg need not tokenize again. Unmodelled fields are kept.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CompletionResponse(
    @JsonProperty("id") String id,
    @JsonProperty("object") String object,
    @JsonProperty("created") Long created,
    @JsonProperty("model") String model,
    @JsonProperty("choices") List<CompletionChoice> choices,
    @JsonProperty("usage") UsageInfo usage,
    @JsonProperty("prompt_token_ids") TokenIds promptTokenIds,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) implements OpenAiResponse {

  static final Set<String> FIELDS =
      Set.of("id", "object", "created", "model", "choices", "usage", "prompt_token_ids");

  /** A missing {@code choices} reads as an empty list. */
  public CompletionResponse {
    choices = choices == null ? List.of() : Json.list(choices, "choices");
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public Optional<CompletionChoice> firstChoice() {
    return choices.isEmpty() ? Optional.empty() : Optional.of(choices.get(0));
  }

  /** {@code choices[0].disaggregated_params}, as a context worker returns it. */
  public Optional<DisaggregatedParams> firstDisaggregatedParams() {
    return firstChoice().map(CompletionChoice::disaggregatedParams);
  }

  /** This response with {@code disaggregated_params} removed from every choice, for a client. */
  public CompletionResponse withoutDisaggregatedParams() {
    return withChoices(choices.stream().map(CompletionChoice::withoutDisaggregatedParams).toList());
  }

  public CompletionResponse withChoices(List<CompletionChoice> newChoices) {
    return new CompletionResponse(id, object, created, model, newChoices, usage, promptTokenIds, extra);
  }

  public CompletionResponse withUsage(UsageInfo newUsage) {
    return new CompletionResponse(id, object, created, model, choices, newUsage, promptTokenIds, extra);
  }

  /** {@link UsageInfo#withContextUsage} applied to this response's usage (no-op without usage). */
  public CompletionResponse withUsageFromContext(UsageInfo ctxUsage) {
    return usage == null ? this : withUsage(usage.withContextUsage(ctxUsage));
  }
}
