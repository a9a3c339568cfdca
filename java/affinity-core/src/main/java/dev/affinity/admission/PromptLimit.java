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
   * Throws the same 400 as {@link #check} before tokenizing, when the prompt's text alone has more tokens than the
   * limit by one of {@code tokenizer}'s bounds: the texts every rendering keeps ({@link PromptTokenizer#keptTexts}),
   * each less {@value #BOUNDARY_CHARS} characters that may combine with its neighbours, over
   * {@link PromptTokenizer#maxCharsPerToken}; else, for a text of more characters than the limit, the pieces its
   * pre-tokenizer cuts the texts into ({@link PromptTokenizer#minTokens}: a prompt of many short words, whose
   * characters alone prove nothing). A cheap refusal of a huge prompt; nothing without a limit or a bound.
   */
  public void checkSize(OpenAiRequest request, PromptTokenizer tokenizer) {
    if (maxTokens == 0) {
      return;
    }
    java.util.List<String> texts = PromptTokenizer.keptTexts(request);
    long chars = 0;
    for (String t : texts) {
      chars += Math.max(0, t.length() - BOUNDARY_CHARS);
    }
    if (chars <= maxTokens) {  // at least one char per token: it may fit whatever the tokenizer
      return;
    }
    int perToken = tokenizer.maxCharsPerToken(texts);
    if (perToken > 0 && chars > maxTokens * perToken) {
      long atLeast = (chars + perToken - 1) / perToken;
      throw ProtocolException.invalidField(field(request), "the prompt has at least " + atLeast + " tokens (" + chars
          + " characters, at most " + perToken + " per token of this tokenizer); at most " + maxTokens
          + " fit (" + source + ")");
    }
    long pieces = tokenizer.minTokens(texts);
    if (pieces > maxTokens) {
      throw ProtocolException.invalidField(field(request), "the prompt has at least " + pieces + " tokens (the pieces"
          + " this tokenizer's pre-tokenizer cuts its text into); at most " + maxTokens + " fit (" + source + ")");
    }
  }

  /** Characters at each end of a kept text that a normalizer may compose with the text around it. */
  static final int BOUNDARY_CHARS = 4;

  private static String field(OpenAiRequest request) {
    return request instanceof ChatCompletionRequest c
        ? (c.promptTokenIds() != null ? "prompt_token_ids" : "messages") : "prompt";
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
    throw ProtocolException.invalidField(field(request), "the prompt has " + length + " tokens; at most " + maxTokens
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
