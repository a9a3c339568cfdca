package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A leg's body built in one copy ({@link OpenAiRequest#forLeg}) is byte for byte what the chained copies give, for
 * random completion and chat requests (unknown fields, exact decimals, nested extras included).
 */
class ForLegTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();

  private static OpenAiRequest chained(OpenAiRequest r, boolean noStreaming, DisaggregatedParams params,
      ConversationParams conversation, TokenIds ids) {
    OpenAiRequest b = (noStreaming ? r.withoutStreaming() : r).withDisaggregatedParams(params)
        .withConversationParams(conversation);
    return ids == null ? b : b.withPromptTokenIds(ids);
  }

  @Test
  void oneCopyEqualsTheChainedCopies() {
    Random r = new Random(14);
    for (int i = 0; i < 400; i++) {
      boolean chat = r.nextBoolean();
      byte[] body = CODEC.toJsonBytes(chat ? RequestGen.chat(r) : RequestGen.completion(r));
      OpenAiRequest request = chat ? CODEC.parseChatCompletionRequest(body) : CODEC.parseCompletionRequest(body);
      DisaggregatedParams params = r.nextInt(4) == 0 ? null
          : CODEC.parse(CODEC.toJsonBytes(RequestGen.disaggregatedParams(r)), DisaggregatedParams.class);
      ConversationParams conversation = r.nextBoolean() ? null : new ConversationParams("conv-" + r.nextInt(100));
      TokenIds ids = r.nextBoolean() ? null : TokenIds.of(new int[] {r.nextInt(50_000), 7, r.nextInt(3)});
      boolean noStreaming = r.nextBoolean();
      String expected = new String(CODEC.toJsonBytes(chained(request, noStreaming, params, conversation, ids)),
          StandardCharsets.UTF_8);
      String actual = new String(CODEC.toJsonBytes(request.forLeg(noStreaming, params, conversation, ids)),
          StandardCharsets.UTF_8);
      assertEquals(expected, actual, "case " + i + ": " + new String(body, StandardCharsets.UTF_8));
    }
  }
}
