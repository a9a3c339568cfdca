package dev.affinity.nativebridge.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.affinity.executor.Executor;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ChatMessage;
import dev.affinity.worker.TokenCodec;
import java.util.Objects;

/**
 * The served model's own tokenizer and chat template, from an executor that runs the model (the
 * pytorch backend: {@code LLM.tokenizer}). Selected with {@code affinity.tokenizer: model}. Each call
 * is one round trip to the executor's Python host; chunks of a stream are decoded one by one.
 */
public final class ModelTokenCodec implements TokenCodec {
  /** The value of {@code affinity.tokenizer} that selects it. */
  public static final String NAME = "model";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Executor executor;

  public ModelTokenCodec(Executor executor) {
    this.executor = Objects.requireNonNull(executor, "executor");
    if (!executor.hasModelTokenizer()) {
      throw new IllegalArgumentException("tokenizer \"model\" needs workers that run a model (backend pytorch); the "
          + executor.backend() + " backend has none: use a BPE encoding such as cl100k_base");
    }
  }

  @Override
  public int[] encode(String text) {
    return executor.tokenize(text);
  }

  @Override
  public int[] encodeChat(ChatCompletionRequest chat) {
    ArrayNode messages = JSON.createArrayNode();
    for (ChatMessage m : chat.messages()) {
      messages.addObject().put("role", m.role()).put("content", m.contentText());
    }
    return executor.tokenizeChat(messages.toString());
  }

  @Override
  public String decode(int[] tokens) {
    return tokens.length == 0 ? "" : executor.detokenize(tokens);
  }

  @Override
  public String name() {
    return NAME;
  }
}
