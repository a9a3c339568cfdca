package dev.affinity.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
 * The part every endpoint that reframes the generation worker's OpenAI chat chunks into another API's stream
 * shares (Anthropic's Messages, OpenAI's Responses): reading each chunk, keeping its usage and finish reason, and
 * turning its deltas into a sequence of <em>parts</em> with one open at a time — reasoning, text, and tool calls.
 * Parallel tool calls whose fragments interleave are serialized: fragments of a call other than the open one are
 * kept and replayed as their own parts ({@link #replayPendingCalls}). The subclass writes each API's events when a
 * part opens, grows and closes, and what comes before and after; SSE framing is {@code event: <type>\ndata: <json>}.
 * One instance per stream, called on one thread.
 */
public abstract class ChatStreamReframer implements StreamTransformer {
  protected static final ObjectMapper MAPPER = new ObjectMapper();
  protected static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** What a part carries. */
  protected enum Part { NONE, TEXT, REASONING, TOOL }

  /** A tool call whose fragments arrived while another part was open. */
  private static final class PendingCall {
    String id;
    String name;
    final StringBuilder arguments = new StringBuilder();
  }

  private Part open = Part.NONE;
  /** The chat tool-call index of the open tool part, or -1. */
  private int openTool = -1;
  private final Map<Integer, PendingCall> pending = new LinkedHashMap<>();
  /** Tool-call indices that already had their own part. */
  private final Set<Integer> done = new HashSet<>();
  /** The last {@code finish_reason} seen, or null. */
  protected String finish;
  /** The last {@code usage} seen, or null. */
  protected JsonNode lastUsage;

  /** Before a chunk's deltas (its usage is already in {@link #lastUsage}): e.g. the stream's opening events. */
  protected abstract void onChunk(ByteArrayOutputStream out, JsonNode chunk);

  /** A part opens; a tool part with its call's id and name (either may be null or empty). */
  protected abstract void openPart(ByteArrayOutputStream out, Part part, String toolId, String toolName);

  /** More of the open part: text, reasoning, or a tool call's arguments (never empty). */
  protected abstract void partDelta(ByteArrayOutputStream out, Part part, String text);

  /** The open part closes. */
  protected abstract void closePart(ByteArrayOutputStream out, Part part);

  /** A choice carried a finish reason (already in {@link #finish}). */
  protected void onFinish(JsonNode choice) {}

  @Override
  public final byte[] chunk(EncodedChunk chunk) {
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
    onChunk(out, c);
    JsonNode choice = c.path("choices").path(0);
    if (choice.isObject()) {
      JsonNode delta = choice.path("delta");
      String reasoning = text(delta, "reasoning_content");
      if (reasoning == null) {
        reasoning = text(delta, "reasoning");
      }
      if (reasoning != null && !reasoning.isEmpty()) {
        ensure(out, Part.REASONING);
        partDelta(out, Part.REASONING, reasoning);
      }
      String content = text(delta, "content");
      if (content != null && !content.isEmpty()) {
        ensure(out, Part.TEXT);
        partDelta(out, Part.TEXT, content);
      }
      JsonNode calls = delta.path("tool_calls");
      for (int i = 0; i < calls.size(); i++) {
        toolFragment(out, calls.get(i), i);
      }
      if (choice.hasNonNull("finish_reason")) {
        finish = choice.get("finish_reason").asText();
        onFinish(choice);
      }
    }
    return out.toByteArray();
  }

  /** A text field's value, or null when absent or not text. */
  protected static String text(JsonNode node, String field) {
    JsonNode v = node.get(field);
    return v == null || !v.isTextual() ? null : v.asText();
  }

  private void toolFragment(ByteArrayOutputStream out, JsonNode call, int position) {
    int idx = call.path("index").asInt(position);
    JsonNode fn = call.path("function");
    String args = text(fn, "arguments");
    if (open == Part.TOOL && openTool == idx) {
      if (args != null && !args.isEmpty()) {
        partDelta(out, Part.TOOL, args);
      }
      return;
    }
    if (open != Part.TOOL && !pending.containsKey(idx) && !done.contains(idx)) {
      openTool(out, idx, text(call, "id"), text(fn, "name"));
      if (args != null && !args.isEmpty()) {
        partDelta(out, Part.TOOL, args);
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

  /** Opens a text or reasoning part unless one of that kind is open already. */
  protected final void ensure(ByteArrayOutputStream out, Part part) {
    if (open == part) {
      return;
    }
    closeOpenPart(out);
    open = part;
    openPart(out, part, null, null);
  }

  private void openTool(ByteArrayOutputStream out, int idx, String id, String name) {
    closeOpenPart(out);
    open = Part.TOOL;
    openTool = idx;
    openPart(out, Part.TOOL, id, name);
  }

  /** Closes the open part, if any. */
  protected final void closeOpenPart(ByteArrayOutputStream out) {
    if (open == Part.NONE) {
      return;
    }
    closePart(out, open);
    if (open == Part.TOOL) {
      done.add(openTool);
      openTool = -1;
    }
    open = Part.NONE;
  }

  /** At the end: every tool call kept aside gets its own part, in the order its first fragment came. */
  protected final void replayPendingCalls(ByteArrayOutputStream out) {
    for (Map.Entry<Integer, PendingCall> p : pending.entrySet()) {
      if (done.contains(p.getKey())) {
        continue;
      }
      PendingCall call = p.getValue();
      openTool(out, p.getKey(), call.id, call.name);
      if (call.arguments.length() > 0) {
        partDelta(out, Part.TOOL, call.arguments.toString());
      }
      closeOpenPart(out);
    }
  }

  /** Writes one server-sent event: {@code event: <type>\ndata: <json>\n\n}. */
  protected static void event(ByteArrayOutputStream out, String type, ObjectNode data) {
    out.writeBytes(("event: " + type + "\ndata: ").getBytes(StandardCharsets.US_ASCII));
    try {
      out.writeBytes(MAPPER.writeValueAsBytes(data));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    out.writeBytes(new byte[] {'\n', '\n'});
  }

  /** The message of an OpenAI error body ({@code {"error": {"message": ...}}}), or {@code fallback}. */
  protected static String errorMessage(byte[] errorJson, String fallback) {
    try {
      JsonNode m = MAPPER.readTree(errorJson).at("/error/message");
      return m.isTextual() ? m.asText() : fallback;
    } catch (IOException e) {
      return fallback;
    }
  }
}
