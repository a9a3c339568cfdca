package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/** {@code stream_options}: {@code include_usage}, {@code continuous_usage_stats}, plus unmodelled fields. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record StreamOptions(
    @JsonProperty("include_usage") Boolean includeUsage,
    @JsonProperty("continuous_usage_stats") Boolean continuousUsageStats,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("include_usage", "continuous_usage_stats");

  public StreamOptions {
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public StreamOptions(Boolean includeUsage, Boolean continuousUsageStats) {
    this(includeUsage, continuousUsageStats, Map.of());
  }
}
