package dev.affinity.disagg;

/**
 * Turns text into the token ids the workers would produce for it: how a stream cut mid-way is continued on another
 * worker when its chunks carried text only (the frontend's own tokenizer, with embedded workers).
 */
@FunctionalInterface
public interface TextTokenizer {
  int[] encode(String text);
}
