package dev.affinity.worker;

/** Text to token ids and back, for workers that run the model (or its simulation) in process. */
public interface TokenCodec {
  int[] encode(String text);

  /** Decodes ids; ids outside the vocabulary are skipped. */
  String decode(int[] tokens);

  /** The name of the encoding (for example "cl100k_base"). */
  String name();
}
