package dev.affinity.tokenizer;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.worker.TokenCodec;
import java.util.Objects;

/**
 * A worker's text-to-ids codec from a model's tokenizer directory ({@code affinity.tokenizer: PATH},
 * {@code affinity worker --tokenizer PATH}): simulated workers then encode prompts, render chats and emit KV events
 * over the model's own ids, as a real worker would. Completion prompts get the tokenizer's special tokens (as
 * {@code add_special_tokens} asks, default true); chats are rendered with the model's template and encoded without.
 * Ids the model's vocabulary lacks (the simulator's generated ids can exceed it) decode to nothing.
 */
public final class HfTokenCodec implements TokenCodec {
  private final ModelTokenizer tokenizer;
  private final PromptRenderer renderer;

  public HfTokenCodec(ModelTokenizer tokenizer) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.renderer = new PromptRenderer(tokenizer);
  }

  /** The renderer of chats this codec encodes with (its fingerprint is the codec's {@link #renderFingerprint}). */
  public PromptRenderer renderer() {
    return renderer;
  }

  @Override
  public int maxCharsPerToken(java.util.List<String> texts) {
    return tokenizer.maxCharsPerToken(texts);
  }

  @Override
  public int[] encode(String text) {
    return tokenizer.encode(text, false);
  }

  @Override
  public int[] encodePrompt(String text, boolean addSpecialTokens) {
    return tokenizer.encode(text, addSpecialTokens);
  }

  /**
   * @throws dev.affinity.protocol.ProtocolException (400, {@code messages}) when the template refuses the
   *     conversation; (500) when the template engine cannot render it
   */
  @Override
  public int[] encodeChat(ChatCompletionRequest chat) {
    try {
      return renderer.encodeChat(chat);
    } catch (TemplateException e) {  // the engine's limit: this worker cannot serve the chat
      throw dev.affinity.protocol.ProtocolException.of(500, e.getMessage(), e);
    }
  }

  @Override
  public String decode(int[] tokens) {
    int vocab = tokenizer.vocabularySize();
    int n = 0;
    int[] known = new int[tokens.length];
    for (int t : tokens) {
      if (t >= 0 && t < vocab) {
        known[n++] = t;
      }
    }
    return n == 0 ? "" : tokenizer.decode(n == tokens.length ? known : java.util.Arrays.copyOf(known, n), true);
  }

  @Override
  public String name() {
    return tokenizer.directory().toString();
  }

  @Override
  public String renderFingerprint() {
    return renderer.fingerprint();
  }
}
