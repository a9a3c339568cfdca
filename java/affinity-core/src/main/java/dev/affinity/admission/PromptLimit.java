package dev.affinity.admission;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.protocol.TokenIds;
import java.util.Objects;

/**
 * The longest prompt a deployment accepts, in tokens, and where that number comes from (named in the
 * error). A longer prompt is answered 400 at admission, before any routing, instead of reaching a worker
 * that cannot hold it.
 *
 * @param maxTokens the most prompt tokens; 0 for no limit
 * @param source where the limit comes from ({@code affinity.max_prompt_tokens}, a pool's
 *     {@code max_seq_len}, one rank's KV cache), quoted in the error
 */
public record PromptLimit(long maxTokens, String source) {
  /** No limit. */
  public static final PromptLimit NONE = new PromptLimit(0, "none");

  public PromptLimit {
    if (maxTokens < 0) {
      throw new IllegalArgumentException("maxTokens must be >= 0, got " + maxTokens);
    }
    Objects.requireNonNull(source, "source");
  }

  /** The tighter of two limits (a limit of 0 is no limit). */
  public PromptLimit min(PromptLimit other) {
    if (maxTokens == 0) {
      return other;
    }
    return other.maxTokens == 0 || maxTokens <= other.maxTokens ? this : other;
  }

  /**
   * Throws a 400 {@link ProtocolException} naming the prompt's field when the prompt is longer than the
   * limit: its token ids ({@code tokens}, when the frontend tokenized it) or the ids the client sent. A
   * text prompt the frontend cannot tokenize (remote workers without a frontend tokenizer) is left to the
   * worker, which refuses it with its own 400.
   */
  public void check(OpenAiRequest request, int[] tokens) {
    if (maxTokens == 0) {
      return;
    }
    long length = tokens != null ? tokens.length : clientIds(request);
    if (length <= maxTokens) {
      return;
    }
    String field = request instanceof ChatCompletionRequest c
        ? (c.promptTokenIds() != null ? "prompt_token_ids" : "messages") : "prompt";
    throw ProtocolException.invalidField(field, "the prompt has " + length + " tokens; at most " + maxTokens
        + " fit (" + source + ")");
  }

  private static long clientIds(OpenAiRequest request) {
    if (request instanceof CompletionRequest c) {
      return c.promptTokenIds().map(TokenIds::size).orElse(0);
    }
    TokenIds ids = ((ChatCompletionRequest) request).promptTokenIds();
    return ids == null ? 0 : ids.size();
  }
}
