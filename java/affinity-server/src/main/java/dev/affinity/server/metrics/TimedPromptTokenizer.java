package dev.affinity.server.metrics;

import dev.affinity.admission.PromptTokenizer;
import dev.affinity.conversation.Resolution;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A prompt tokenizer whose work is timed: {@code affinity_tokenize_seconds{request="chat"}} is the chat template's
 * rendering plus the encoding of what it rendered, {@code request="completion"} the encoding of a completion's
 * prompt. Requests that bring their own token ids are not timed (there is no work).
 */
public final class TimedPromptTokenizer implements PromptTokenizer {
  private final PromptTokenizer delegate;
  private final Timer chat;
  private final Timer completion;

  public TimedPromptTokenizer(PromptTokenizer delegate, MeterRegistry registry) {
    this.delegate = delegate;
    this.chat = timer(registry, "chat");
    this.completion = timer(registry, "completion");
  }

  private static Timer timer(MeterRegistry registry, String kind) {
    return Timer.builder("affinity.tokenize")
        .description("Time to render (chats) and encode a prompt with the model's tokenizer in the frontend")
        .tag("request", kind)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofNanos(1_000))
        .maximumExpectedValue(Duration.ofSeconds(30))
        .register(registry);
  }

  @Override
  public int[] tokenize(OpenAiRequest request) {
    return tokenize(request, null);
  }

  @Override
  public int[] tokenize(OpenAiRequest request, Resolution resolution) {
    if (PromptTokenizer.bringsIds(request)) {
      return delegate.tokenize(request, resolution);
    }
    long start = System.nanoTime();
    try {
      return resolution == null ? delegate.tokenize(request) : delegate.tokenize(request, resolution);
    } finally {
      (request instanceof ChatCompletionRequest ? chat : completion).record(System.nanoTime() - start,
          TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public boolean forwardsIds(OpenAiRequest request) {
    return delegate.forwardsIds(request);
  }

  @Override
  public boolean isLong(OpenAiRequest request) {
    return delegate.isLong(request);
  }

  @Override
  public int maxCharsPerToken(List<String> texts) {
    return delegate.maxCharsPerToken(texts);
  }

  @Override
  public long minTokens(List<String> texts) {
    return delegate.minTokens(texts);
  }
}
