package dev.affinity.admission;

import dev.affinity.protocol.OpenAiRequest;
import dev.affinity.worker.TokenCodec;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * The prompt tokenizer of a token codec (an embedded worker's): its ids, long texts tokenized off the event loop
 * ({@link PromptTokenizer#longText}) and the codec's characters-per-token bound for the cheap size check.
 *
 * @param tokens the request's prompt ids
 * @param codec the codec, for its {@link TokenCodec#maxCharsPerToken} bound
 */
public record CodecPromptTokenizer(Function<OpenAiRequest, int[]> tokens, TokenCodec codec) implements PromptTokenizer {
  public CodecPromptTokenizer {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(codec, "codec");
  }

  @Override
  public int maxCharsPerToken(List<String> texts) {
    return codec.maxCharsPerToken(texts);
  }

  @Override
  public int[] tokenize(OpenAiRequest request) {
    return tokens.apply(request);
  }

  @Override
  public boolean isLong(OpenAiRequest request) {
    return PromptTokenizer.longText(request);
  }
}
