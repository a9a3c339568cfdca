package dev.affinity.protocol;

import java.util.Optional;

/** A non-streamed completion or chat-completion response. */
public sealed interface OpenAiResponse permits CompletionResponse, ChatCompletionResponse {
  String id();

  String model();

  UsageInfo usage();

  TokenIds promptTokenIds();

  Optional<DisaggregatedParams> firstDisaggregatedParams();

  OpenAiResponse withoutDisaggregatedParams();

  OpenAiResponse withUsageFromContext(UsageInfo ctxUsage);

  /** {@code choices[0].finish_reason}, when there is one. */
  default Optional<String> firstFinishReason() {
    if (this instanceof ChatCompletionResponse r) {
      return r.firstChoice().map(ChatChoice::finishReason);
    }
    return ((CompletionResponse) this).firstChoice().map(CompletionChoice::finishReason);
  }
}
