package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** One SSE chunk ({@code data: ...}) of a streamed {@code /v1/chat/completions} response. Unmodelled fields are kept. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatCompletionStreamResponse(
    @JsonProperty("id") String id,
    @JsonProperty("object") String object,
    @JsonProperty("created") Long created,
    @JsonProperty("model") String model,
    @JsonProperty("choices") List<ChatStreamChoice> choices,
    @JsonProperty("usage") UsageInfo usage,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) implements OpenAiStreamChunk {

  static final Set<String> FIELDS = Set.of("id", "object", "created", "model", "choices", "usage");

  /** A missing {@code choices} reads as an empty list. */
  public ChatCompletionStreamResponse {
    choices = choices == null ? List.of() : Json.list(choices, "choices");
    extra = Json.freezeExtra(extra, FIELDS);
  }

  public ChatCompletionStreamResponse withUsage(UsageInfo newUsage) {
    return new ChatCompletionStreamResponse(id, object, created, model, choices, newUsage, extra);
  }

  /** {@link UsageInfo#withContextUsage} applied to this chunk's usage (no-op without usage). */
  public ChatCompletionStreamResponse withUsageFromContext(UsageInfo ctxUsage) {
    return usage == null ? this : withUsage(usage.withContextUsage(ctxUsage));
  }
}
