package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The characters-per-token bound admission refuses huge prompts by ({@link ModelTokenizer#maxCharsPerToken}) is a
 * true lower bound on the model tokenizer's count, on the real tokenizers and on texts chosen to be dense (long runs,
 * repeated words, CJK, emoji, combining marks and Hangul jamo that NFC composes) and on random ones; a normalizer
 * that may delete input gives no bound.
 */
class TokenBoundTest {
  static List<String> texts(long seed) {
    List<String> texts = new ArrayList<>(List.of(
        "x".repeat(20_000), " ".repeat(20_000), "=".repeat(5_000), "\n".repeat(3_000), "0".repeat(4_000),
        "the ".repeat(4_000), "abcdefghijklmnopqrstuvwxyz".repeat(500), "中文字符".repeat(1_000),
        "\uD83D\uDE00".repeat(1_000), "e\u0301".repeat(2_000), "\u1100\u1161\u11A8".repeat(1_000),
        "<|im_start|>".repeat(500), "<|endoftext|>".repeat(300), "<bos>".repeat(300), "▁".repeat(5_000)));
    Random random = new Random(seed);
    String alphabet = "ab c\n\t.,;{}()[]0123456789é中😀\u0301_-=+/\\\"'<|>";
    for (int i = 0; i < 40; i++) {
      StringBuilder sb = new StringBuilder();
      int n = 1 + random.nextInt(3_000);
      for (int k = 0; k < n; k++) {
        sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
        if (random.nextInt(8) == 0) {
          sb.append(String.valueOf(alphabet.charAt(random.nextInt(alphabet.length()))).repeat(random.nextInt(64)));
        }
      }
      texts.add(sb.toString());
    }
    return texts;
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void noTextHasFewerTokensThanItsCharactersOverTheBound(String family) {
    try (ModelTokenizer t = ModelTokenizer.load(TestModels.dir(family))) {
      for (String text : texts(family.hashCode())) {
        int bound = t.maxCharsPerToken(List.of(text));
        assertTrue(bound > 0 && bound < 1024, family + ": " + bound);
        int tokens = t.encode(text, false).length;
        assertTrue((long) tokens * bound >= text.length(),
            family + ": " + tokens + " tokens x " + bound + " < " + text.length() + " chars of " + text.substring(0, 20));
      }
    }
  }

  @org.junit.jupiter.api.Test
  void aComposingNormalizerShrinksOnlyTextsNotInItsForm() {
    try (ModelTokenizer qwen = ModelTokenizer.load(TestModels.dir(TestModels.QWEN3))) {  // NFC, 128-char tokens
      assertEquals(128, qwen.maxCharsPerToken(List.of("plain ascii", "中文")));
      assertEquals(512, qwen.maxCharsPerToken(List.of("plain ascii", "e\u0301")));
    }
  }

  @org.junit.jupiter.api.Test
  void normalizersThatMayDeleteInputGiveNoBound() throws Exception {
    ObjectMapper json = new ObjectMapper();
    assertEquals(1, TokenizerFile.shrink(null));
    assertEquals(4, TokenizerFile.shrink(json.readTree("{\"type\": \"NFC\"}")));
    assertEquals(1, TokenizerFile.shrink(
        json.readTree("{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}")));
    assertEquals(1, TokenizerFile.shrink(json.readTree("{\"type\": \"Sequence\", \"normalizers\": []}")));
    assertEquals(0, TokenizerFile.shrink(json.readTree("{\"type\": \"BertNormalizer\"}")));
    assertEquals(0, TokenizerFile.shrink(json.readTree("{\"type\": \"Strip\"}")));
    assertEquals(0, TokenizerFile.shrink(
        json.readTree("{\"type\": \"Replace\", \"pattern\": {\"String\": \"x\"}, \"content\": \"\"}")));
    assertEquals(0, TokenizerFile.shrink(
        json.readTree("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Precompiled\"}]}")));
  }
}
