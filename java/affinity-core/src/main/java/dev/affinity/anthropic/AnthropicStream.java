package dev.affinity.anthropic;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import dev.affinity.worker.EncodedChunk;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

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
public final class AnthropicStream implements StreamTransformer {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private enum Block { NONE, TEXT, THINKING, TOOL }

  /** A tool call whose fragments arrived while another block was open. */
  private static final class PendingCall {
    String id;
    String name;
    final StringBuilder arguments = new StringBuilder();
  }

  private final String requestModel;
  private final String messageId = AnthropicResponses.messageId();
  private boolean started;
  private Block open = Block.NONE;
  private int index = -1;
  /** The chat tool-call index of the open tool_use block, or -1. */
  private int openTool = -1;
  private boolean toolUse;
  private final Map<Integer, PendingCall> pending = new LinkedHashMap<>();
  /** Tool-call indices that already had their own block. */
  private final java.util.Set<Integer> done = new java.util.HashSet<>();
  private String finish;
  private JsonNode stopReason;
  private JsonNode lastUsage;

  /** @param requestModel the model the client asked for; used when the worker's chunks name none */
  public AnthropicStream(String requestModel) {
    this.requestModel = requestModel;
  }

  @Override
  public byte[] chunk(EncodedChunk chunk) {
    JsonNode c;
    try {
      c = MAPPER.readTree(chunk.json());
    } catch (IOException e) {
      throw new UncheckedIOException("a generation worker's chunk is not JSON", e);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (c.hasNonNull("usage")) {
      lastUsage = c.get("usage");
    }
    if (!started) {
      started = true;
      String model = c.path("model").asText("");
      messageStart(out, model.isEmpty() ? requestModel : model, lastUsage);
    }
    JsonNode choice = c.path("choices").path(0);
    if (choice.isObject()) {
      JsonNode delta = choice.path("delta");
      String reasoning = text(delta, "reasoning_content");
      if (reasoning == null) {
        reasoning = text(delta, "reasoning");
      }
      if (reasoning != null && !reasoning.isEmpty()) {
        ensure(out, Block.THINKING, null);
        delta(out, F.objectNode().put("type", "thinking_delta").put("thinking", reasoning));
      }
      String content = text(delta, "content");
      if (content != null && !content.isEmpty()) {
        ensure(out, Block.TEXT, null);
        delta(out, F.objectNode().put("type", "text_delta").put("text", content));
      }
      JsonNode calls = delta.path("tool_calls");
      for (int i = 0; i < calls.size(); i++) {
        toolFragment(out, calls.get(i), i);
      }
      if (choice.hasNonNull("finish_reason")) {
        finish = choice.get("finish_reason").asText();
        stopReason = choice.get("stop_reason");
      }
    }
    return out.toByteArray();
  }

  private static String text(JsonNode node, String field) {
    JsonNode v = node.get(field);
    return v == null || !v.isTextual() ? null : v.asText();
  }

  private void toolFragment(ByteArrayOutputStream out, JsonNode call, int position) {
    int idx = call.path("index").asInt(position);
    JsonNode fn = call.path("function");
    String args = text(fn, "arguments");
    if (open == Block.TOOL && openTool == idx) {
      if (args != null && !args.isEmpty()) {
        delta(out, F.objectNode().put("type", "input_json_delta").put("partial_json", args));
      }
      return;
    }
    if (open != Block.TOOL && !pending.containsKey(idx) && !done.contains(idx)) {
      String id = text(call, "id");
      ObjectNode block = F.objectNode().put("type", "tool_use")
          .put("id", id == null || id.isEmpty() ? AnthropicResponses.toolUseId() : id)
          .put("name", text(fn, "name") == null ? "" : text(fn, "name"));
      block.putObject("input");
      ensure(out, Block.TOOL, block);
      openTool = idx;
      if (args != null && !args.isEmpty()) {
        delta(out, F.objectNode().put("type", "input_json_delta").put("partial_json", args));
      }
      return;
    }
    PendingCall p = pending.computeIfAbsent(idx, k -> new PendingCall());
    if (p.id == null && text(call, "id") != null) {
      p.id = text(call, "id");
    }
    if (p.name == null && text(fn, "name") != null) {
      p.name = text(fn, "name");
    }
    if (args != null) {
      p.arguments.append(args);
    }
  }

  /** Opens a block of {@code kind} unless one is open already ({@code toolBlock}: the tool_use block to open). */
  private void ensure(ByteArrayOutputStream out, Block kind, ObjectNode toolBlock) {
    if (open == kind && kind != Block.TOOL) {
      return;
    }
    closeBlock(out);
    index++;
    open = kind;
    ObjectNode block = switch (kind) {
      case TEXT -> F.objectNode().put("type", "text").put("text", "");
      case THINKING -> F.objectNode().put("type", "thinking").put("thinking", "").put("signature", "");
      case TOOL -> toolBlock;
      case NONE -> throw new IllegalArgumentException("no block");
    };
    if (kind == Block.TOOL) {
      toolUse = true;
    }
    ObjectNode e = F.objectNode().put("type", "content_block_start").put("index", index);
    e.set("content_block", block);
    event(out, "content_block_start", e);
  }

  private void closeBlock(ByteArrayOutputStream out) {
    if (open == Block.NONE) {
      return;
    }
    if (open == Block.TOOL) {
      done.add(openTool);
      openTool = -1;
    }
    event(out, "content_block_stop", F.objectNode().put("type", "content_block_stop").put("index", index));
    open = Block.NONE;
  }

  private void delta(ByteArrayOutputStream out, ObjectNode delta) {
    ObjectNode e = F.objectNode().put("type", "content_block_delta").put("index", index);
    e.set("delta", delta);
    event(out, "content_block_delta", e);
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
    closeBlock(out);
    for (Map.Entry<Integer, PendingCall> p : pending.entrySet()) {
      if (done.contains(p.getKey())) {
        continue;
      }
      PendingCall call = p.getValue();
      ObjectNode block = F.objectNode().put("type", "tool_use")
          .put("id", call.id == null || call.id.isEmpty() ? AnthropicResponses.toolUseId() : call.id)
          .put("name", call.name == null ? "" : call.name);
      block.putObject("input");
      ensure(out, Block.TOOL, block);
      openTool = p.getKey();
      if (call.arguments.length() > 0) {
        delta(out, F.objectNode().put("type", "input_json_delta").put("partial_json", call.arguments.toString()));
      }
      closeBlock(out);
    }
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
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (!started) {
      return StreamTransformer.NOTHING;
    }
    closeBlock(out);
    ObjectNode e = F.objectNode().put("type", "error");
    e.putObject("error").put("type", "api_error").put("message", INCOMPLETE);
    event(out, "error", e);
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
      closeBlock(out);
    }
    String message = INCOMPLETE;
    try {
      JsonNode m = MAPPER.readTree(errorJson).at("/error/message");
      if (m.isTextual()) {
        message = m.asText();
      }
    } catch (IOException e) {
      // keep the generic message
    }
    ObjectNode e = F.objectNode().put("type", "error");
    e.putObject("error").put("type", "api_error").put("message", message);
    event(out, "error", e);
    return out.toByteArray();
  }

  /** The message of the error event of a broken stream. */
  static final String INCOMPLETE = "the stream ended before the response was complete";

  private static void event(ByteArrayOutputStream out, String type, ObjectNode data) {
    byte[] head = ("event: " + type + "\ndata: ").getBytes(StandardCharsets.US_ASCII);
    out.writeBytes(head);
    try {
      out.writeBytes(MAPPER.writeValueAsBytes(data));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.writeBytes(new byte[] {'\n', '\n'});
  }
}
