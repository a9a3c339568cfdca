package dev.affinity.bench.live;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * The chat text of a trace's block ids: every id becomes {@code wordsPerBlock} English-ish words drawn with a
 * generator seeded by the trace id and the block id, so equal ids give equal texts and prefix-chained ids give
 * prefix-extending chats.
 */
final class BlockTexts {
  private final int wordsPerBlock;

  BlockTexts(int wordsPerBlock) {
    this.wordsPerBlock = wordsPerBlock;
  }

  /** The texts of block ids {@code from} to {@code to - 1}, joined by spaces. */
  String text(String traceId, long[] ids, int from, int to) {
    StringBuilder sb = new StringBuilder();
    for (int i = from; i < to; i++) {
      if (i > from) {
        sb.append(' ');
      }
      sb.append(blockText(traceId, ids[i]));
    }
    return sb.toString();
  }

  /** The text of one block id of a trace: {@code --words-per-block} words, a sentence break now and then. */
  String blockText(String traceId, long id) {
    SplittableRandom rng = new SplittableRandom(seed(traceId, id));
    StringBuilder sb = new StringBuilder(wordsPerBlock * 7);
    boolean capital = true;
    for (int w = 0; w < wordsPerBlock; w++) {
      if (w > 0) {
        sb.append(' ');
      }
      String word = WORDS[rng.nextInt(WORDS.length)];
      sb.append(capital ? Character.toUpperCase(word.charAt(0)) + word.substring(1) : word);
      capital = false;
      if (w == wordsPerBlock - 1 || rng.nextInt(12) == 0) {
        sb.append('.');
        capital = true;
      }
    }
    return sb.toString();
  }

  /** The generator seed of a block id of a trace. */
  static long seed(String traceId, long id) {
    long h = 0xCBF29CE484222325L;
    for (byte b : traceId.getBytes(StandardCharsets.UTF_8)) {
      h = (h ^ (b & 0xFF)) * 0x100000001B3L;
    }
    return ChatHitRatio.mix(h ^ ChatHitRatio.mix(id + 0x9E3779B97F4A7C15L));
  }

  /** Common English words, the vocabulary of the block texts. */
  private static final String[] WORDS = (
      "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you "
      + "were her she there been one all we their has would when if so no will more out up into do any your what some "
      + "can time only other new about could these may first then than also two after most made over did many before "
      + "such like through where just long well should very between those each under being must people because "
      + "same while another found know part still way place work down even back use good year much most right take "
      + "house world small large great number water light point hand city state river field table order course "
      + "system report market change power line group paper music story night money letter answer street garden "
      + "window station morning evening summer winter country village school office forest mountain island bridge "
      + "engine signal record simple common strong early final public private open close clear quick quiet heavy "
      + "bright careful gentle sudden narrow modern ancient golden silver yellow purple orange green blue red black "
      + "white happy ready sure true free full warm cold dark deep high low near far next last old young short "
      + "build carry follow begin bring keep leave learn listen move offer open pass play read remember return "
      + "show sing sleep speak stand start stay stop teach think travel turn wait walk watch write answer measure "
      + "travel gather explain describe consider decide develop continue provide include produce allow require").split(" ");
}
