package dev.affinity.worker;

import java.util.Arrays;
import java.util.Objects;

/**
 * Text of a growing token sequence, chunk by chunk, as serving stacks stream it: each chunk's text
 * is what decoding a small window of recent tokens adds, held back while it ends in an incomplete
 * character (U+FFFD). Tokenizers whose pieces depend on their neighbours (byte-level BPE splitting a
 * character over tokens, SentencePiece spaces) then stream the same text as decoding the whole
 * answer at once. Not thread-safe: one per stream.
 */
public final class IncrementalDecoder {
  private static final char INCOMPLETE = '\uFFFD';

  private final TokenCodec codec;
  private int[] tokens = new int[64];
  private int size;
  private int prefixOffset;
  private int readOffset;

  public IncrementalDecoder(TokenCodec codec) {
    this.codec = Objects.requireNonNull(codec, "codec");
  }

  /** Adds the chunk's tokens; returns the text they complete ("" while held back). {@code last}
   * flushes whatever is held back. */
  public String next(int[] newTokens, boolean last) {
    if (size + newTokens.length > tokens.length) {
      tokens = Arrays.copyOf(tokens, Math.max(size + newTokens.length, tokens.length * 2));
    }
    System.arraycopy(newTokens, 0, tokens, size, newTokens.length);
    size += newTokens.length;
    if (size == readOffset) {
      return "";
    }
    String prefixText = prefixOffset == readOffset ? "" : codec.decode(Arrays.copyOfRange(tokens, prefixOffset, readOffset));
    String newText = codec.decode(Arrays.copyOfRange(tokens, prefixOffset, size));
    boolean complete = newText.isEmpty() || newText.charAt(newText.length() - 1) != INCOMPLETE;
    if (newText.length() > prefixText.length() && (complete || last)) {
      prefixOffset = readOffset;
      readOffset = size;
      return newText.substring(prefixText.length());
    }
    return "";
  }
}
