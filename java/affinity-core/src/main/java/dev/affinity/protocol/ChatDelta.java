package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** {@code delta} of a chat stream chunk: role, content, reasoning and tool-call fragments. Unmodelled fields are kept. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatDelta(
    @JsonProperty("role") String role,
    @JsonProperty("content") String content,
    @JsonProperty("reasoning") String reasoning,
    @JsonProperty("reasoning_content") String reasoningContent,
    @JsonProperty("tool_calls") List<ToolCall> toolCalls,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("role", "content", "reasoning", "reasoning_content", "tool_calls");

  public ChatDelta {
    toolCalls = Json.list(toolCalls, "tool_calls");
    extra = Json.freezeExtra(extra, FIELDS);
  }
}
