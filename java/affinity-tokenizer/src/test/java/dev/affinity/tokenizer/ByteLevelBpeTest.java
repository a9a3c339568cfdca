package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Java byte-level BPE against the Rust tokenizer it stands in for: equal ids on real text (this project's docs and
 * sources, the chat corpus rendered by each family's template) and on random texts built from the pieces where
 * tokenizers differ (contractions in any case, digit runs, every kind of whitespace, combining marks, CJK, kana,
 * Hangul, emoji, added tokens, characters outside the stable ranges, unpaired surrogates); a text it is not sure of
 * goes to the Rust tokenizer, and a text it is sure of is encoded in Java. The merge order and what it refuses are
 * tested on a tokenizer written here.
 */
class ByteLevelBpeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, ModelTokenizer[]> LOADED = new java.util.HashMap<>();

  /** The family's tokenizer with the Java encoder, and without (the Rust tokenizer alone). */
  private static synchronized ModelTokenizer[] pair(String family) {
    return LOADED.computeIfAbsent(family, f -> new ModelTokenizer[] {
        ModelTokenizer.load(TestModels.dir(f), true), ModelTokenizer.load(TestModels.dir(f), false)});
  }

  @AfterAll
  static synchronized void close() {
    LOADED.values().forEach(p -> {
      p[0].close();
      p[1].close();
    });
    LOADED.clear();
  }

  private static Path root() {
    return Path.of(System.getProperty("affinity.root", "../..")).toAbsolutePath().normalize();
  }

  /** This project's docs and native sources: prose, tables, code, as an agent's tool results carry them. */
  private static List<String> realTexts() throws IOException {
    List<String> texts = new ArrayList<>();
    for (String dir : new String[] {"docs", "native/src", "native/include/affinity"}) {
      try (Stream<Path> files = Files.list(root().resolve(dir))) {
        files.filter(Files::isRegularFile).sorted().forEach(f -> {
          try {
            texts.add(Files.readString(f, StandardCharsets.UTF_8));
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        });
      }
    }
    return texts;
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3})
  void realTextEncodesAsTheRustTokenizer(String family) throws IOException {
    ModelTokenizer[] t = pair(family);
    assertTrue(t[0].javaEncoder(), family + " is encoded in Java");
    assertFalse(t[1].javaEncoder());
    long javaBefore = t[0].encoderCounts().java();
    int chars = 0;
    List<String> texts = realTexts();
    for (String text : texts) {
      assertArrayEquals(t[1].encode(text, false), t[0].encode(text, false), family + ": " + text.substring(0, 60));
      chars += text.length();
    }
    assertTrue(chars > 200_000, "a corpus of " + chars + " chars");
    assertTrue(t[0].encoderCounts().java() - javaBefore >= texts.size() * 9L / 10,
        "most of the corpus is encoded in Java: " + t[0].encoderCounts());
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3})
  void renderedChatsEncodeAsTheRustTokenizer(String family) throws IOException {
    ModelTokenizer[] t = pair(family);
    for (String line : Files.readAllLines(Path.of("src/test/resources/chat-corpus.jsonl"))) {
      var c = JSON.readTree(line);
      ChatInput input = OracleParityTest.input(c);
      String text;
      try {
        text = t[1].renderChat(input);
      } catch (TemplateException e) {
        continue;  // a chat the template refuses
      }
      assertArrayEquals(t[1].encode(text, false), t[0].encode(text, false), family + ": " + c.get("name"));
      assertArrayEquals(t[1].encodeChat(input), t[0].encodeChat(input), family + ": " + c.get("name"));
    }
    long javaBefore = t[0].encoderCounts().java();
    String[] prompts = JSON.readValue(Path.of("src/test/resources/prompt-corpus.json").toFile(), String[].class);
    for (String prompt : prompts) {
      assertArrayEquals(t[1].encode(prompt, false), t[0].encode(prompt, false), family + ": " + prompt);
      // a completion prompt: the post-processor's special tokens around it (Llama 3's BOS)
      assertArrayEquals(t[1].encode(prompt, true), t[0].encode(prompt, true), family + ", special tokens: " + prompt);
    }
    assertTrue(t[0].encoderCounts().java() - javaBefore > prompts.length, "with special tokens too, in Java");
  }

  /** Fragments that random texts are built of; those after {@link #STABLE} leave the Java encoder's ranges. */
  private static final String[] FRAGMENTS = {
      "the", " The", "HELLO", "wORLD", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'d", "'x", "'", "don't", "I'M",
      "0", "7", "12", "123", "1234", "98765432", "3.14", "-42", " 1", "x2", "v2.0.1",
      " ", "  ", "    ", "\t", "\n", "\r\n", "\n\n", " \n", "\n ", "\r", "\u000b", "\f", "\u00a0", "\u3000", "\u2028",
      "\u2029", "\u0085", "\u200b", "\u2009 ", "\u0000",
      ".", ",", "!?", "...", "(", ")", "{", "}", "[]", "=>", "->", "::", "//", "/*", "*/", "#", "@", "$", "%", "^", "&&",
      "||", "\\", "\"", "`", "~", "_", "__init__", "-", "--", "==", "+=", "<", ">", "</", "/>",
      "café", "naïve", "Ωmega", "Ελληνικά", "русский", "עברית", "العربية", "ß", "ſ", "İ", "ǅ",
      "你好", "世界", "中文", "日本語", "こんにちは", "カタカナ", "한국어", "，", "。", "「」", "ｆｕｌｌ", "①",
      "\ud83d\ude00", "\ud83c\udf89", "\u2713", "\u2705", "\u274c", "\u2192", "\u00b1", "\u20ac",
      "\u2500\u2502", "\u00e9", "\u00c9",
      // STABLE ends here
      "e\u0301", "\u0301", "\ud83d\udc69\u200d\ud83d\udcbb", "\ud83e\udd16", "\ud83d\ude80", "ﬁ", "\u0870", "\ua7c0", "\ud800", "\udc00",
      "\u9fff", "\u1f00", "\u0e01\u0e32"};
  private static final int STABLE = java.util.Arrays.asList(FRAGMENTS).indexOf("\u00c9") + 1;

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3})
  void randomTextsEncodeAsTheRustTokenizerOrGoToIt(String family) {
    ModelTokenizer[] t = pair(family);
    List<String> added = new ArrayList<>(t[0].addedTokenTexts());
    java.util.Collections.sort(added);
    SplittableRandom rng = new SplittableRandom(family.hashCode());
    int inJava = 0;
    for (int k = 0; k < 3000; k++) {
      boolean stable = k % 2 == 0;
      StringBuilder sb = new StringBuilder();
      int n = 1 + rng.nextInt(40);
      for (int i = 0; i < n; i++) {
        int r = rng.nextInt(20);
        if (r == 0 && !added.isEmpty()) {
          sb.append(added.get(rng.nextInt(added.size())));
        } else if (r == 1) {
          sb.appendCodePoint(rng.nextInt(0x80));
        } else {
          sb.append(FRAGMENTS[rng.nextInt(stable ? STABLE - 1 : FRAGMENTS.length)]);
        }
      }
      String text = sb.toString();
      if (stable) {
        inJava++;
        assertNotNull(t[0].javaEncoded(text), family + ": a text of stable characters is encoded in Java: " + text);
      }
      int[] java = t[0].javaEncoded(text);
      if (java != null) {
        assertArrayEquals(t[1].encode(text, false), java, family + ": " + JSON.valueToTree(text));
      }
    }
    assertTrue(inJava > 1000);
  }

  /** Long runs of one kind (a word of 100k letters, whitespace, digits, punctuation, a blob) encode as Rust's. */
  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3})
  void longRunsEncodeAsTheRustTokenizer(String family) {
    ModelTokenizer[] t = pair(family);
    StringBuilder blob = new StringBuilder();
    SplittableRandom rng = new SplittableRandom(7);
    String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 100_000; i++) {
      blob.append(alphabet.charAt(rng.nextInt(alphabet.length())));
    }
    for (String text : new String[] {"a".repeat(100_000), "ab".repeat(50_000), " ".repeat(100_000),
        " ".repeat(100_000) + "x", "\n".repeat(50_000), "7".repeat(100_000), "=".repeat(100_000), "-+".repeat(50_000),
        "\u4f60".repeat(50_000), blob.toString()}) {
      int[] java = t[0].javaEncoded(text);
      assertNotNull(java, family);
      assertArrayEquals(t[1].encode(text, false), java, family + ": " + text.substring(0, 8) + "...");
    }
  }

  @Test
  void aTokenizerThatIsNotByteLevelIsEncodedByRust() {
    ModelTokenizer gemma = ModelTokenizer.load(TestModels.dir(TestModels.GEMMA3));
    try (gemma) {
      assertFalse(gemma.javaEncoder(), "Gemma 3 is SentencePiece-style BPE with byte fallback");
    }
  }

  /** A byte-level BPE tokenizer.json: every byte, the merges given (lowest rank first), and these added tokens. */
  private static String tokenizerJson(List<String[]> merges, String extraModel, String addedTokens) {
    StringBuilder vocab = new StringBuilder();
    java.util.LinkedHashMap<String, Integer> ids = new java.util.LinkedHashMap<>();
    for (char c : ByteLevelBpe.BYTE_CHARS) {
      ids.put(String.valueOf(c), ids.size());
    }
    for (String[] m : merges) {
      ids.putIfAbsent(m[0] + m[1], ids.size());
    }
    ids.forEach((k, v) -> vocab.append(vocab.length() == 0 ? "" : ",").append(TinyTokenizer.quote(k)).append(':')
        .append(v));
    StringBuilder m = new StringBuilder();
    for (String[] pair : merges) {
      m.append(m.length() == 0 ? "" : ",").append(TinyTokenizer.quote(pair[0] + " " + pair[1]));
    }
    return "{\"version\":\"1.0\",\"added_tokens\":[" + addedTokens + "],\"normalizer\":null,"
        + "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        + "\" ?\\\\p{L}+|\\\\p{N}|\\\\s+|[^\\\\s\\\\p{L}\\\\p{N}]+\"},\"behavior\":\"Isolated\",\"invert\":false},"
        + "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]},"
        + "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false},"
        + "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"fuse_unk\":false,\"byte_fallback\":false"
        + extraModel + ",\"vocab\":{" + vocab + "},\"merges\":[" + m + "]}}";
  }

  private static Path dir(Path parent, String name, String json) throws IOException {
    Path d = Files.createDirectories(parent.resolve(name));
    Files.writeString(d.resolve("tokenizer.json"), json);
    return d;
  }

  @Test
  void theLowestRankMergesFirstThenTheLeftmost(@TempDir Path tmp) throws IOException {
    // "abc": b+c (rank 0) before a+b (rank 1), then a+bc; "aaaa": a+a leftmost first, then aa+aa
    List<String[]> merges = List.<String[]>of(new String[] {"b", "c"}, new String[] {"a", "b"}, new String[] {"a", "bc"},
        new String[] {"a", "a"}, new String[] {"aa", "aa"}, new String[] {"Ġ", "a"});
    Path d = dir(tmp, "t", tokenizerJson(merges, "", ""));
    try (ModelTokenizer java = ModelTokenizer.load(d, true); ModelTokenizer rust = ModelTokenizer.load(d, false)) {
      assertTrue(java.javaEncoder());
      int abc = 256 + 2;
      int aaaa = 256 + 4;
      int aa = 256 + 3;
      assertArrayEquals(new int[] {abc}, java.encode("abc", false));
      assertArrayEquals(new int[] {aaaa, aa}, java.encode("aaaaaa", false));
      assertArrayEquals(new int[] {aaaa, 'a'}, java.encode("aaaaa", false));
      for (String s : new String[] {"abc", "aaaaaa", "aaaaa", "ab abc  a1b", "bcabca aab", " a aa aaa", "ä"}) {
        assertArrayEquals(rust.encode(s, false), java.encode(s, false), s);
      }
    }
  }

  @Test
  void ignoreMergesTakesAWordThatIsAToken(@TempDir Path tmp) throws IOException {
    // "abc" is a token, but the merges alone make a+b first and never ab+c: with ignore_merges the word is one token
    List<String[]> merges = List.<String[]>of(new String[] {"a", "b"}, new String[] {"b", "c"});
    String json = tokenizerJson(merges, ",\"ignore_merges\":true", "").replace("\"vocab\":{", "\"vocab\":{\"abc\":300,");
    Path d = dir(tmp, "t", json);
    try (ModelTokenizer java = ModelTokenizer.load(d, true); ModelTokenizer rust = ModelTokenizer.load(d, false)) {
      assertTrue(java.javaEncoder());
      assertArrayEquals(new int[] {300}, java.encode("abc", false));
      assertArrayEquals(rust.encode("abc abcd", false), java.encode("abc abcd", false));
    }
  }

  @Test
  void addedTokensAreCutOutLeftmostLongest(@TempDir Path tmp) throws IOException {
    String added = "{\"id\":257,\"content\":\"<a>\",\"special\":true,\"normalized\":false,\"lstrip\":false,"
        + "\"rstrip\":false,\"single_word\":false},{\"id\":258,\"content\":\"<a><b>\",\"special\":false,"
        + "\"normalized\":false,\"lstrip\":false,\"rstrip\":false,\"single_word\":false},{\"id\":259,\"content\":"
        + "\"b>x\",\"special\":false,\"normalized\":true,\"lstrip\":false,\"rstrip\":false,\"single_word\":false}";
    Path d = dir(tmp, "t", tokenizerJson(List.<String[]>of(new String[] {"a", "b"}), "", added));
    try (ModelTokenizer java = ModelTokenizer.load(d, true); ModelTokenizer rust = ModelTokenizer.load(d, false)) {
      assertTrue(java.javaEncoder());
      for (String s : new String[] {"<a><b>x", "x<a>b>x", "<a<a><b>>", "ab>xab", "<a><a><b>x<a>"}) {
        assertArrayEquals(rust.encode(s, false), java.encode(s, false), s);
      }
      assertEquals(258, java.encode("<a><b>", false)[0]);
    }
    // ids the crate would not give (it numbers added tokens after the vocabulary): the Java encoder is not used
    Path gap = dir(tmp, "gap", tokenizerJson(List.<String[]>of(new String[] {"a", "b"}), "", added.replace("257", "400")));
    try (ModelTokenizer t = ModelTokenizer.load(gap)) {
      assertFalse(t.javaEncoder());
    }
  }

  /** A regex whose repetition recurses in Java's engine overflows the stack on a long piece: Rust encodes that text. */
  @Test
  void aRegexThatOverflowsJavasStackLeavesTheTextToRust(@TempDir Path tmp) throws IOException {
    String json = tokenizerJson(List.<String[]>of(new String[] {"a", "b"}), "", "")
        .replace("\" ?\\\\p{L}+|\\\\p{N}|\\\\s+|[^\\\\s\\\\p{L}\\\\p{N}]+\"", "\"(?:a|b)+|[^ab]+\"");
    assertTrue(json.contains("(?:a|b)+"), json.substring(0, 300));
    Path d = dir(tmp, "t", json);
    try (ModelTokenizer java = ModelTokenizer.load(d, true); ModelTokenizer rust = ModelTokenizer.load(d, false)) {
      assertTrue(java.javaEncoder());
      assertArrayEquals(rust.encode("ab cab", false), java.encode("ab cab", false));
      String long_ = "ab".repeat(200_000);
      assertNull(java.javaEncoded(long_), "Java's regex engine recursed too deep");
      long rustBefore = java.encoderCounts().rust();
      assertArrayEquals(rust.encode(long_, false), java.encode(long_, false));
      assertEquals(rustBefore + 1, java.encoderCounts().rust());
    }
  }

  @Test
  void whatItCannotEncodeExactlyGoesToRust(@TempDir Path tmp) throws IOException {
    String base = tokenizerJson(List.<String[]>of(new String[] {"a", "b"}), "", "");
    String lstrip = "{\"id\":400,\"content\":\"<a>\",\"special\":true,\"normalized\":false,\"lstrip\":true,"
        + "\"rstrip\":false,\"single_word\":false}";
    Map<String, String> refused = Map.of(
        "dropout", base.replace("\"dropout\":null", "\"dropout\":0.1"),
        "byte fallback", base.replace("\"byte_fallback\":false", "\"byte_fallback\":true"),
        "a suffix", base.replace("\"fuse_unk\":false", "\"fuse_unk\":false,\"end_of_word_suffix\":\"</w>\""),
        "lstrip", tokenizerJson(List.<String[]>of(new String[] {"a", "b"}), "", lstrip),
        "a lowercasing normalizer", base.replace("\"normalizer\":null", "\"normalizer\":{\"type\":\"Lowercase\"}"),
        "a line anchor in the regex", base.replace("\\\\s+|", "^\\\\s+|"),
        "a prefix space", base.replace("\"add_prefix_space\":false", "\"add_prefix_space\":true"));
    for (Map.Entry<String, String> e : refused.entrySet()) {
      Path d = dir(tmp, e.getKey().replace(' ', '-'), e.getValue());
      try (ModelTokenizer t = ModelTokenizer.load(d); ModelTokenizer rust = ModelTokenizer.load(d, false)) {
        assertFalse(t.javaEncoder(), e.getKey());
        if (!e.getKey().equals("dropout")) {  // random
          assertArrayEquals(rust.encode("ab ab", false), t.encode("ab ab", false), e.getKey() + ": encoded by Rust");
        }
      }
    }
  }

  @Test
  void postProcessorsAddTheirSpecialTokensAroundTheText() throws IOException {
    assertArrayEquals(new int[0], ByteLevelBpe.specialAffixes(null)[0]);
    assertArrayEquals(new int[0], ByteLevelBpe.specialAffixes(JSON.readTree("{\"type\":\"ByteLevel\"}"))[1]);
    String template = "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\"}},"
        + "{\"Sequence\":{\"id\":\"A\"}},{\"SpecialToken\":{\"id\":\"</s>\"}}],\"special_tokens\":{"
        + "\"<s>\":{\"ids\":[1]},\"</s>\":{\"ids\":[2]}}}";
    int[][] affixes = ByteLevelBpe.specialAffixes(JSON.readTree(
        "{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\"}," + template + "]}"));
    assertArrayEquals(new int[] {1}, affixes[0]);
    assertArrayEquals(new int[] {2}, affixes[1]);
    assertNull(ByteLevelBpe.specialAffixes(JSON.readTree("{\"type\":\"RobertaProcessing\"}")));
    assertNull(ByteLevelBpe.specialAffixes(JSON.readTree(
        "{\"type\":\"Sequence\",\"processors\":[" + template + "," + template + "]}")), "two templates");
    assertNull(ByteLevelBpe.specialAffixes(JSON.readTree(template.replace("\"ids\":[2]", "\"ids\":[]"))));
  }

  @Test
  void regexesJavaReadsAlikeAreAcceptedOthersNot() {
    assertNotNull(ByteLevelBpe.javaRegex("(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|\\s+(?!\\S)|\\s+"));
    assertNotNull(ByteLevelBpe.javaRegex("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[\\p{L}\\p{M}]+"));
    for (String bad : new String[] {"^a", "a$", "a.b", "\\w+", "\\bx", "\\h", "[a&&b]", "[a[b]]", "(?m:a)",
        "(?<n>a)", "\\p{Alpha}", "\\p{Greek}", "[abc", "a\\"}) {
      assertNull(ByteLevelBpe.javaRegex(bad), bad);
    }
  }

  @Test
  void onlyCharactersOfStableRangesAreKnown() {
    assertTrue(ByteLevelBpe.knownCharacters("plain ASCII, café, русский, 你好, 한국어, ｆｕｌｌ \ud83d\ude00 \u2192"));
    for (String s : new String[] {"\u0870", "\ud83e\udd16", "\ud800", "x\udc00", "\u9fff", "\ua7c0", "\u0378"}) {
      assertFalse(ByteLevelBpe.knownCharacters(s), s);
    }
  }
}
