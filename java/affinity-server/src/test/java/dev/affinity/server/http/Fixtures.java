package dev.affinity.server.http;

import dev.affinity.frontend.RouteInfo;
import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.ProtocolCodec;
import java.nio.charset.StandardCharsets;

/** Request bodies and worker-shaped answers for the tests. */
final class Fixtures {
  static final ProtocolCodec CODEC = new ProtocolCodec();
  static final long DISAGG_ID = (1L << 40) + 42;
  static final RouteInfo ROUTE = new RouteInfo(DISAGG_ID, new RouteInfo.Placement("ctx-0", 1, 128),
      RouteInfo.Placement.of("gen-1", 0), new RouteInfo.Conversation("conv-7", "parent-3"),
      new RouteInfo.RoutingKeys("parent-3", "conv-7"), 2);

  static final String COMPLETION = "{\"model\":\"test-model\",\"prompt\":\"hello\",\"max_tokens\":8}";
  static final String STREAMING_COMPLETION =
      "{\"model\":\"test-model\",\"prompt\":\"hello\",\"max_tokens\":8,\"stream\":true}";
  static final String CHAT =
      "{\"model\":\"test-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  private Fixtures() {}

  static CompletionResponse completionResponse(String text) {
    return CODEC.parseCompletionResponse(bytes("{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
        + "\"model\":\"test-model\",\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":\"stop\"}],"
        + "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}"));
  }

  static ChatCompletionResponse chatResponse(String text) {
    return CODEC.parseChatCompletionResponse(bytes("{\"id\":\"chat-1\",\"object\":\"chat.completion\",\"created\":1,"
        + "\"model\":\"test-model\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\""
        + text + "\"},\"finish_reason\":\"stop\"}],"
        + "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}"));
  }

  static CompletionStreamResponse chunk(int i) {
    return CODEC.parseCompletionStreamChunk(bytes("{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
        + "\"model\":\"test-model\",\"choices\":[{\"index\":0,\"text\":\"t" + i + "\",\"finish_reason\":null}]}"));
  }

  static ChatCompletionStreamResponse chatChunk(int i) {
    return CODEC.parseChatCompletionStreamChunk(bytes("{\"id\":\"chat-1\",\"object\":\"chat.completion.chunk\","
        + "\"created\":1,\"model\":\"test-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t" + i
        + "\"},\"finish_reason\":null}]}"));
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
