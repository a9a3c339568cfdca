package dev.affinity.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

class IncrementalDecoderTest {
  /** Byte-level: one token per UTF-8 byte, decoded with replacement of incomplete characters. */
  private static final TokenCodec BYTES = new TokenCodec() {
    @Override
    public int[] encode(String text) {
      byte[] b = text.getBytes(StandardCharsets.UTF_8);
      int[] out = new int[b.length];
      for (int i = 0; i < b.length; i++) {
        out[i] = b[i] & 0xFF;
      }
      return out;
    }

    @Override
    public String decode(int[] tokens) {
      byte[] b = new byte[tokens.length];
      for (int i = 0; i < tokens.length; i++) {
        b[i] = (byte) tokens[i];
      }
      return new String(b, StandardCharsets.UTF_8);
    }

    @Override
    public String name() {
      return "bytes";
    }
  };

  /** SentencePiece-like: a token is a word; decoding joins words with spaces and drops the leading one. */
  private static final TokenCodec WORDS = new TokenCodec() {
    private final String[] vocab = {"Hello", "world", "again", "!"};

    @Override
    public int[] encode(String text) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String decode(int[] tokens) {
      StringBuilder sb = new StringBuilder();
      for (int t : tokens) {
        sb.append(' ').append(vocab[t]);
      }
      return sb.length() == 0 ? "" : sb.substring(1);
    }

    @Override
    public String name() {
      return "words";
    }
  };

  private static String stream(TokenCodec codec, int[] tokens, int chunk) {
    IncrementalDecoder d = new IncrementalDecoder(codec);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < tokens.length; i += chunk) {
      int end = Math.min(tokens.length, i + chunk);
      int[] part = java.util.Arrays.copyOfRange(tokens, i, end);
      String text = d.next(part, end == tokens.length);
      assertEquals(-1, text.indexOf('\uFFFD'), "no broken character mid-stream");
      out.append(text);
    }
    return out.toString();
  }

  @Test
  void charactersSplitOverTokensStreamWhole() {
    String text = "naïve café — 東京 🚀 done";
    int[] tokens = BYTES.encode(text);
    for (int chunk = 1; chunk <= 3; chunk++) {
      assertEquals(text, stream(BYTES, tokens, chunk), "chunk " + chunk);
    }
  }

  @Test
  void spacesBetweenPiecesSurviveChunking() {
    assertEquals("Hello world again !", stream(WORDS, new int[] {0, 1, 2, 3}, 1));
  }

  @Test
  void randomTextStreamsAsDecodedWhole() {
    Random rnd = new Random(7);
    for (int n = 0; n < 200; n++) {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < 20; i++) {
        sb.appendCodePoint(rnd.nextBoolean() ? 'a' + rnd.nextInt(26) : 0x4E00 + rnd.nextInt(500));
      }
      int[] tokens = BYTES.encode(sb.toString());
      assertEquals(sb.toString(), stream(BYTES, tokens, 1 + rnd.nextInt(4)));
    }
  }

  @Test
  void aTruncatedCharacterIsFlushedAtTheEnd() {
    int[] tokens = {'o', 'k', 0xE6}; // the first byte of a three-byte character, then the stream ends
    IncrementalDecoder d = new IncrementalDecoder(BYTES);
    assertEquals("ok", d.next(new int[] {'o', 'k'}, false));
    assertEquals("\uFFFD", d.next(new int[] {tokens[2]}, true));
  }
}
