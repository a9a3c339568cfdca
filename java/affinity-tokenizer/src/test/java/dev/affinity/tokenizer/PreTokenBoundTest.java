package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.PromptTokenizer;
import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The pre-tokenizer bound ({@link ModelTokenizer#minTokens}) is a true lower bound on the real tokenizers' counts,
 * for a text alone and inside the text around it (a template's), on the dense and random texts of
 * {@link TokenBoundTest} and on prose, code and texts full of added tokens; and it refuses a chat of 20,000 short
 * messages (5 MB) at admission's size check, which tokenizes nothing, where the characters-per-token bound cannot.
 */
class PreTokenBoundTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final ProtocolCodec CODEC = new ProtocolCodec();

  static List<String> texts(long seed) {
    List<String> texts = new java.util.ArrayList<>(TokenBoundTest.texts(seed));
    texts.add("The quick brown fox jumps over the lazy dog. ".repeat(2_000));
    texts.add("for (int i = 0; i < n; i++) {\n  sum += a[i] * b[i];\n}\n".repeat(500));
    texts.add("a<|im_start|>b<|im_end|> c <|endoftext|>\n".repeat(400));
    texts.add("<|reserved_special_token_5|> x<|begin_of_text|>y ".repeat(400));
    texts.add("\u00a0\u2003word\u3000字\u200b ".repeat(1_000));
    texts.add("It's you're we'LL THEY'VE 12345 3.14159 ".repeat(1_000));
    return texts;
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void noTextHasFewerTokensThanItsPieces(String family) {
    Random random = new Random(family.hashCode());
    String[] around = {"", "\n", " ", "<|im_start|>user\n", "<|start_header_id|>user<|end_header_id|>\n\n", "x", ":",
        "<|im_end|>\n", "'", "1"};
    try (ModelTokenizer t = ModelTokenizer.load(TestModels.dir(family))) {
      for (String text : texts(family.hashCode())) {
        long bound = t.minTokens(List.of(text));
        int alone = t.encode(text, false).length;
        assertTrue(bound <= alone, family + ": " + bound + " pieces > " + alone + " tokens of " + text.substring(0, 20));
        String embedded = around[random.nextInt(around.length)] + text + around[random.nextInt(around.length)];
        int within = t.encode(embedded, false).length;
        assertTrue(bound <= within, family + ": " + bound + " pieces > " + within + " tokens of the embedded "
            + text.substring(0, 20));
      }
    }
  }

  @Test
  void theByteLevelModelsOfTheTestsHaveABoundAndGemmasMetaspaceHasNone() {
    String prose = "The quick brown fox jumps over the lazy dog. ".repeat(100);
    for (String family : List.of(TestModels.QWEN3, TestModels.LLAMA3)) {
      try (ModelTokenizer t = ModelTokenizer.load(TestModels.dir(family))) {
        assertTrue(t.minTokens(List.of(prose)) >= 900, family + ": " + t.minTokens(List.of(prose)));
      }
    }
    try (ModelTokenizer deepseek = ModelTokenizer.load(TestModels.dir(TestModels.DEEPSEEK_V3))) {
      // its first cut isolates digits only (its word cut comes third): a bound on numbers, none on prose
      assertEquals(0, deepseek.minTokens(List.of(prose)));
      assertTrue(deepseek.minTokens(List.of("12 345 6789 ".repeat(100))) >= 500);
    }
    try (ModelTokenizer gemma = ModelTokenizer.load(TestModels.dir(TestModels.GEMMA3))) {
      assertEquals(0, gemma.minTokens(List.of(prose)), "a Replace normalizer and no byte-level pre-tokenizer");
    }
    try (ModelTokenizer qwen = ModelTokenizer.load(TestModels.dir(TestModels.QWEN3))) {
      assertEquals(0, qwen.minTokens(List.of(prose, "e\u0301")), "NFC would compose a text not in its form");
    }
  }

  @Test
  void onlyARegexSplitBeforeAByteLevelPreTokenizerGivesABound() throws Exception {
    Set<String> none = Set.of();
    assertTrue(PreTokenBound.of(JSON.readTree("{\"type\": \"ByteLevel\", \"use_regex\": true}"), null, none).bounds());
    assertTrue(!PreTokenBound.of(JSON.readTree("{\"type\": \"ByteLevel\", \"use_regex\": false}"), null, none).bounds());
    assertTrue(!PreTokenBound.of(JSON.readTree("{\"type\": \"Metaspace\"}"), null, none).bounds());
    String split = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"behavior\": \"%s\", \"invert\": false}";
    String seq = "{\"type\": \"Sequence\", \"pretokenizers\": [" + split + ", {\"type\": \"ByteLevel\", \"use_regex\": false}]}";
    assertTrue(PreTokenBound.of(JSON.readTree(seq.formatted("Isolated")), null, none).bounds());
    assertTrue(!PreTokenBound.of(JSON.readTree(seq.formatted("MergedWithPrevious")), null, none).bounds());
    assertTrue(!PreTokenBound.of(JSON.readTree(seq.formatted("Isolated")), JSON.readTree("{\"type\": \"Lowercase\"}"),
        none).bounds(), "a normalizer that changes what the regex sees");
    assertTrue(!PreTokenBound.of(JSON.readTree("{\"type\": \"Sequence\", \"pretokenizers\": ["
        + split.formatted("Isolated") + "]}"), null, none).bounds(), "no byte-level model: characters may be dropped");
    for (String oniguruma : new String[] {"\\\\w+", "^\\\\s", "a.b", "[a[b]]"}) {  // read otherwise by Java
      assertTrue(!PreTokenBound.of(JSON.readTree(seq.replace("\\\\s+", oniguruma).formatted("Isolated")), null, none)
          .bounds(), oniguruma);
    }
    PreTokenBound words = PreTokenBound.of(JSON.readTree(seq.formatted("Isolated")), null, Set.of("<sep>"));
    assertEquals(3, words.pieces("a b"), "two words and the space between");
    assertEquals(5, words.pieces("a b c"));
    assertEquals(2, words.pieces("a b<sep>c"), "an added token ends a piece; two are given up beside it");
  }

  static ChatCompletionRequest chat(int messages, int chars) {
    ObjectNode body = JSON.createObjectNode().put("model", "m");
    ArrayNode list = body.putArray("messages");
    Random random = new Random(1);
    String[] words = {"the", "agent", "reads", "a", "file", "and", "writes", "tests", "for", "it", "then", "runs"};
    for (int i = 0; i < messages; i++) {
      StringBuilder text = new StringBuilder();
      while (text.length() < chars) {
        text.append(words[random.nextInt(words.length)]).append(' ');
      }
      list.addObject().put("role", i % 2 == 0 ? "user" : "assistant").put("content", text.toString());
    }
    return CODEC.parseChatCompletionRequest(body.toString().getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aChatOfTwentyThousandShortMessagesIsRefusedBeforeItIsTokenized() {
    // issue 43: 5 MB in 20,000 messages was tokenized for 8-23 s before its 400; the size check tokenizes nothing
    ChatCompletionRequest huge = chat(20_000, 250);
    PromptLimit limit = new PromptLimit(262_144, "affinity.max_prompt_tokens");
    try (ModelTokenizer t = ModelTokenizer.load(TestModels.dir(TestModels.QWEN3))) {
      PromptTokenizer frontend = new ModelPromptTokenizer(new PromptRenderer(t), () -> true);
      long chars = PromptTokenizer.textChars(huge);
      assertTrue(chars > 5_000_000 && chars < 262_144L * frontend.maxCharsPerToken(PromptTokenizer.keptTexts(huge)),
          "the characters-per-token bound alone cannot refuse it: " + chars);
      ProtocolException e = assertThrows(ProtocolException.class, () -> limit.checkSize(huge, frontend));
      assertEquals(400, e.status());
      assertEquals("messages", e.field());
      assertTrue(e.detail().contains("pre-tokenizer"), e.detail());
      ChatCompletionRequest fits = chat(200, 250);  // about 12,000 tokens
      limit.checkSize(fits, frontend);
      assertTrue(frontend.tokenize(fits).length < 262_144);
    }
  }
}
