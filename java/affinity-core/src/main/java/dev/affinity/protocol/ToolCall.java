package dev.affinity.protocol;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;

/**
 * One entry of {@code tool_calls}, in a message or a streaming delta ({@code index} is set in deltas,
 * {@code id}/{@code function} may be partial there). Unmodelled fields are kept.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ToolCall(
    @JsonProperty("id") String id,
    @JsonProperty("type") String type,
    @JsonProperty("index") Integer index,
    @JsonProperty("function") Function function,
    @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

  static final Set<String> FIELDS = Set.of("id", "type", "index", "function");

  public ToolCall {
    extra = Json.freezeExtra(extra, FIELDS);
  }

  /** A complete function call. */
  public static ToolCall function(String id, String name, String arguments) {
    return new ToolCall(id, "function", null, new Function(name, arguments, Map.of()), Map.of());
  }

  /** {@code function}: {@code name} and JSON-encoded {@code arguments}. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record Function(
      @JsonProperty("name") String name,
      @JsonProperty("arguments") String arguments,
      @JsonAnySetter @JsonAnyGetter Map<String, JsonNode> extra) {

    static final Set<String> FIELDS = Set.of("name", "arguments");

    public Function {
      extra = Json.freezeExtra(extra, FIELDS);
    }
  }

}
