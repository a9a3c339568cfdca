package dev.affinity.worker;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;

/** Text to token ids and back, for workers that run the model (or its simulation) in process. */
public interface TokenCodec {
  int[] encode(String text);

  /**
   * The prompt of a chat request. By default its messages rendered with a plain template
   * ({@code <|role|>\ncontent\n} per message, then {@code <|assistant|>\n}) and encoded; a model's
   * tokenizer applies the model's own chat template instead.
   */
  default int[] encodeChat(ChatCompletionRequest chat) {
    return encode(plainTemplate(chat));
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
