package dev.affinity.tokenizer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the segment cache needs of tokenizer.json (its added tokens and whether its pre-tokenizer splits per input),
 * its vocabulary size, and what bounds the input characters one token stands for ({@link #maxCharsPerToken}).
 *
 * @param longestToken the longest token's text, in chars (vocabulary and added tokens; byte-level vocabularies
 *     spell one char per byte, and every input char is at least one byte)
 * @param shrink how many input chars the normalizer can turn into one ({@link #shrink}); 0: it may delete input
 * @param composes the composing normal form the normalizer applies (NFC or NFKC), or null
 * @param preTokens the bound its pre-tokenizer gives ({@link #minTokens})
 * @param preTokenizer its {@code pre_tokenizer}, or null
 * @param normalizer its {@code normalizer}, or null
 * @param postProcessor its {@code post_processor}, or null
 */
record TokenizerFile(Map<String, JsonNode> addedTokens, boolean firstSplitOnly, int vocabularySize,
    int longestToken, int shrink, java.text.Normalizer.Form composes, PreTokenBound preTokens,
    JsonNode preTokenizer, JsonNode normalizer, JsonNode postProcessor) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A file without a pre-tokenizer, normalizer or post-processor to read (tests of the segment cache). */
  TokenizerFile(Map<String, JsonNode> addedTokens, boolean firstSplitOnly, int vocabularySize, int longestToken,
      int shrink, java.text.Normalizer.Form composes, PreTokenBound preTokens) {
    this(addedTokens, firstSplitOnly, vocabularySize, longestToken, shrink, composes, preTokens, null, null, null);
  }

  /** The longest token times the normalizer's shrink on texts already in its composed form (0: no bound). */
  int maxCharsPerToken(boolean composed) {
    int s = composed && composes != null ? shrink / 4 : shrink;
    return longestToken * s;
  }

  /**
   * How many input characters the normalizer can turn into one, or 0 when it may delete characters outright.
   * None, decompositions, lower-casing, prepends and 1:1 replacements keep every character; NFC and NFKC compose
   * at most 4 code points into one (Unicode's longest canonical decomposition); anything else (BERT's normalizer,
   * strip, precompiled charsmaps, replacements by less) is not bounded.
   */
  static int shrink(JsonNode normalizer) {
    if (normalizer == null || normalizer.isNull()) {
      return 1;
    }
    switch (normalizer.path("type").asText()) {
      case "NFD", "NFKD", "Lowercase", "Prepend":
        return 1;
      case "NFC", "NFKC":
        return 4;
      case "Replace": {
        String pattern = normalizer.path("pattern").path("String").asText("");
        int content = normalizer.path("content").asText("").length();
        return pattern.isEmpty() || content == 0 ? 0 : Math.max(1, (pattern.length() + content - 1) / content);
      }
      case "Sequence": {
        long product = 1;
        int composing = 0;
        for (JsonNode n : normalizer.path("normalizers")) {
          String type = n.path("type").asText();
          if (type.equals("NFC") || type.equals("NFKC")) {
            if (composing++ > 0) {
              continue;  // composing twice composes nothing more
            }
          }
          product *= shrink(n);
        }
        return (int) Math.min(product, 1 << 10);
      }
      default:
        return 0;
    }
  }

  /** The composing form a normalizer applies: NFKC, NFC or null. */
  static java.text.Normalizer.Form composes(JsonNode normalizer) {
    String s = normalizer == null ? "" : normalizer.toString();
    return s.contains("\"NFKC\"") ? java.text.Normalizer.Form.NFKC
        : s.contains("\"NFC\"") ? java.text.Normalizer.Form.NFC : null;
  }

  static TokenizerFile read(byte[] json) throws IOException {
    Map<String, JsonNode> added = new LinkedHashMap<>();
    boolean firstOnly = false;
    int size = 0;
    int longest = 0;
    int shrink = 1;
    java.text.Normalizer.Form composes = null;
    JsonNode preTokenizer = null;
    JsonNode normalizer = null;
    JsonNode postProcessor = null;
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        p.nextToken();
        if ("added_tokens".equals(field)) {
          JsonNode tokens = p.readValueAsTree();
          for (JsonNode t : tokens) {
            if (t.path("content").isTextual()) {
              added.put(t.get("content").asText(), t);
              longest = Math.max(longest, t.get("content").asText().length());
              size = Math.max(size, t.path("id").asInt(-1) + 1);
            }
          }
        } else if ("model".equals(field) && p.currentToken() == JsonToken.START_OBJECT) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            JsonToken value = p.nextToken();
            if ("vocab".equals(key) && value == JsonToken.START_OBJECT) {  // BPE, WordPiece: token -> id
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                longest = Math.max(longest, p.currentName().length());
                p.nextToken();
                size = Math.max(size, p.getIntValue() + 1);
              }
            } else if ("vocab".equals(key) && value == JsonToken.START_ARRAY) {  // Unigram: [piece, score] by id
              int n = 0;
              while (p.nextToken() != JsonToken.END_ARRAY) {
                JsonNode piece = p.readValueAsTree();
                longest = Math.max(longest, piece.path(0).asText("").length());
                n++;
              }
              size = Math.max(size, n);
            } else {
              p.skipChildren();
            }
          }
        } else if ("post_processor".equals(field)) {
          postProcessor = p.readValueAsTree();
        } else if ("pre_tokenizer".equals(field) || "normalizer".equals(field)) {
          JsonNode node = p.readValueAsTree();
          firstOnly |= node != null && node.toString().contains("\"prepend_scheme\":\"first\"");
          if ("normalizer".equals(field)) {
            shrink = shrink(node);
            composes = composes(node);
            normalizer = node;
          } else {
            preTokenizer = node;
          }
        } else {
          p.skipChildren();
        }
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    return new TokenizerFile(added, firstOnly, size, longest, shrink, composes,
        PreTokenBound.of(preTokenizer, normalizer, added.keySet()), preTokenizer, normalizer, postProcessor);
  }
}
