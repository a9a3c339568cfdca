package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.ChatStreamReframer;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import java.io.ByteArrayOutputStream;

/**
 * Reframes the generation worker's OpenAI chat chunks as Anthropic's stream: {@code message_start},
 * then per content block {@code content_block_start}, {@code content_block_delta}s and
 * {@code content_block_stop}, then {@code message_delta} (stop reason, usage) and {@code message_stop}, each
 * framed {@code event: <type>\ndata: <json>\n\n}, with no {@code [DONE]}. Upstream: the stream converter of
 * TensorRT-LLM's {@code tensorrt_llm/serve/anthropic_adapter.py}.
 *
 * <p>One block is open at a time and indices increase. Text, reasoning ({@code thinking} blocks) and tool calls
 * ({@code tool_use} blocks whose arguments arrive as {@code input_json_delta}) each open a block when they start.
 * Parallel tool calls whose fragments interleave are serialized: fragments of a call other than the open one are
 * kept and replayed in their own blocks at the end. A call without an id gets {@code toolu_<hex>}.
 *
 * <p>A stream that breaks after it started ends with an {@code error} event ({@link #broken()}) instead of
 * {@code message_delta} and {@code message_stop}.
 *
 * <p>{@code message_start} is sent with the first chunk (its usage is the chunk's, when the worker reports usage
 * on every chunk, otherwise zeros); {@code message_delta} carries the last usage seen. One instance per stream,
 * called on one thread.
 */
public final class AnthropicStream extends ChatStreamReframer {
  /** The message of the error event of a broken stream. */
  static final String INCOMPLETE = "the stream ended before the response was complete";

  private final String requestModel;
  private final String messageId = AnthropicResponses.messageId();
  private boolean started;
  private int index = -1;
  private boolean toolUse;
  private JsonNode stopReason;

  /** @param requestModel the model the client asked for; used when the worker's chunks name none */
  public AnthropicStream(String requestModel) {
    this.requestModel = requestModel;
  }

  @Override
  protected void onChunk(ByteArrayOutputStream out, JsonNode chunk) {
    if (!started) {
      started = true;
      String model = chunk.path("model").asText("");
      messageStart(out, model.isEmpty() ? requestModel : model, lastUsage);
    }
  }

  @Override
  protected void onFinish(JsonNode choice) {
    stopReason = choice.get("stop_reason");
  }

  @Override
  protected void openPart(ByteArrayOutputStream out, Part part, String toolId, String toolName) {
    index++;
    ObjectNode block = switch (part) {
      case TEXT -> F.objectNode().put("type", "text").put("text", "");
      case REASONING -> F.objectNode().put("type", "thinking").put("thinking", "").put("signature", "");
      case TOOL -> {
        toolUse = true;
        ObjectNode b = F.objectNode().put("type", "tool_use")
            .put("id", toolId == null || toolId.isEmpty() ? AnthropicResponses.toolUseId() : toolId)
            .put("name", toolName == null ? "" : toolName);
        b.putObject("input");
        yield b;
      }
      case NONE -> throw new IllegalArgumentException("no block");
    };
    ObjectNode e = F.objectNode().put("type", "content_block_start").put("index", index);
    e.set("content_block", block);
    event(out, "content_block_start", e);
  }

  @Override
  protected void partDelta(ByteArrayOutputStream out, Part part, String text) {
    ObjectNode delta = switch (part) {
      case TEXT -> F.objectNode().put("type", "text_delta").put("text", text);
      case REASONING -> F.objectNode().put("type", "thinking_delta").put("thinking", text);
      case TOOL -> F.objectNode().put("type", "input_json_delta").put("partial_json", text);
      case NONE -> throw new IllegalArgumentException("no block");
    };
    ObjectNode e = F.objectNode().put("type", "content_block_delta").put("index", index);
    e.set("delta", delta);
    event(out, "content_block_delta", e);
  }

  @Override
  protected void closePart(ByteArrayOutputStream out, Part part) {
    event(out, "content_block_stop", F.objectNode().put("type", "content_block_stop").put("index", index));
  }

  private void messageStart(ByteArrayOutputStream out, String model, JsonNode usage) {
    ObjectNode msg = F.objectNode();
    msg.put("id", messageId);
    msg.put("type", "message");
    msg.put("role", "assistant");
    msg.put("model", model);
    msg.putArray("content");
    msg.putNull("stop_reason");
    msg.putNull("stop_sequence");
    ObjectNode u = usageOf(usage);
    u.put("output_tokens", 0);
    msg.set("usage", u);
    ObjectNode e = F.objectNode().put("type", "message_start");
    e.set("message", msg);
    event(out, "message_start", e);
  }

  private static ObjectNode usageOf(JsonNode u) {
    if (u == null || !u.isObject()) {
      return AnthropicResponses.usage(0, 0, 0);
    }
    return AnthropicResponses.usage(u.path("prompt_tokens").asInt(0),
        u.path("prompt_tokens_details").path("cached_tokens").asInt(0), u.path("completion_tokens").asInt(0));
  }

  @Override
  public byte[] close(RouteInfo route) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (!started) {
      started = true;
      messageStart(out, requestModel, null);
    }
    closeOpenPart(out);
    replayPendingCalls(out);
    AnthropicResponses.StopReason stop = AnthropicResponses.StopReason.of(finish, stopReason, toolUse);
    ObjectNode e = F.objectNode().put("type", "message_delta");
    ObjectNode d = e.putObject("delta");
    d.put("stop_reason", stop.reason());
    d.put("stop_sequence", stop.sequence());
    e.set("usage", usageOf(lastUsage));
    event(out, "message_delta", e);
    event(out, "message_stop", F.objectNode().put("type", "message_stop"));
    return out.toByteArray();
  }

  /**
   * A stream that broke after it started: the open block is closed and an {@code error} event follows
   * ({@code api_error}), as upstream does, with no detail of the failure (the frontend logs it).
   */
  @Override
  public byte[] broken() {
    if (!started) {
      return StreamTransformer.NOTHING;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    closeOpenPart(out);
    errorEvent(out, INCOMPLETE);
    return out.toByteArray();
  }

  /**
   * A request that failed after its stream started (a generation worker lost mid-stream, a timeout): the
   * open block is closed and Anthropic's {@code error} event carries the failure's message (OpenAI's error
   * body, {@code {"error": {"message": ...}}}, read for it). The response ends after it.
   */
  @Override
  public byte[] error(byte[] errorJson) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (started) {
      closeOpenPart(out);
    }
    errorEvent(out, errorMessage(errorJson, INCOMPLETE));
    return out.toByteArray();
  }

  private static void errorEvent(ByteArrayOutputStream out, String message) {
    ObjectNode e = F.objectNode().put("type", "error");
    e.putObject("error").put("type", "api_error").put("message", message);
    event(out, "error", e);
  }
}
