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
 * {@link PromptPrefixes}: a conversation's next prompt reuses the ids its last one shares with it, and the ids are
 * always the whole encoding's. With a fake encoder (what is reused, the split-token rule at the first difference, the
 * budget), then with the real Qwen3, Llama 3.1, DeepSeek V3 and Gemma 3 tokenizers: random texts evolving turn by
 * turn (appended, cut back and rewritten, edited in the middle, next to and inside split tokens), and chats rendered
 * by each family's template growing turn by turn (Qwen3 drops earlier turns' reasoning; tool calls and results).
 */
class PromptPrefixesTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<String> FAMILIES =
      List.of(TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3);
  private static final Map<String, ModelTokenizer> TOKENIZERS = new LinkedHashMap<>();

  @BeforeAll
  static void load() {
    for (String family : FAMILIES) {
      TOKENIZERS.put(family, ModelTokenizer.load(TestModels.dir(family)));
    }
  }

  @AfterAll
  static void close() {
    TOKENIZERS.values().forEach(ModelTokenizer::close);
    TOKENIZERS.clear();
  }

  // --- with a fake encoder: one id per character, its code; split tokens <a> (1000), <a><b> (1001), <b> (1002) ---

  private static SegmentCache cache() {
    Map<String, JsonNode> added = new LinkedHashMap<>();
    added.put("<a>", token(1000));
    added.put("<a><b>", token(1001));
    added.put("<b>", token(1002));
    return new SegmentCache(new TokenizerFile(added, false, 1003, 0, 0, null, PreTokenBound.NONE), 0);
  }

  private static JsonNode token(int id) {
    ObjectNode t = JSON.createObjectNode();
    t.put("id", id).put("special", true).put("normalized", false).put("lstrip", false).put("rstrip", false)
        .put("single_word", false);
    return t;
  }

  private static final class Recording implements Function<String, int[]> {
    final List<String> seen = new ArrayList<>();

    @Override
    public int[] apply(String s) {
      seen.add(s);
      return s.chars().toArray();
    }
  }

  private static int[] whole(SegmentCache cache, String text) {
    return cache.encode(text, s -> s.chars().toArray());
  }

  @Test
  void aNextTurnEncodesOnlyFromTheLastSplitTokenBeforeTheDifference() {
    SegmentCache cache = cache();
    PromptPrefixes prefixes = new PromptPrefixes(1 << 20);
    Recording enc = new Recording();
    String first = "system prompt<a>user: hi<b>assistant:";
    assertArrayEquals(whole(cache, first), prefixes.encode("c", null, first, cache, enc));
    assertEquals(List.of("system prompt", "user: hi", "assistant:"), enc.seen);
    enc.seen.clear();
    String second = first + " hello<a>user: more<b>assistant:";
    assertArrayEquals(whole(cache, second), prefixes.encode("c", null, second, cache, enc));
    // the first difference is at the end of the first text; "<b>" starts 13 chars before it (>= 6, the longest
    // split token), so everything before it is reused and the scan starts again at "<b>"
    assertEquals(List.of("assistant: hello", "user: more", "assistant:"), enc.seen);
    PromptPrefixes.Stats s = prefixes.stats();
    assertEquals(1, s.reusedTurns());
    assertEquals(1, s.wholeTurns());
    assertEquals(13 + 1 + 8, s.reusedTokens(), "the ids of 'system prompt<a>user: hi'");
    assertEquals(1, s.entries());
  }

  @Test
  void aSplitTokenWithinReachOfTheDifferenceIsEncodedAgain() {
    SegmentCache cache = cache();
    PromptPrefixes prefixes = new PromptPrefixes(1 << 20);
    String first = "x".repeat(100) + "<a>tail";
    prefixes.encode("c", null, first, cache, new Recording());
    // "<a>" followed by "<b>" is one token (1001) in the new text: the difference is 3 chars after "<a>" starts,
    // within the longest token's 6, so "<a>" is not reused as it was
    String second = "x".repeat(100) + "<a><b>tail";
    int[] ids = prefixes.encode("c", null, second, cache, new Recording());
    assertArrayEquals(whole(cache, second), ids);
    assertTrue(java.util.Arrays.stream(ids).anyMatch(id -> id == 1001));
    String third = "x".repeat(100) + "<a>";
    assertArrayEquals(whole(cache, third), prefixes.encode("c", null, third, cache, new Recording()));
  }

  @Test
  void theSamePromptAgainAndASubAgentsFirstTurnReuse() {
    SegmentCache cache = cache();
    PromptPrefixes prefixes = new PromptPrefixes(1 << 20);
    String parent = "tools and system".repeat(10) + "<a>parent asks<b>";
    prefixes.encode("parent", null, parent, cache, new Recording());
    Recording enc = new Recording();
    assertArrayEquals(whole(cache, parent), prefixes.encode("parent", null, parent, cache, enc));
    assertEquals(List.of(), enc.seen, "a retry of the same prompt encodes nothing");
    // the first difference is 6 chars after "<a>" (the longest split token's length): the ids before "<a>" are reused
    String child = "tools and system".repeat(10) + "<a>parent's sub-agent task<b>";
    assertArrayEquals(whole(cache, child), prefixes.encode("child", "parent", child, cache, enc));
    assertEquals(List.of("parent's sub-agent task"), enc.seen, "a sub-agent starts from its parent's prompt");
    assertArrayEquals(whole(cache, child), prefixes.encode(null, null, child, cache, new Recording()), "no key");
    assertEquals(2, prefixes.stats().entries());
  }

  @Test
  void theBudgetBoundsWhatIsKept() {
    SegmentCache cache = cache();
    String text = "y".repeat(1000) + "<a>" + "z".repeat(1000);
    PromptPrefixes none = new PromptPrefixes(0);
    assertArrayEquals(whole(cache, text), none.encode("c", null, text, cache, new Recording()));
    assertEquals(0, none.stats().entries());
    PromptPrefixes small = new PromptPrefixes(30_000);  // about three such conversations
    for (int i = 0; i < 10; i++) {
      small.encode("c" + i, null, text + i, cache, new Recording());
      assertTrue(small.stats().bytes() <= 30_000, "bytes " + small.stats().bytes());
    }
    PromptPrefixes.Stats s = small.stats();
    assertTrue(s.entries() >= 1 && s.entries() < 10, "entries " + s.entries());
    assertEquals(10 - s.entries(), s.evictions());
    Recording enc = new Recording();
    small.encode("c9", null, text + "9!", cache, enc);
    assertEquals(List.of("z".repeat(1000) + "9!"), enc.seen, "the most recent conversation is still kept");
    PromptPrefixes tiny = new PromptPrefixes(100);
    tiny.encode("c", null, text, cache, new Recording());
    assertEquals(0, tiny.stats().entries(), "a conversation larger than the budget is not kept");
    small.forget("c9");
    assertEquals(s.entries() - 1, small.stats().entries());
  }

  @Test
  void aTokenizerThatEncodesWholeNeverReuses() {
    SegmentCache whole = new SegmentCache(new TokenizerFile(Map.of(), false, 10, 0, 0, null, PreTokenBound.NONE), 0);
    PromptPrefixes prefixes = new PromptPrefixes(1 << 20);
    Recording enc = new Recording();
    prefixes.encode("c", null, "abc", whole, enc);
    prefixes.encode("c", null, "abcd", whole, enc);
    assertEquals(List.of("abc", "abcd"), enc.seen);
    assertEquals(0, prefixes.stats().entries());
  }

  @Test
  void mismatchFindsTheFirstDifference() {
    assertEquals(0, PromptPrefixes.mismatch("", "abc"));
    assertEquals(3, PromptPrefixes.mismatch("abc", "abcd"));
    String a = "q".repeat(5000);
    assertEquals(5000, PromptPrefixes.mismatch(a, a));
    assertEquals(1234, PromptPrefixes.mismatch(a, a.substring(0, 1234) + "r" + a.substring(1235)));
    assertEquals(4999, PromptPrefixes.mismatch(a, a.substring(0, 4999) + "日"));
    // around the comparison's chunks, with a text of one byte a char against one of two
    String b = "ab日".repeat(4000);
    for (int at : new int[] {0, 1, 4095, 4096, 4097, 8191, 8192, 11999}) {
      String changed = b.substring(0, at) + (b.charAt(at) == 'x' ? 'y' : 'x') + b.substring(at + 1);
      assertEquals(at, PromptPrefixes.mismatch(b, changed), "at " + at);
      assertEquals(at, PromptPrefixes.mismatch(changed, b), "at " + at);
    }
    String latin = "z".repeat(9000);
    assertEquals(8500, PromptPrefixes.mismatch(latin, "z".repeat(8500) + "日" + "z".repeat(499)));
    assertEquals(9000, PromptPrefixes.mismatch(latin, latin + "日"));
    // from a point known equal, to an end: a difference before the start is not looked for
    assertEquals(8500, PromptPrefixes.mismatch(latin, "z".repeat(8500) + "日" + "z".repeat(499), 4097, 9000));
    assertEquals(9000, PromptPrefixes.mismatch(latin, "y" + latin, 5000, 9000));
    assertEquals(7000, PromptPrefixes.mismatch(latin, latin, 100, 7000));
    assertEquals(9000, PromptPrefixes.mismatch(latin, latin, 12000, Integer.MAX_VALUE));
    for (int at : new int[] {4096, 4097, 8191, 11999}) {
      String changed = b.substring(0, at) + (b.charAt(at) == 'x' ? 'y' : 'x') + b.substring(at + 1);
      assertEquals(at, PromptPrefixes.mismatch(b, changed, at - 1, Integer.MAX_VALUE), "at " + at);
      assertEquals(at, PromptPrefixes.mismatch(b, changed, at, Integer.MAX_VALUE), "at " + at);
    }
  }

  // --- exactness with the real tokenizers ---

  private static final String[] WORDS = {"user", "assistant", "system", "model", "Hello", " world", "the", "ing",
      "don't", "I'm", "123", "4567", "3.14", "x_y", "<", ">", "|", "{", "}", "\"json\": true", "def f():", "日本語",
      "中文字符", "Привет", "😀", "👨‍👩‍👧", "é", "e\u0301", "ﬁ", "\u00a0", "\u200b", "<|", "|>", "<｜", "｜>", "▁"};
  private static final String[] SPACES = {" ", "  ", "\n", "\n\n", "\t", " \n", "\n ", "\r\n", "    "};

  private static List<String> specials(ModelTokenizer t) {
    List<String> out = new ArrayList<>();
    for (String s : t.specialTokens().values()) {
      if (s != null && !s.isEmpty()) {
        out.add(s);
      }
    }
    for (String s : List.copyOf(out)) {
      if (s.length() > 3) {
        out.add(s.substring(0, s.length() / 2));  // half a token: it must not be taken for one
        out.add(s.substring(s.length() / 2));
      }
    }
    return out;
  }

  private static String piece(Random r, List<String> specials) {
    return switch (r.nextInt(10)) {
      case 0, 1, 2 -> specials.get(r.nextInt(specials.size()));
      case 3 -> SPACES[r.nextInt(SPACES.length)];
      case 4 -> {
        StringBuilder out = new StringBuilder();
        while (out.length() < 64 + r.nextInt(200)) {
          out.append(WORDS[r.nextInt(WORDS.length)]).append(r.nextInt(3) == 0 ? SPACES[r.nextInt(SPACES.length)] : "");
        }
        yield out.toString();
      }
      default -> WORDS[r.nextInt(WORDS.length)];
    };
  }

  private static String pieces(Random r, List<String> specials, int n) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) {
      out.append(piece(r, specials));
    }
    return out.toString();
  }

  /** A next turn: appended to, cut back and rewritten, edited in the middle, or the same again. */
  private static String next(Random r, String prev, List<String> specials) {
    int at = prev.isEmpty() ? 0 : r.nextInt(prev.length() + 1);
    if (at > 0 && at < prev.length() && Character.isLowSurrogate(prev.charAt(at))) {
      at--;  // never between the halves of a pair: admission refuses lone surrogates (a 400) before tokenizing
    }
    return switch (r.nextInt(8)) {
      case 0, 1, 2, 3 -> prev + pieces(r, specials, 1 + r.nextInt(8));
      case 4, 5 -> prev.substring(0, at) + pieces(r, specials, 1 + r.nextInt(8));
      case 6 -> prev.substring(0, at) + pieces(r, specials, 1 + r.nextInt(2)) + prev.substring(at);
      default -> prev;
    };
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void randomTextsTurnByTurnGetTheWholeEncodingsIds(String family) {
    ModelTokenizer t = TOKENIZERS.get(family);
    List<String> specials = specials(t);
    PromptPrefixes prefixes = new PromptPrefixes(64L << 20);
    for (int seed = 0; seed < 40; seed++) {
      Random r = new Random(seed * 31L + family.hashCode());
      String text = pieces(r, specials, 1 + r.nextInt(20));
      for (int turn = 0; turn < 12; turn++) {
        String key = "c" + seed;
        assertArrayEquals(t.encode(text, false), t.encodeRendered(text, prefixes, key, null),
            family + " seed " + seed + " turn " + turn + ": " + text);
        text = next(r, text, specials);
      }
    }
    assertTrue(prefixes.stats().reusedTokens() > 0, family + ": " + prefixes.stats());
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void chatsRenderedTurnByTurnGetTheWholeEncodingsIds(String family) {
    ModelTokenizer t = TOKENIZERS.get(family);
    PromptPrefixes prefixes = new PromptPrefixes(64L << 20);
    Random r = new Random(family.hashCode());
    List<Map<String, Object>> messages = new ArrayList<>();
    messages.add(Map.of("role", "system", "content", "You are a coding agent.\n" + words(r, 300)));
    List<Object> tools = List.of(Map.of("type", "function", "function", Map.of("name", "read_file",
        "description", "Reads a file", "parameters", Map.of("type", "object", "properties",
            Map.of("path", Map.of("type", "string")), "required", List.of("path")))));
    for (int turn = 0; turn < 10; turn++) {
      messages.add(Map.of("role", "user", "content", "step " + turn + ": " + words(r, 40)));
      check(t, prefixes, new ChatInput(List.copyOf(messages), tools, true, Map.of()), family, turn);
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("role", "assistant");
      // reasoning in the answer: Qwen3's template keeps it for the last turn and drops it from earlier ones
      answer.put("content", "<think>\n" + words(r, 30) + "\n</think>\n\n" + words(r, 30));
      boolean withTools = !family.equals(TestModels.GEMMA3);  // Gemma 3's template takes alternating user / model turns
      if (withTools && turn % 3 == 1) {
        answer.put("tool_calls", List.of(Map.of("id", "call" + turn, "type", "function", "function",
            Map.of("name", "read_file", "arguments", Map.of("path", "src/f" + turn + ".java")))));
      }
      messages.add(answer);
      if (withTools && turn % 3 == 1) {
        messages.add(Map.of("role", "tool", "tool_call_id", "call" + turn, "content", words(r, 200)));
      }
      check(t, prefixes, new ChatInput(List.copyOf(messages), tools, false, Map.of()), family, turn);
    }
    // a sub-agent: the parent's system prompt and tools, its own task
    List<Map<String, Object>> sub = List.of(messages.get(0), Map.of("role", "user", "content", "sub-task: " + words(r, 50)));
    String rendered = t.renderChat(new ChatInput(sub, tools, true, Map.of()));
    assertArrayEquals(t.encode(rendered, false), t.encodeRendered(rendered, prefixes, "sub", "chat"), family);
    PromptPrefixes.Stats s = prefixes.stats();
    assertTrue(s.reusedTokens() > s.encodedTokens(), family + ": most ids come from the kept prefix: " + s);
  }

  private static void check(ModelTokenizer t, PromptPrefixes prefixes, ChatInput input, String family, int turn) {
    String rendered = t.renderChat(input);
    assertArrayEquals(t.encode(rendered, false), t.encodeRendered(rendered, prefixes, "chat", null),
        family + " turn " + turn);
  }

  private static String words(Random r, int n) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) {
      out.append(WORDS[r.nextInt(WORDS.length)]).append(i % 15 == 14 ? "\n" : " ");
    }
    return out.toString();
  }
}
