package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/**
 * {@code usage}: token counts of a response (also {@code disaggregated_params.ctx_usage}). Absent counts
 * are null and stay absent when written.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record UsageInfo(
    @JsonProperty("prompt_tokens") Integer promptTokens,
    @JsonProperty("completion_tokens") Integer completionTokens,
    @JsonProperty("total_tokens") Integer totalTokens,
    @JsonProperty("prompt_tokens_details") PromptTokensDetails promptTokensDetails,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS =
      Set.of("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details");

  public UsageInfo {
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public UsageInfo(Integer promptTokens, Integer completionTokens, Integer totalTokens, Integer cachedTokens) {
    this(promptTokens, completionTokens, totalTokens,
        cachedTokens == null ? null : new PromptTokensDetails(cachedTokens), Map.of());
  }

  /** {@code prompt_tokens_details.cached_tokens}, or 0. */
  public int cachedTokensOrZero() {
    return promptTokensDetails == null || promptTokensDetails.cachedTokens() == null
        ? 0 : promptTokensDetails.cachedTokens();
  }

  /**
   * The usage of a generation-leg response rewritten from the context leg's usage, as upstream's
   * {@code rewrite_usage_info_from_ctx}: {@code prompt_tokens} and {@code cached_tokens} come from
   * {@code ctxUsage}, {@code total_tokens = prompt_tokens + completion_tokens}. Returns this usage
   * unchanged when {@code ctxUsage} is null or has no {@code prompt_tokens}.
   */
  public UsageInfo withContextUsage(UsageInfo ctxUsage) {
    if (ctxUsage == null || ctxUsage.promptTokens == null) {
      return this;
    }
    int prompt = ctxUsage.promptTokens;
    int completion = completionTokens == null ? 0 : completionTokens;
    Map<String, JsonNode> detailsExtra =
        promptTokensDetails == null ? Map.of() : promptTokensDetails.extra();
    return new UsageInfo(prompt, completionTokens, prompt + completion,
        new PromptTokensDetails(ctxUsage.cachedTokensOrZero(), detailsExtra), extra);
  }
}
