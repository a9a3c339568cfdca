package dev.affinity.server.worker;

import dev.affinity.protocol.ChatCompletionResponse;
import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.PromptTokensDetails;
import dev.affinity.protocol.UsageInfo;

/**
 * A worker's answer with {@code usage.prompt_tokens_details.cached_tokens} read as 0: for a leg whose KV cache salt
 * did not reach the worker (a tenant's completion to a stock trtllm-serve worker), whose cached tokens may be
 * another tenant's blocks. Everything else in the usage stays as the worker sent it.
 */
final class CachedTokens {
  private CachedTokens() {}

  /** Whether {@code usage} tells a number of cached tokens other than 0. */
  static boolean told(UsageInfo usage) {
    PromptTokensDetails d = usage == null ? null : usage.promptTokensDetails();
    return d != null && d.cachedTokens() != null && d.cachedTokens() != 0;
  }

  static UsageInfo hidden(UsageInfo usage) {
    PromptTokensDetails d = usage.promptTokensDetails();
    return new UsageInfo(usage.promptTokens(), usage.completionTokens(), usage.totalTokens(),
        new PromptTokensDetails(0, d == null ? java.util.Map.of() : d.extra()), usage.extra());
  }

  static OpenAiStreamChunk hidden(OpenAiStreamChunk chunk) {
    if (chunk instanceof CompletionStreamResponse c) {
      return c.withUsage(hidden(c.usage()));
    }
    ChatCompletionStreamResponse c = (ChatCompletionStreamResponse) chunk;
    return c.withUsage(hidden(c.usage()));
  }

  static OpenAiResponse hidden(OpenAiResponse response) {
    if (response instanceof CompletionResponse r) {
      return r.withUsage(hidden(r.usage()));
    }
    ChatCompletionResponse r = (ChatCompletionResponse) response;
    return r.withUsage(hidden(r.usage()));
  }
}
