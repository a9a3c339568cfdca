package dev.affinity.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A lower bound on how many tokens a text encodes to, from the tokenizer's pre-tokenizer alone: a Hugging Face
 * tokenizer encodes each pre-token on its own, and a byte-level model spells every byte, so every non-empty pre-token
 * is at least one token. Counting the pieces of the pre-tokenizer's first split (a regex, as TensorRT-LLM's models
 * ship: Qwen, Llama 3, DeepSeek; or GPT-2's byte-level regex) takes a regex pass, no model: admission refuses a prompt
 * of a million words in a fraction of a second instead of tokenizing it for seconds. Later splits only cut pieces
 * further, so the first one's count is a bound. An added token in the text (the tokenizer cuts it out first) ends a
 * piece: its piece counts nothing, and two pieces around it (its lstrip/rstrip may take the whitespace beside it) are
 * given up. Only for tokenizers where this holds: a byte-level pre-tokenizer, and no normalizer, or a composing one
 * (NFC, NFKC) on texts already in its form; otherwise {@link #NONE}.
 */
final class PreTokenBound {
  /** No bound: every text counts 0. */
  static final PreTokenBound NONE = new PreTokenBound(null, Set.of());

  /** GPT-2's pre-tokenizer regex, which a {@code ByteLevel} pre-tokenizer with {@code use_regex: true} applies. */
  static final String GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

  private final Pattern split;
  private final TokenMatcher addedTokens;

  private PreTokenBound(Pattern split, Set<String> added) {
    this.split = split;
    java.util.Map<String, Integer> tokens = new java.util.HashMap<>();
    added.forEach(t -> tokens.put(t, 0));
    this.addedTokens = new TokenMatcher(tokens);
  }

  /**
   * The bound of a tokenizer.json's {@code pre_tokenizer} and {@code normalizer} with these added tokens' contents;
   * {@link #NONE} where the rule above does not hold or the regex is not one Java reads alike.
   */
  static PreTokenBound of(JsonNode preTokenizer, JsonNode normalizer, Set<String> addedTokens) {
    if (!normalizerKeepsPieces(normalizer)) {
      return NONE;
    }
    String regex = firstSplitRegex(preTokenizer);
    if (regex == null) {
      return NONE;
    }
    // Oniguruma (Hugging Face's regex engine) and Java read some constructs differently: the Java encoder's check
    Pattern p = ByteLevelBpe.javaRegex(regex);
    if (p == null) {
      return NONE;
    }
    Set<String> added = new java.util.HashSet<>();
    for (String t : addedTokens) {
      if (!t.isEmpty()) {
        added.add(t);
      }
    }
    return new PreTokenBound(p, added);
  }

  /**
   * The regex of the pre-tokenizer's first cut, when the pre-tokenizer ends in a byte-level one and that cut isolates
   * its matches ({@code Split} with behavior {@code Isolated}, not inverted): null otherwise.
   */
  private static String firstSplitRegex(JsonNode pre) {
    if (pre == null || pre.isNull()) {
      return null;
    }
    String type = pre.path("type").asText();
    if (type.equals("ByteLevel")) {
      return pre.path("use_regex").asBoolean(true) ? GPT2_REGEX : null;
    }
    if (!type.equals("Sequence")) {
      return null;
    }
    JsonNode steps = pre.path("pretokenizers");
    if (steps.size() < 2 || !steps.get(steps.size() - 1).path("type").asText().equals("ByteLevel")) {
      return null;
    }
    JsonNode first = steps.get(0);
    if (first.path("type").asText().equals("ByteLevel")) {
      return first.path("use_regex").asBoolean(true) ? GPT2_REGEX : null;
    }
    boolean isolated = first.path("type").asText().equals("Split") && first.path("behavior").asText().equals("Isolated")
        && !first.path("invert").asBoolean(false) && first.path("pattern").path("Regex").isTextual();
    return isolated ? first.path("pattern").path("Regex").asText() : null;
  }

  /** No normalizer (or an empty sequence), or a composing one whose texts are checked to be in its form already. */
  private static boolean normalizerKeepsPieces(JsonNode n) {
    if (n == null || n.isNull()) {
      return true;
    }
    return switch (n.path("type").asText()) {
      case "NFC", "NFKC" -> true;
      case "Sequence" -> {
        for (JsonNode step : n.path("normalizers")) {
          if (!normalizerKeepsPieces(step)) {
            yield false;
          }
        }
        yield true;
      }
      default -> false;
    };
  }

  boolean bounds() {
    return split != null;
  }

  /**
   * At least how many tokens {@code texts} encode to, each on its own or embedded in a longer text (two pieces per
   * text are given up: its first and last may join the text around it). Texts must be in the normalizer's form.
   */
  long minTokens(List<String> texts) {
    if (split == null) {
      return 0;
    }
    long total = 0;
    for (String text : texts) {
      total += Math.max(0, pieces(text) - 2);
    }
    return total;
  }

  /** The pieces of {@code text}, cut at added tokens (two given up at each). */
  long pieces(String text) {
    long n = 0;
    int from = 0;
    for (int i = 0; i < text.length() && !addedTokens.isEmpty(); i++) {
      String token = addedTokens.at(text, i, text.length());  // leftmost-longest, as the tokenizer matches
      if (token != null) {
        n += Math.max(0, regexPieces(text, from, i) - 2);
        from = i + token.length();
        i = from - 1;
      }
    }
    return n + regexPieces(text, from, text.length());
  }

  /** Matches of the split regex in {@code text[from, to)} and the non-empty gaps between them. */
  private long regexPieces(String text, int from, int to) {
    if (from >= to) {
      return 0;
    }
    Matcher m = split.matcher(text).region(from, to);
    m.useTransparentBounds(false).useAnchoringBounds(false);
    long n = 0;
    int end = from;
    while (m.find()) {
      if (m.start() > end) {
        n++;  // an unmatched gap is a piece of its own
      }
      if (m.end() > m.start()) {
        n++;
      }
      end = m.end();
    }
    return end < to ? n + 1 : n;
  }
}
