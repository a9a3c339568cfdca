package dev.affinity.responses;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.ChatStreamReframer;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;

/**
 * Reframes the generation worker's OpenAI chat chunks as the Responses API's stream (OpenAI API reference,
 * "Streaming events"; upstream: the streaming generator of TensorRT-LLM's
 * {@code tensorrt_llm/serve/responses_utils.py}):
 * {@code response.created}, {@code response.in_progress}, then per output item {@code response.output_item.added},
 * its content events and {@code response.output_item.done}, then {@code response.completed} (or
 * {@code response.incomplete} when the answer stopped at {@code max_output_tokens}), each framed
 * {@code event: <type>\ndata: <json>\n\n} with a {@code sequence_number} counting from 0, and no {@code [DONE]}.
 *
 * <p>Items: text is a {@code message} item ({@code response.content_part.added}, {@code response.output_text.delta}s,
 * {@code response.output_text.done}, {@code response.content_part.done}); reasoning a {@code reasoning} item (the
 * same with {@code response.reasoning_text.*}); a tool call a {@code function_call} item
 * ({@code response.function_call_arguments.delta}s and {@code .done}). One item is open at a time; fragments of a
 * tool call other than the open one are kept and replayed as their own items at the end (as {@code /v1/messages}
 * does). The final response carries every item and the last usage the worker reported.
 *
 * <p>A request that fails after the stream started ends with an {@code error} event and {@code response.failed}.
 * One instance per stream, called on one thread.
 */
public final class ResponsesStream extends ChatStreamReframer {
  /** The message of a stream that broke after it started. */
  static final String INCOMPLETE = "the stream ended before the response was complete";

  private final ObjectNode response;
  private final ArrayNode output;
  private int sequence;
  private boolean started;

  private String itemId;
  private final StringBuilder itemText = new StringBuilder();
  private String callId;
  private String callName;

  /** @param echo the request parameters the response repeats ({@link ResponsesRequests.Converted#echo}) */
  public ResponsesStream(ObjectNode echo) {
    this.response = ResponsesOutput.skeleton(ResponsesOutput.id("resp"), System.currentTimeMillis() / 1000, echo,
        null);
    this.output = (ArrayNode) response.get("output");
  }

  @Override
  public byte[] open(RouteInfo route) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    start(out);
    return out.toByteArray();
  }

  private void start(ByteArrayOutputStream out) {
    if (started) {
      return;
    }
    started = true;
    ObjectNode snapshot = response.deepCopy();
    emit(out, "response.created", F.objectNode().set("response", snapshot));
    emit(out, "response.in_progress", F.objectNode().set("response", snapshot.deepCopy()));
  }

  @Override
  protected void onChunk(ByteArrayOutputStream out, JsonNode chunk) {
    start(out);
    String model = chunk.path("model").asText("");
    if (!model.isEmpty()) {
      response.put("model", model);
    }
  }

  /** A message, reasoning or function_call item opens. */
  @Override
  protected void openPart(ByteArrayOutputStream out, Part part, String toolId, String toolName) {
    itemText.setLength(0);
    if (part == Part.TOOL) {
      itemId = ResponsesOutput.id("fc");
      callId = toolId == null || toolId.isEmpty() ? ResponsesOutput.id("call") : toolId;
      callName = toolName == null ? "" : toolName;
      itemEvent(out, "response.output_item.added",
          ResponsesOutput.functionCallItem(itemId, callId, callName, "", "in_progress"));
      return;
    }
    boolean message = part == Part.TEXT;
    itemId = ResponsesOutput.id(message ? "msg" : "rs");
    ObjectNode item = message ? ResponsesOutput.messageItem(itemId, null, "in_progress")
        : ResponsesOutput.reasoningItem(itemId, null, "in_progress");
    itemEvent(out, "response.output_item.added", item);
    ObjectNode e = itemRef(F.objectNode()).put("content_index", 0);
    e.set("part", message ? ResponsesOutput.textPart("") : ResponsesOutput.reasoningPart(""));
    emit(out, "response.content_part.added", e);
  }

  @Override
  protected void partDelta(ByteArrayOutputStream out, Part part, String delta) {
    itemText.append(delta);
    if (part == Part.TOOL) {
      emit(out, "response.function_call_arguments.delta", itemRef(F.objectNode()).put("delta", delta));
      return;
    }
    ObjectNode e = itemRef(F.objectNode()).put("content_index", 0).put("delta", delta);
    if (part == Part.TEXT) {
      e.putArray("logprobs");
    }
    emit(out, part == Part.TEXT ? "response.output_text.delta" : "response.reasoning_text.delta", e);
  }

  @Override
  protected void closePart(ByteArrayOutputStream out, Part part) {
    String text = itemText.toString();
    ObjectNode item;
    switch (part) {
      case TEXT -> {
        ObjectNode e = itemRef(F.objectNode()).put("content_index", 0).put("text", text);
        e.putArray("logprobs");
        emit(out, "response.output_text.done", e);
        ObjectNode p = itemRef(F.objectNode()).put("content_index", 0);
        p.set("part", ResponsesOutput.textPart(text));
        emit(out, "response.content_part.done", p);
        item = ResponsesOutput.messageItem(itemId, text, "completed");
      }
      case REASONING -> {
        emit(out, "response.reasoning_text.done", itemRef(F.objectNode()).put("content_index", 0).put("text", text));
        ObjectNode p = itemRef(F.objectNode()).put("content_index", 0);
        p.set("part", ResponsesOutput.reasoningPart(text));
        emit(out, "response.content_part.done", p);
        item = ResponsesOutput.reasoningItem(itemId, text, "completed");
      }
      case TOOL -> {
        String args = text.isEmpty() ? "{}" : text;
        emit(out, "response.function_call_arguments.done", itemRef(F.objectNode()).put("name", callName)
            .put("arguments", args));
        item = ResponsesOutput.functionCallItem(itemId, callId, callName, args, "completed");
      }
      default -> throw new IllegalStateException("no item");
    }
    itemEvent(out, "response.output_item.done", item);
    output.add(item);
  }

  /** {@code item_id} and {@code output_index} of the open item (its index is the next slot of the output). */
  private ObjectNode itemRef(ObjectNode e) {
    return e.put("item_id", itemId).put("output_index", output.size());
  }

  private void itemEvent(ByteArrayOutputStream out, String type, ObjectNode item) {
    ObjectNode e = F.objectNode().put("output_index", output.size());
    e.set("item", item);
    emit(out, type, e);
  }

  @Override
  public byte[] close(RouteInfo route) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    start(out);
    closeOpenPart(out);
    replayPendingCalls(out);
    if (output.isEmpty()) {
      ensure(out, Part.TEXT);
      closeOpenPart(out);
    }
    ResponsesOutput.finish(response, finish, ResponsesOutput.usage(lastUsage));
    String type = "incomplete".equals(response.get("status").asText()) ? "response.incomplete" : "response.completed";
    emit(out, type, F.objectNode().set("response", response));
    return out.toByteArray();
  }

  /**
   * A request that failed after its stream started (a generation worker lost mid-stream, a timeout): an
   * {@code error} event with the failure's message (read from OpenAI's error body), then {@code response.failed}.
   */
  @Override
  public byte[] error(byte[] errorJson) {
    String code = null;
    try {
      JsonNode e = MAPPER.readTree(errorJson).path("error");
      if (e.path("type").isTextual()) {
        code = e.get("type").asText();
      }
    } catch (IOException e) {
      // no code
    }
    return failed(errorMessage(errorJson, INCOMPLETE), code);
  }

  /** A stream that broke after it started: the same ending as {@link #error}, with no detail of the failure. */
  @Override
  public byte[] broken() {
    return started ? failed(INCOMPLETE, null) : StreamTransformer.NOTHING;
  }

  private byte[] failed(String message, String code) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    start(out);
    ObjectNode e = F.objectNode().put("code", code).put("message", message);
    e.putNull("param");
    emit(out, "error", e);
    response.put("status", "failed");
    response.putObject("error").put("code", "server_error").put("message", message);
    response.set("usage", ResponsesOutput.usage(lastUsage));
    emit(out, "response.failed", F.objectNode().set("response", response));
    return out.toByteArray();
  }

  /** Every event carries its type and the stream's next {@code sequence_number}. */
  private void emit(ByteArrayOutputStream out, String type, ObjectNode data) {
    ObjectNode framed = F.objectNode().put("type", type);
    framed.setAll(data);
    framed.put("sequence_number", sequence++);
    event(out, type, framed);
  }
}
