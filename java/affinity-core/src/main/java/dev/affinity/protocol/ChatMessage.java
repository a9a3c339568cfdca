package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A chat message, in a request's {@code messages} or a response's {@code message}. {@code role} is
 * required (any string: upstream accepts custom roles). Unmodelled fields (message-level {@code tools},
 * {@code refusal}, {@code audio}, ...) are kept in {@link #extra()}.
 *
 * @param content null when absent; {@link MessageContent.ExplicitNull} when sent as {@code null}
 * @param toolCalls null when absent
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ChatMessage(
    @JsonProperty("role") String role,
    @JsonProperty("content") MessageContent content,
    @JsonProperty("name") String name,
    @JsonProperty("tool_calls") List<ToolCall> toolCalls,
    @JsonProperty("tool_call_id") String toolCallId,
    @JsonProperty("reasoning") String reasoning,
    @JsonProperty("reasoning_content") String reasoningContent,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS =
      Set.of("role", "content", "name", "tool_calls", "tool_call_id", "reasoning", "reasoning_content");

  /**
   * @throws ProtocolException (field {@code role}) if the role is missing
   */
  public ChatMessage {
    Json.required(role, "role");
    toolCalls = Json.list(toolCalls, "tool_calls");
    extra = Json.freezeExtra(extra, FIELDS);
  }

  /** A message with string content. */
  public static ChatMessage of(String role, String content) {
    return new ChatMessage(role, content == null ? null : MessageContent.of(content), null, null, null, null,
        null, Map.of());
  }

  /** The content's text ({@link MessageContent#text()}), "" without content. */
  public String contentText() {
    return content == null ? "" : content.text();
  }
}
