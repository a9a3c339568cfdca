package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link SegmentCache}: with a fake encoder (where it splits, what it caches), and through {@link ModelTokenizer} with
 * the real Qwen3, Llama 3.1 and Gemma 3 tokenizers: {@code encodeRendered(text)} must equal {@code encode(text, false)}
 * for chat-like texts mixing the model's special tokens with everything else, and a conversation re-encoded with one
 * more turn must hit the cache.
 */
class SegmentCacheTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, ModelTokenizer> TOKENIZERS = new LinkedHashMap<>();

  @BeforeAll
  static void load() {
    for (String family : List.of(TestModels.QWEN3, TestModels.LLAMA3, TestModels.GEMMA3)) {
      TOKENIZERS.put(family, ModelTokenizer.load(TestModels.dir(family)));
    }
  }

  @AfterAll
  static void close() {
    TOKENIZERS.values().forEach(ModelTokenizer::close);
    TOKENIZERS.clear();
  }

  // --- the splitting, with a fake encoder: one id per character, its code ---

  private static JsonNode token(int id, boolean special, boolean normalized, boolean lstrip) {
    ObjectNode t = JSON.createObjectNode();
    t.put("id", id).put("special", special).put("normalized", normalized).put("lstrip", lstrip).put("rstrip", false)
        .put("single_word", false);
    return t;
  }

  private static SegmentCache cache(boolean firstSplitOnly, int entries) {
    Map<String, JsonNode> added = new LinkedHashMap<>();
    added.put("<a>", token(1000, true, false, false));
    added.put("<a><b>", token(1001, true, false, false));  // longer, same start: leftmost-longest wins
    added.put("<b>", token(1002, true, false, false));
    added.put("<n>", token(1003, false, false, false));    // not special: not a split
    added.put("<m>", token(1004, true, true, false));      // normalized: not a split
    added.put("<l>", token(1005, true, false, true));      // lstrip: not a split
    return new SegmentCache(
        new TokenizerFile(added, firstSplitOnly, 1006, 0, 0, null, PreTokenBound.NONE), entries);
  }

  private static final class CountingEncoder implements Function<String, int[]> {
    final List<String> seen = new ArrayList<>();

    @Override
    public int[] apply(String s) {
      seen.add(s);
      return s.chars().toArray();
    }
  }

  private static int[] concat(int[]... parts) {
    int n = 0;
    for (int[] p : parts) {
      n += p.length;
    }
    int[] out = new int[n];
    int at = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  @Test
  void splitsAtSpecialRawTokensLeftmostLongest() {
    SegmentCache cache = cache(false, 16);
    CountingEncoder enc = new CountingEncoder();
    int[] ids = cache.encode("x<a><b>y<a>z<b><n><m><l>w", enc);
    assertArrayEquals(concat("x".chars().toArray(), new int[] {1001}, "y".chars().toArray(), new int[] {1000},
        "z".chars().toArray(), new int[] {1002}, "<n><m><l>w".chars().toArray()), ids);
    assertEquals(List.of("x", "y", "z", "<n><m><l>w"), enc.seen);
  }

  @Test
  void adjacentAndEdgeTokens() {
    SegmentCache cache = cache(false, 16);
    CountingEncoder enc = new CountingEncoder();
    assertArrayEquals(new int[] {1002, 1000, 1001}, cache.encode("<b><a><a><b>", enc));
    assertArrayEquals(new int[] {1001, 1001}, cache.encode("<a><b><a><b>", enc));
    assertEquals(List.of(), enc.seen, "nothing between the tokens to encode");
    assertArrayEquals(new int[0], cache.encode("", enc));
    assertArrayEquals("<a".chars().toArray(), cache.encode("<a", enc), "a partial token is text");
  }

  @Test
  void cachesSegmentsOfAtLeast64Chars() {
    SegmentCache cache = cache(false, 16);
    CountingEncoder enc = new CountingEncoder();
    String longSegment = "L".repeat(SegmentCache.MIN_CACHED_CHARS);
    String shortSegment = "S".repeat(SegmentCache.MIN_CACHED_CHARS - 1);
    String text = longSegment + "<a>" + shortSegment;
    int[] first = cache.encode(text, enc);
    assertEquals(new SegmentCache.Stats(0, 1), cache.stats());
    int[] second = cache.encode(text, enc);
    assertArrayEquals(first, second);
    assertEquals(new SegmentCache.Stats(1, 1), cache.stats());
    assertEquals(List.of(longSegment, shortSegment, shortSegment), enc.seen, "the short one is encoded each time");
  }

  @Test
  void evictsTheLeastRecentlyUsed() {
    SegmentCache cache = cache(false, 2);
    CountingEncoder enc = new CountingEncoder();
    String a = "a".repeat(70);
    String b = "b".repeat(70);
    String c = "c".repeat(70);
    cache.encode(a, enc);
    cache.encode(b, enc);
    cache.encode(a, enc);  // a is now the most recent
    cache.encode(c, enc);  // evicts b
    cache.encode(a, enc);
    cache.encode(b, enc);
    assertEquals(List.of(a, b, c, b), enc.seen);
    assertEquals(new SegmentCache.Stats(2, 4), cache.stats());
  }

  @Test
  void prependSchemeFirstOrNoSplitTokensEncodesWhole() {
    CountingEncoder enc = new CountingEncoder();
    String text = "x<a>y";
    assertArrayEquals(text.chars().toArray(), cache(true, 16).encode(text, enc));
    assertEquals(List.of(text), enc.seen);
    SegmentCache none = new SegmentCache(new TokenizerFile(Map.of(), false, 10, 0, 0, null, PreTokenBound.NONE), 16);
    assertArrayEquals(text.chars().toArray(), none.encode(text, enc));
  }

  // --- exactness with the real tokenizers ---

  private static final Map<String, String[]> SPECIALS = Map.of(
      TestModels.QWEN3, new String[] {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
          "<tool_call>", "<|im_start", "im_end|>"},
      TestModels.LLAMA3, new String[] {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|begin_of_text|>",
          "<|python_tag|>", "<|eom_id|>", "<|start_header", "<|eot_id"},
      TestModels.GEMMA3, new String[] {"<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>", "<start_of_image>",
          "<mask>", "<unused3>", "<start_of_", "end_of_turn>"});

  private static final String[] WORDS = {"user", "assistant", "system", "model", "Hello", " world", "the", "ing",
      "don't", "I'm", "it's", "123", "4567", "3.14", "x_y", "<", ">", "|", "{", "}", "\"json\": true", "def f():",
      "日本語", "中文字符", "한국어", "Привет", "العربية", "😀", "👍🏽", "👨‍👩‍👧", "é", "e\u0301", "ﬁ", "①",
      "\u00a0", "\u3000", "\u200b", "\ufeff"};
  private static final String[] SPACES = {" ", "  ", "   ", "\n", "\n\n", "\n\n\n", "\t", "\t\t", " \n", "\n ",
      "\r\n", "        ", "\n    "};

  private static String piece(Random r, String family) {
    return switch (r.nextInt(10)) {
      case 0, 1 -> SPECIALS.get(family)[r.nextInt(SPECIALS.get(family).length)];
      case 2 -> SPACES[r.nextInt(SPACES.length)];
      case 3 -> longSegment(r);
      case 4 -> String.valueOf((char) (0x20 + r.nextInt(0x5f)));
      default -> WORDS[r.nextInt(WORDS.length)];
    };
  }

  private static String longSegment(Random r) {
    StringBuilder out = new StringBuilder();
    int n = 64 + r.nextInt(200);
    while (out.length() < n) {
      out.append(WORDS[r.nextInt(WORDS.length)]);
      if (r.nextInt(3) == 0) {
        out.append(SPACES[r.nextInt(SPACES.length)]);
      }
    }
    return out.toString();
  }

  private static String randomText(Random r, String family) {
    StringBuilder out = new StringBuilder();
    int pieces = 1 + r.nextInt(30);
    for (int i = 0; i < pieces; i++) {
      out.append(piece(r, family));
    }
    return out.toString();
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.GEMMA3})
  void encodeRenderedEqualsEncodeOnRandomTexts(String family) {
    ModelTokenizer tokenizer = TOKENIZERS.get(family);
    Random r = new Random(20_260_101L + family.hashCode());
    for (int i = 0; i < 200; i++) {
      String text = randomText(r, family);
      int[] expected = tokenizer.encode(text, false);
      assertArrayEquals(expected, tokenizer.encodeRendered(text), () -> family + " case: " + JSON.valueToTree(text));
      assertArrayEquals(expected, tokenizer.encodeRendered(text), () -> family + " again: " + JSON.valueToTree(text));
    }
  }

  /** A chat as the model's template lays it out, turn by turn. */
  private static String turn(String family, String role, String content) {
    return switch (family) {
      case TestModels.QWEN3 -> "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
      case TestModels.LLAMA3 -> "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + content + "<|eot_id|>";
      default -> "<start_of_turn>" + (role.equals("assistant") ? "model" : role) + "\n" + content + "<end_of_turn>\n";
    };
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.GEMMA3})
  void aConversationWithOneMoreTurnHitsTheCache(String family) {
    ModelTokenizer tokenizer = TOKENIZERS.get(family);
    Random r = new Random(7 + family.hashCode());
    StringBuilder chat = new StringBuilder(family.equals(TestModels.LLAMA3) ? "<|begin_of_text|>" : "");
    int longTurns = 0;
    for (int i = 0; i < 6; i++) {
      String content = longSegment(r) + " turn " + i + " " + System.nanoTime();  // unseen by any earlier test
      chat.append(turn(family, i % 2 == 0 ? "user" : "assistant", content));
      longTurns++;
    }
    String before = chat.toString();
    assertArrayEquals(tokenizer.encode(before, false), tokenizer.encodeRendered(before));
    SegmentCache.Stats s0 = tokenizer.cacheStats();
    String after = before + turn(family, "user", longSegment(r) + " new " + System.nanoTime())
        + turn(family, "assistant", "").replaceAll("(<\\|eot_id\\|>|<end_of_turn>\\n|<\\|im_end\\|>\\n)$", "");
    assertArrayEquals(tokenizer.encode(after, false), tokenizer.encodeRendered(after));
    SegmentCache.Stats s1 = tokenizer.cacheStats();
    assertTrue(s1.hits() - s0.hits() >= longTurns, family + ": " + s0 + " -> " + s1);
    assertEquals(1, s1.misses() - s0.misses(), family + ": only the new turn is encoded: " + s0 + " -> " + s1);
  }

  @Test
  void chatTemplatesRenderThroughTheCacheExactly() {
    for (Map.Entry<String, ModelTokenizer> e : TOKENIZERS.entrySet()) {
      ModelTokenizer t = e.getValue();
      List<Map<String, Object>> messages = new ArrayList<>();
      messages.add(Map.of("role", "user", "content", "What is 2+2?\n\n" + "long ".repeat(30)));
      messages.add(Map.of("role", "assistant", "content", "4. " + "日本語😀 ".repeat(20)));
      messages.add(Map.of("role", "user", "content", "Thanks <|im_start|> <start_of_turn> <|eot_id|> \t\t  end"));
      ChatInput input = new ChatInput(messages, null, true, Map.of());
      String text = t.renderChat(input);
      assertArrayEquals(t.encode(text, false), t.encodeChat(input), e.getKey());
    }
  }
}
