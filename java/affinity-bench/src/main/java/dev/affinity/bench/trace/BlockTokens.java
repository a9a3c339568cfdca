package dev.affinity.bench.trace;

import java.util.SplittableRandom;

/**
 * Turns a trace request's block ids into prompt token ids, deterministically: a block's tokens
 * depend only on its id (and the salt), so requests that share a chained id at position {@code i}
 * share their first {@code i + 1} blocks of tokens exactly, and replays are reproducible. The last
 * block is cut to the prompt's length. Token ids fall in {@code [0, vocabSize)}.
 */
public final class BlockTokens {
  private final int vocabSize;
  private final long salt;

  /**
   * @param vocabSize tokens are drawn from {@code [0, vocabSize)}
   * @param salt      separates traces whose ids would otherwise collide (0 for one trace)
   */
  public BlockTokens(int vocabSize, long salt) {
    if (vocabSize < 2) {
      throw new IllegalArgumentException("vocabSize must be >= 2, got " + vocabSize);
    }
    this.vocabSize = vocabSize;
    this.salt = salt;
  }

  /** The prompt tokens of {@code request}: {@code inputLength} of them. */
  public int[] tokens(TraceRequest request) {
    int[] tokens = new int[request.inputLength()];
    int bs = request.blockSize();
    for (int b = 0; b < request.hashIds().size(); b++) {
      SplittableRandom random = new SplittableRandom(request.hashIds().get(b) * 0x9E3779B97F4A7C15L ^ salt);
      int end = Math.min(tokens.length, (b + 1) * bs);
      for (int i = b * bs; i < end; i++) {
        tokens[i] = random.nextInt(vocabSize);
      }
    }
    return tokens;
  }
}
