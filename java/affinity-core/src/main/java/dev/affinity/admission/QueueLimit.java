package dev.affinity.admission;

import java.util.Objects;

/**
 * The most work a frontend holds admitted and not yet answered: requests, and their prompt tokens. Past either,
 * a request is answered 503 with {@code Retry-After} at once instead of waiting behind work that will take longer
 * than a client waits (a burst of huge prompts otherwise queues every one of them).
 *
 * @param maxRequests the most requests in flight (positive)
 * @param maxTokens the most prompt tokens in flight; 0 for no token bound
 * @param tokensSource where {@code maxTokens} comes from ({@code affinity.max_queued_tokens}, or the context
 *     fleet's KV cache it was derived from), quoted in the refusal
 */
public record QueueLimit(long maxRequests, long maxTokens, String tokensSource) {
  /** Requests in flight when nothing is configured. */
  public static final QueueLimit DEFAULT =
      new QueueLimit(dev.affinity.config.AffinitySettings.DEFAULT_MAX_QUEUED_REQUESTS, 0, "none");

  /** How many context-fleet KV caches of prompt tokens the derived token bound allows in flight. */
  public static final int KV_CACHES_IN_FLIGHT = 4;

  public QueueLimit {
    if (maxRequests <= 0 || maxTokens < 0) {
      throw new IllegalArgumentException("maxRequests must be > 0 and maxTokens >= 0: " + maxRequests + ", " + maxTokens);
    }
    Objects.requireNonNull(tokensSource, "tokensSource");
  }

  /**
   * A request's prompt tokens for the bound, known before it is tokenized (the bound holds requests waiting to be
   * tokenized too): the ids the client sent, else its text ({@link PromptTokenizer#textChars}) at four characters
   * a token, English text in the common BPE vocabularies.
   */
  public static long tokensOf(dev.affinity.protocol.OpenAiRequest request) {
    int[] ids = PromptTokenizer.clientIds(request);
    return ids != null ? ids.length : (PromptTokenizer.textChars(request) + 3) / 4;
  }
}
