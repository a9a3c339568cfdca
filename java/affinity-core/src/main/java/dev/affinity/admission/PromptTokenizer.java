package dev.affinity.admission;

import dev.affinity.protocol.OpenAiRequest;

/**
 * Turns a request's prompt into token ids for routing (and, with embedded workers, for the executor).
 * Returns null when it cannot (no tokenizer for a remote model): routers then work from ids and text.
 */
@FunctionalInterface
public interface PromptTokenizer {
  int[] tokenize(OpenAiRequest request);

  PromptTokenizer NONE = request -> null;
}
