package dev.affinity.responses;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.frontend.RouteInfo;
import dev.affinity.frontend.StreamTransformer;
import dev.affinity.worker.EncodedChunk;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

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
public final class ResponsesStream implements StreamTransformer {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** The message of a stream that broke after it started. */
  static final String INCOMPLETE = "the stream ended before the response was complete";

  private enum Kind { NONE, MESSAGE, REASONING, FUNCTION }

  /** A tool call whose fragments arrived while another call was open. */
  private static final class PendingCall {
    String id;
    String name;
    final StringBuilder arguments = new StringBuilder();
  }

  private final ObjectNode response;
  private final ArrayNode output;
  private int sequence;
  private boolean started;

  private Kind open = Kind.NONE;
  private String itemId;
  private final StringBuilder itemText = new StringBuilder();
  private String callId;
  private String callName;
  /** The chat tool-call index of the open function_call item, or -1. */
  private int openTool = -1;
  private final Map<Integer, PendingCall> pending = new LinkedHashMap<>();
  private final Set<Integer> done = new HashSet<>();

  private String finish;
  private JsonNode lastUsage;

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
    event(out, "response.created", F.objectNode().set("response", snapshot));
    event(out, "response.in_progress", F.objectNode().set("response", snapshot.deepCopy()));
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
    start(out);
    if (c.hasNonNull("usage")) {
      lastUsage = c.get("usage");
    }
    String model = c.path("model").asText("");
    if (!model.isEmpty()) {
      response.put("model", model);
    }
    JsonNode choice = c.path("choices").path(0);
    if (choice.isObject()) {
      JsonNode delta = choice.path("delta");
      String reasoning = text(delta, "reasoning_content");
      if (reasoning == null) {
        reasoning = text(delta, "reasoning");
      }
      if (reasoning != null && !reasoning.isEmpty()) {
        ensure(out, Kind.REASONING);
        textDelta(out, "response.reasoning_text.delta", reasoning);
      }
      String content = text(delta, "content");
      if (content != null && !content.isEmpty()) {
        ensure(out, Kind.MESSAGE);
        textDelta(out, "response.output_text.delta", content);
      }
      JsonNode calls = delta.path("tool_calls");
      for (int i = 0; i < calls.size(); i++) {
        toolFragment(out, calls.get(i), i);
      }
      if (choice.hasNonNull("finish_reason")) {
        finish = choice.get("finish_reason").asText();
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
    if (open == Kind.FUNCTION && openTool == idx) {
      argumentsDelta(out, args);
      return;
    }
    if (open != Kind.FUNCTION && !pending.containsKey(idx) && !done.contains(idx)) {
      openFunction(out, idx, text(call, "id"), text(fn, "name"));
      argumentsDelta(out, args);
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

  /** Opens a message or reasoning item unless one of that kind is open already. */
  private void ensure(ByteArrayOutputStream out, Kind kind) {
    if (open == kind) {
      return;
    }
    closeItem(out);
    open = kind;
    itemText.setLength(0);
    boolean message = kind == Kind.MESSAGE;
    itemId = ResponsesOutput.id(message ? "msg" : "rs");
    ObjectNode item = message ? ResponsesOutput.messageItem(itemId, null, "in_progress")
        : ResponsesOutput.reasoningItem(itemId, null, "in_progress");
    itemEvent(out, "response.output_item.added", item);
    ObjectNode e = itemRef(F.objectNode()).put("content_index", 0);
    e.set("part", message ? ResponsesOutput.textPart("") : ResponsesOutput.reasoningPart(""));
    event(out, "response.content_part.added", e);
  }

  private void openFunction(ByteArrayOutputStream out, int idx, String id, String name) {
    closeItem(out);
    open = Kind.FUNCTION;
    openTool = idx;
    itemText.setLength(0);
    itemId = ResponsesOutput.id("fc");
    callId = id == null || id.isEmpty() ? ResponsesOutput.id("call") : id;
    callName = name == null ? "" : name;
    itemEvent(out, "response.output_item.added",
        ResponsesOutput.functionCallItem(itemId, callId, callName, "", "in_progress"));
  }

  private void textDelta(ByteArrayOutputStream out, String type, String delta) {
    itemText.append(delta);
    ObjectNode e = itemRef(F.objectNode()).put("content_index", 0).put("delta", delta);
    if (open == Kind.MESSAGE) {
      e.putArray("logprobs");
    }
    event(out, type, e);
  }

  private void argumentsDelta(ByteArrayOutputStream out, String args) {
    if (args == null || args.isEmpty()) {
      return;
    }
    itemText.append(args);
    event(out, "response.function_call_arguments.delta", itemRef(F.objectNode()).put("delta", args));
  }

  private void closeItem(ByteArrayOutputStream out) {
    if (open == Kind.NONE) {
      return;
    }
    String text = itemText.toString();
    ObjectNode item;
    switch (open) {
      case MESSAGE -> {
        ObjectNode e = itemRef(F.objectNode()).put("content_index", 0).put("text", text);
        e.putArray("logprobs");
        event(out, "response.output_text.done", e);
        ObjectNode p = itemRef(F.objectNode()).put("content_index", 0);
        p.set("part", ResponsesOutput.textPart(text));
        event(out, "response.content_part.done", p);
        item = ResponsesOutput.messageItem(itemId, text, "completed");
      }
      case REASONING -> {
        event(out, "response.reasoning_text.done", itemRef(F.objectNode()).put("content_index", 0).put("text", text));
        ObjectNode p = itemRef(F.objectNode()).put("content_index", 0);
        p.set("part", ResponsesOutput.reasoningPart(text));
        event(out, "response.content_part.done", p);
        item = ResponsesOutput.reasoningItem(itemId, text, "completed");
      }
      case FUNCTION -> {
        String args = text.isEmpty() ? "{}" : text;
        event(out, "response.function_call_arguments.done", itemRef(F.objectNode()).put("name", callName)
            .put("arguments", args));
        item = ResponsesOutput.functionCallItem(itemId, callId, callName, args, "completed");
        done.add(openTool);
        openTool = -1;
      }
      default -> throw new IllegalStateException("no item");
    }
    itemEvent(out, "response.output_item.done", item);
    output.add(item);
    open = Kind.NONE;
  }

  /** {@code item_id} and {@code output_index} of the open item (its index is the next slot of the output). */
  private ObjectNode itemRef(ObjectNode e) {
    return e.put("item_id", itemId).put("output_index", output.size());
  }

  private void itemEvent(ByteArrayOutputStream out, String type, ObjectNode item) {
    ObjectNode e = F.objectNode().put("output_index", output.size());
    e.set("item", item);
    event(out, type, e);
  }

  @Override
  public byte[] close(RouteInfo route) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    start(out);
    closeItem(out);
    for (Map.Entry<Integer, PendingCall> p : pending.entrySet()) {
      if (done.contains(p.getKey())) {
        continue;
      }
      PendingCall call = p.getValue();
      openFunction(out, p.getKey(), call.id, call.name);
      argumentsDelta(out, call.arguments.toString());
      closeItem(out);
    }
    if (output.isEmpty()) {
      ensure(out, Kind.MESSAGE);
      closeItem(out);
    }
    ResponsesOutput.finish(response, finish, ResponsesOutput.usage(lastUsage));
    String type = "incomplete".equals(response.get("status").asText()) ? "response.incomplete" : "response.completed";
    event(out, type, F.objectNode().set("response", response));
    return out.toByteArray();
  }

  /**
   * A request that failed after its stream started (a generation worker lost mid-stream, a timeout): an
   * {@code error} event with the failure's message (read from OpenAI's error body), then {@code response.failed}.
   */
  @Override
  public byte[] error(byte[] errorJson) {
    String message = INCOMPLETE;
    String code = null;
    try {
      JsonNode e = MAPPER.readTree(errorJson).path("error");
      if (e.path("message").isTextual()) {
        message = e.get("message").asText();
      }
      if (e.path("type").isTextual()) {
        code = e.get("type").asText();
      }
    } catch (IOException e) {
      // keep the generic message
    }
    return failed(message, code);
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
    event(out, "error", e);
    response.put("status", "failed");
    response.putObject("error").put("code", "server_error").put("message", message);
    response.set("usage", ResponsesOutput.usage(lastUsage));
    event(out, "response.failed", F.objectNode().set("response", response));
    return out.toByteArray();
  }

  private void event(ByteArrayOutputStream out, String type, ObjectNode data) {
    ObjectNode framed = F.objectNode().put("type", type);
    framed.setAll(data);
    framed.put("sequence_number", sequence++);
    out.writeBytes(("event: " + type + "\ndata: ").getBytes(StandardCharsets.US_ASCII));
    try {
      out.writeBytes(MAPPER.writeValueAsBytes(framed));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.writeBytes(new byte[] {'\n', '\n'});
  }
}
