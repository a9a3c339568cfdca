package dev.affinity.server.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.affinity.admission.PromptTokenizer;
import dev.affinity.conversation.Resolution;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.Prompt;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The timed tokenizer hands every question on to the tokenizer it times: the conversation a request belongs to (the
 * kept prompt's key) and the pre-tokenizer bound that refuses an oversized prompt before tokenizing it (it answered 0,
 * no bound, in the assembled server before).
 */
class TimedPromptTokenizerTest {
  @Test
  void everyQuestionReachesTheTimedTokenizer() {
    Resolution conversation = new Resolution("c1", "parent", false);
    Resolution[] heard = new Resolution[1];
    PromptTokenizer inner = new PromptTokenizer() {
      @Override
      public int[] tokenize(OpenAiRequest request) {
        return new int[] {1};
      }

      @Override
      public int[] tokenize(OpenAiRequest request, Resolution resolution) {
        heard[0] = resolution;
        return new int[] {2};
      }

      @Override
      public int maxCharsPerToken(List<String> texts) {
        return 7;
      }

      @Override
      public long minTokens(List<String> texts) {
        return 12_345;
      }

      @Override
      public boolean isLong(OpenAiRequest request) {
        return true;
      }
    };
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    TimedPromptTokenizer timed = new TimedPromptTokenizer(inner, registry);
    OpenAiRequest request = CompletionRequest.builder("m", Prompt.text("hello")).build();
    assertArrayEquals(new int[] {2}, timed.tokenize(request, conversation));
    assertSame(conversation, heard[0]);
    assertArrayEquals(new int[] {1}, timed.tokenize(request));
    assertEquals(12_345, timed.minTokens(List.of("a")));
    assertEquals(7, timed.maxCharsPerToken(List.of("a")));
    assertEquals(true, timed.isLong(request));
    assertEquals(2, registry.get("affinity.tokenize").tag("request", "completion").timer().count());
  }
}
