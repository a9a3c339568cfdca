package dev.affinity.worker;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;

/** Text to token ids and back, for workers that run the model (or its simulation) in process. */
public interface TokenCodec {
  int[] encode(String text);

  /**
   * A completion prompt's ids: with the special tokens the model's tokenizer adds to an input (its BOS, for example)
   * when {@code addSpecialTokens} (a completion's {@code add_special_tokens}, default true). By default {@link
   * #encode}: an encoding without special tokens of its own.
   */
  default int[] encodePrompt(String text, boolean addSpecialTokens) {
    return encode(text);
  }

  /**
   * What the worker reports as its {@code render_fingerprint}: equal values render and encode a chat the same way,
   * so a frontend may send it the chat's ids. Null (the default) when the codec makes no such promise.
   */
  default String renderFingerprint() {
    return null;
  }

  /**
   * The prompt of a chat request. By default its messages rendered with a plain template
   * ({@code <|role|>\ncontent\n} per message, then {@code <|assistant|>\n}) and encoded; a model's
   * tokenizer applies the model's own chat template instead.
   */
  default int[] encodeChat(ChatCompletionRequest chat) {
    return encode(plainTemplate(chat));
  }

  /**
   * The most input characters one token of {@link #encode} stands for in {@code texts}, so that a text of
   * {@code n} characters has at least {@code n / maxCharsPerToken(...)} tokens; 0 (the default) when the codec
   * gives no such bound.
   */
  default int maxCharsPerToken(java.util.List<String> texts) {
    return 0;
  }

  /** Decodes ids; ids outside the vocabulary are skipped. */
  String decode(int[] tokens);

  /** The name of the encoding (for example "cl100k_base"). */
  String name();

  /** The plain chat template of the simulated model. */
  static String plainTemplate(ChatCompletionRequest chat) {
    StringBuilder sb = new StringBuilder();
    for (ChatMessage m : chat.messages()) {
      sb.append("<|").append(m.role()).append("|>\n").append(m.contentText()).append('\n');
    }
    return sb.append("<|assistant|>\n").toString();
  }
}
