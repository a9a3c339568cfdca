package dev.affinity.tokenizer;

import dev.affinity.admission.PromptTokenizer;
import dev.affinity.conversation.Resolution;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.OpenAiRequest;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * The frontend's prompt ids from the model's own tokenizer, as upstream's router computes them
 * ({@code BlockHashMixin._tokenize} in {@code tensorrt_llm/serve/router_utils.py}), so prefix-aware routers hash the
 * ids whose blocks the workers' KV events report:
 * <ul>
 *   <li>ids the client sent (a completion's token prompt, a chat's {@code prompt_token_ids}) as they are;
 *   <li>a completion's text as {@code tokenizer(prompt)["input_ids"]} (with the special tokens the tokenizer adds,
 *       unless the request sets {@code add_special_tokens} false); forwarded to the legs as the prompt;
 *   <li>a chat rendered with the chat template and encoded without special tokens ({@link PromptRenderer}); its ids go
 *       to the legs only when every worker renders as this tokenizer does ({@code workersRenderAlike}: their
 *       {@code render_fingerprint}), and never for messages with media, else the chat goes as text. A chat the
 *       template engine cannot render (an error of the engine, not the template's {@code raise_exception}) gets no
 *       ids: it is routed on its text and the worker renders it (logged, counted in {@link #engineErrors}).
 * </ul>
 */
public final class ModelPromptTokenizer implements PromptTokenizer {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ModelPromptTokenizer.class);

  private final PromptRenderer renderer;
  private final BooleanSupplier workersRenderAlike;
  private final java.util.concurrent.atomic.AtomicLong engineErrors = new java.util.concurrent.atomic.AtomicLong();

  public ModelPromptTokenizer(PromptRenderer renderer, BooleanSupplier workersRenderAlike) {
    this.renderer = Objects.requireNonNull(renderer, "renderer");
    this.workersRenderAlike = Objects.requireNonNull(workersRenderAlike, "workersRenderAlike");
  }

  public PromptRenderer renderer() {
    return renderer;
  }

  /**
   * @throws dev.affinity.protocol.ProtocolException (400 naming {@code messages} or {@code chat_template}) when the
   *     chat template refuses the conversation
   */
  @Override
  public int[] tokenize(OpenAiRequest request) {
    return tokenize(request, null);
  }

  /**
   * A chat of a conversation reuses the ids of what its last prompt (else its parent's) shares with it
   * ({@link PromptPrefixes}); the keys are the resolution's own and affinity ids (namespaced by tenant).
   */
  @Override
  public int[] tokenize(OpenAiRequest request, Resolution resolution) {
    int[] sent = PromptTokenizer.clientIds(request);
    if (sent != null) {
      return sent;
    }
    if (request instanceof CompletionRequest c) {
      return renderer.tokenizer().encode(c.promptText().orElse(""), c.addSpecialTokens() == null || c.addSpecialTokens());
    }
    try {
      return resolution == null ? renderer.encodeChat((ChatCompletionRequest) request)
          : renderer.encodeChat((ChatCompletionRequest) request, resolution.conversationId(), resolution.affinityId());
    } catch (TemplateException e) {
      // the engine could not render what the worker can: route on the text, and the worker renders the chat
      long n = engineErrors.incrementAndGet();
      if (Long.bitCount(n) == 1) {  // the 1st, 2nd, 4th, 8th, ... time
        LOG.warn("chat not rendered by the frontend ({} so far), routed on its text: {}", n, e.getMessage());
      }
      return null;
    }
  }

  /** Chats the template engine could not render (routed on their text). */
  public long engineErrors() {
    return engineErrors.get();
  }

  /** Prompts from this many characters are tokenized off the event loop ({@link PromptTokenizer#longText}). */
  public static final int LONG_PROMPT_CHARS = PromptTokenizer.LONG_PROMPT_CHARS;

  @Override
  public boolean isLong(OpenAiRequest request) {
    return PromptTokenizer.longText(request);
  }

  @Override
  public int maxCharsPerToken(java.util.List<String> texts) {
    return renderer.tokenizer().maxCharsPerToken(texts);
  }

  @Override
  public long minTokens(java.util.List<String> texts) {
    return renderer.tokenizer().minTokens(texts);
  }

  @Override
  public boolean forwardsIds(OpenAiRequest request) {
    if (request instanceof ChatCompletionRequest chat) {
      return chat.promptTokenIds() == null && !OpenAiChat.hasMedia(chat) && workersRenderAlike.getAsBoolean();
    }
    return true;
  }
}
