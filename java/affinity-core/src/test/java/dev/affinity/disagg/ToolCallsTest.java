package dev.affinity.disagg;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A turn that ends in a tool call, as the frontend tells it from the answer. */
class ToolCallsTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static EncodedResponse chat(String finish) {
    return EncodedResponse.of(CODEC.parseChatCompletionResponse(("""
        {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0,
         "message": {"role": "assistant", "content": null}, "finish_reason": "%s"}]}""").formatted(finish)
        .getBytes(StandardCharsets.UTF_8)));
  }

  private static EncodedChunk chunk(String json) {
    return EncodedChunk.of(CODEC.parseChatCompletionStreamChunk(json.getBytes(StandardCharsets.UTF_8)),
        json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aWholeAnswerCallsToolsByItsFinishReason() {
    assertTrue(ToolCalls.in(chat("tool_calls")));
    assertFalse(ToolCalls.in(chat("stop")));
    assertFalse(ToolCalls.in(chat("length")));
  }

  @Test
  void aStreamCallsToolsWhenAChunkCarriesThem() {
    String delta = """
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta":
         {"tool_calls": [{"index": 0, "id": "t", "type": "function", "function": {"name": "f", "arguments": ""}}]},
         "finish_reason": null}]}""";
    String plain = """
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta":
         {"content": "tool_calls are mentioned in prose only"}, "finish_reason": null}]}""";
    String end = """
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {},
         "finish_reason": "tool_calls"}]}""";
    assertTrue(ToolCalls.in(chunk(delta)));
    assertTrue(ToolCalls.in(chunk(end)));
    assertTrue(ToolCalls.in(chunk(delta).parsed()));
    assertTrue(ToolCalls.in(chunk(end).parsed()));
    assertFalse(ToolCalls.in(chunk(plain).parsed()));
    assertFalse(ToolCalls.in(chunk(plain)), "the word unquoted in text is not the key");
  }
}
