package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/** {@code usage.prompt_tokens_details}: {@code cached_tokens}, plus unmodelled fields. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PromptTokensDetails(
    @JsonProperty("cached_tokens") Integer cachedTokens,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("cached_tokens");

  public PromptTokensDetails {
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public PromptTokensDetails(Integer cachedTokens) {
    this(cachedTokens, Map.of());
  }
}
