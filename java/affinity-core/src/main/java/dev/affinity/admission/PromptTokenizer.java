package dev.affinity.admission;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;

/**
 * Turns a request's prompt into token ids for routing (and, with embedded workers, for the executor).
 * Returns null when it cannot (no tokenizer for the model and no ids from the client): routers then work from text.
 */
@FunctionalInterface
public interface PromptTokenizer {
  int[] tokenize(OpenAiRequest request);

  /**
   * Whether the ids {@link #tokenize} gave may replace the request's prompt on the legs, so workers skip
   * tokenizing (upstream's write-back in {@code tensorrt_llm/serve/router_utils.py}): always for completions; for a
   * chat only when the workers render chats as this tokenizer does. Default true (in-process executors use them).
   */
  default boolean forwardsIds(OpenAiRequest request) {
    return true;
  }

  /**
   * Whether tokenizing {@code request} takes long enough that it should not run on an event loop (upstream runs its
   * router's tokenization in a thread, {@code asyncio.to_thread}, for the same reason). Default false.
   */
  default boolean isLong(OpenAiRequest request) {
    return false;
  }

  /** No ids at all (routers hash text). */
  PromptTokenizer NONE = request -> null;

  /**
   * Only the ids the client sent (a completion's token prompt, a chat's {@code prompt_token_ids}), used as they are:
   * what a frontend without the model's tokenizer can route on; text prompts get null.
   */
  PromptTokenizer CLIENT_IDS = PromptTokenizer::clientIds;

  /** The ids the client sent, or null. */
  static int[] clientIds(OpenAiRequest request) {
    if (request instanceof CompletionRequest c) {
      return c.promptTokenIds().map(ids -> ids.toArray()).orElse(null);
    }
    if (request instanceof ChatCompletionRequest chat && chat.promptTokenIds() != null) {
      return chat.promptTokenIds().toArray();
    }
    return null;
  }
}
