package dev.affinity.disagg;

import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.ChatStreamChoice;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import java.nio.charset.StandardCharsets;

/**
 * Whether an answer ends its turn in a tool call: OpenAI's {@code finish_reason: tool_calls} (a chat answer whose
 * choices call tools; the Anthropic and Responses endpoints translate from it, as {@code stop_reason: tool_use} and
 * {@code function_call} items). A streamed answer calls tools when any of its chunks carries {@code tool_calls} (a
 * delta or the finish reason), found in the chunk's bytes without parsing them.
 */
final class ToolCalls {
  private static final byte[] TOOL_CALLS = "\"tool_calls\"".getBytes(StandardCharsets.US_ASCII);

  private ToolCalls() {}

  static boolean in(EncodedResponse r) {
    return r.firstFinishReason().filter("tool_calls"::equals).isPresent();
  }

  static boolean in(OpenAiStreamChunk chunk) {
    if (chunk instanceof ChatCompletionStreamResponse chat && chat.choices() != null) {
      for (ChatStreamChoice c : chat.choices()) {
        if ("tool_calls".equals(c.finishReason()) || c.delta() != null && c.delta().toolCalls() != null
            && !c.delta().toolCalls().isEmpty()) {
          return true;
        }
      }
    }
    return false;
  }

  static boolean in(EncodedChunk chunk) {
    OpenAiStreamChunk record = chunk.record();
    return record != null ? in(record) : contains(chunk.json(), TOOL_CALLS);
  }

  static boolean contains(byte[] hay, byte[] needle) {
    return ByteSearch.indexOf(hay, needle, 0) >= 0;
  }
}
