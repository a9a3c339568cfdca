package dev.affinity.admission;

import dev.affinity.conversation.Resolution;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.protocol.TokenIds;
import java.util.List;

/**
 * Turns a request's prompt into token ids for routing (and, with embedded workers, for the executor).
 * Returns null when it cannot (no tokenizer for the model and no ids from the client): routers then work from text.
 */
@FunctionalInterface
public interface PromptTokenizer {
  int[] tokenize(OpenAiRequest request);

  /**
   * {@link #tokenize} for a request of the conversation {@code resolution} names: a tokenizer that keeps each
   * conversation's last prompt (its ids reused for the part a new turn re-sends) uses it; the default ignores it.
   */
  default int[] tokenize(OpenAiRequest request, Resolution resolution) {
    return tokenize(request);
  }

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

  /**
   * The most characters one of its tokens stands for in {@code texts} (a request's {@link #keptTexts};
   * {@link dev.affinity.worker.TokenCodec#maxCharsPerToken}): admission refuses a prompt longer than its limit allows
   * by this bound before tokenizing it. 0 (the default): no bound, the prompt is tokenized and then checked.
   */
  default int maxCharsPerToken(List<String> texts) {
    return 0;
  }

  /**
   * At least how many tokens {@code texts} (a request's {@link #keptTexts}) encode to, alone or within the rendered
   * prompt, from a pass cheaper than tokenizing (a model tokenizer's pre-tokenizer pieces): admission refuses a
   * prompt above its limit by this bound before tokenizing it. 0 (the default): no bound.
   */
  default long minTokens(List<String> texts) {
    return 0;
  }

  /** Prompts from this many characters of text are tokenized off the event loop ({@link #longText}). */
  int LONG_PROMPT_CHARS = 4 * 1024;

  /**
   * Whether {@code request} has {@link #LONG_PROMPT_CHARS} or more characters of text to tokenize (client-sent ids
   * have none): about a thousand tokens, which a fast tokenizer encodes in milliseconds (docs/benchmarks.md), long
   * enough to delay every other connection of an event loop.
   */
  static boolean longText(OpenAiRequest request) {
    return textChars(request) >= LONG_PROMPT_CHARS;
  }

  /**
   * The characters of text {@code request} has to tokenize: a completion's text prompt, every message content of a
   * chat; 0 when the client sent ids.
   */
  static long textChars(OpenAiRequest request) {
    if (bringsIds(request)) {
      return 0;
    }
    if (request instanceof CompletionRequest c) {
      return c.promptText().map(String::length).orElse(0);
    }
    ChatCompletionRequest chat = (ChatCompletionRequest) request;
    return chat.contentChars();
  }

  /**
   * The texts of {@code request} that every rendering of it keeps, for a lower bound on its tokens: a completion's
   * text prompt; a chat's system, developer, user and tool contents, stripped (chat templates trim contents and may
   * drop parts of assistant turns, such as earlier reasoning). None for client-sent ids.
   */
  static List<String> keptTexts(OpenAiRequest request) {
    if (bringsIds(request)) {
      return List.of();
    }
    if (request instanceof CompletionRequest c) {
      return c.promptText().map(List::of).orElse(List.of());
    }
    ChatCompletionRequest chat = (ChatCompletionRequest) request;
    List<String> texts = new java.util.ArrayList<>(chat.messages().size());
    for (var m : chat.messages()) {
      switch (m.role()) {
        case "system", "developer", "user", "tool" -> texts.add(m.contentText().strip());
        default -> { }
      }
    }
    return texts;
  }

  /** No ids at all (routers hash text). */
  PromptTokenizer NONE = request -> null;

  /**
   * Only the ids the client sent (a completion's token prompt, a chat's {@code prompt_token_ids}), used as they are:
   * what a frontend without the model's tokenizer can route on; text prompts get null.
   */
  PromptTokenizer CLIENT_IDS = PromptTokenizer::clientIds;

  /**
   * Whether the client sent the prompt as token ids (a completion's {@code prompt}, a chat's extension fields
   * {@code prompt_token_ids} and {@code prompt_token_ids_b64}).
   */
  static boolean bringsIds(OpenAiRequest request) {
    if (request instanceof CompletionRequest c) {
      return c.promptTokenIds().isPresent();
    }
    return request instanceof ChatCompletionRequest chat
        && (chat.promptTokenIds() != null || chat.promptTokenIdsB64() != null);
  }

  /**
   * The ids the client sent, or null; a chat's {@code prompt_token_ids_b64} decoded (base64 int32, as TensorRT-LLM's
   * {@code gen_tokids_ctxbytes} legs carry them) when it sent no {@code prompt_token_ids}.
   *
   * @throws dev.affinity.protocol.ProtocolException (400, naming the field) when the base64 form is not whole ids
   */
  static int[] clientIds(OpenAiRequest request) {
    if (request instanceof CompletionRequest c) {
      return c.promptTokenIds().map(ids -> ids.toArray()).orElse(null);
    }
    if (request instanceof ChatCompletionRequest chat) {
      if (chat.promptTokenIds() != null) {
        return chat.promptTokenIds().toArray();
      }
      if (chat.promptTokenIdsB64() != null) {
        return TokenIds.fromBase64(chat.promptTokenIdsB64(), "prompt_token_ids_b64").toArray();
      }
    }
    return null;
  }
}
