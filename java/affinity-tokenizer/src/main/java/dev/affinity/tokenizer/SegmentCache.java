package dev.affinity.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Encodes a rendered chat prompt a segment at a time, each segment's ids cached, so that a conversation re-sent with
 * one more turn encodes only its new text.
 *
 * <p>Why it is exact: Hugging Face's tokenizer first splits its input at its added tokens and normalizes, pre-tokenizes
 * and encodes every piece between them on its own ({@code AddedVocabulary::extract_and_normalize}), so the ids of a
 * text are the ids of its pieces, in order. The cache splits at the added tokens for which its split is the
 * tokenizer's: special, matched on the raw text ({@code normalized: false}) and taking no neighbouring whitespace or
 * word boundary ({@code lstrip}, {@code rstrip}, {@code single_word} false), leftmost-longest as the tokenizer matches.
 * Chat templates put such tokens between turns ({@code <|im_start|>}, {@code <|eot_id|>}, ...). A tokenizer whose
 * pre-tokenizer treats the input's first piece differently ({@code prepend_scheme: first}) is encoded whole.
 */
public final class SegmentCache {
  /** Segments kept (LRU). */
  public static final int DEFAULT_ENTRIES = 8192;
  /** Segments shorter than this are encoded again rather than cached. */
  static final int MIN_CACHED_CHARS = 64;

  private final Map<String, Integer> splitTokens = new HashMap<>();
  private final int[] lengths;
  private final java.util.BitSet firstChars = new java.util.BitSet();
  private final boolean whole;
  private final Map<String, int[]> cache;
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong misses = new AtomicLong();

  SegmentCache(TokenizerFile file, int entries) {
    TreeSet<Integer> distinct = new TreeSet<>((a, b) -> Integer.compare(b, a));
    for (Map.Entry<String, JsonNode> e : file.addedTokens().entrySet()) {
      JsonNode t = e.getValue();
      if (t.path("special").asBoolean(false) && !t.path("normalized").asBoolean(false)
          && !t.path("lstrip").asBoolean(false) && !t.path("rstrip").asBoolean(false)
          && !t.path("single_word").asBoolean(false) && !e.getKey().isEmpty() && t.path("id").canConvertToInt()) {
        splitTokens.put(e.getKey(), t.get("id").asInt());
        distinct.add(e.getKey().length());
        firstChars.set(e.getKey().charAt(0));
      }
    }
    this.lengths = distinct.stream().mapToInt(Integer::intValue).toArray();
    this.whole = file.firstSplitOnly() || splitTokens.isEmpty();
    this.cache = new LinkedHashMap<>(256, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, int[]> eldest) {
        return size() > entries;
      }
    };
  }

  /** Cache hits and misses so far. */
  public record Stats(long hits, long misses) {}

  Stats stats() {
    return new Stats(hits.get(), misses.get());
  }

  /** The ids of {@code text}, as {@code encoder} gives them for the whole text. */
  int[] encode(String text, Function<String, int[]> encoder) {
    if (whole) {
      return encoder.apply(text);
    }
    List<int[]> parts = new ArrayList<>();
    int total = 0;
    int segmentStart = 0;
    int i = 0;
    while (i < text.length()) {
      String token = tokenAt(text, i);
      if (token == null) {
        i++;
        continue;
      }
      if (i > segmentStart) {
        int[] ids = segment(text.substring(segmentStart, i), encoder);
        parts.add(ids);
        total += ids.length;
      }
      parts.add(new int[] {splitTokens.get(token)});
      total++;
      i += token.length();
      segmentStart = i;
    }
    if (segmentStart < text.length()) {
      int[] ids = segment(text.substring(segmentStart), encoder);
      parts.add(ids);
      total += ids.length;
    }
    int[] out = new int[total];
    int at = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** The longest split token starting at {@code i}, or null. */
  private String tokenAt(String text, int i) {
    if (!firstChars.get(text.charAt(i))) {
      return null;
    }
    for (int len : lengths) {
      if (i + len <= text.length()) {
        String candidate = text.substring(i, i + len);
        if (splitTokens.containsKey(candidate)) {
          return candidate;
        }
      }
    }
    return null;
  }

  private int[] segment(String piece, Function<String, int[]> encoder) {
    if (piece.length() < MIN_CACHED_CHARS) {
      return encoder.apply(piece);
    }
    int[] ids;
    synchronized (cache) {
      ids = cache.get(piece);
    }
    if (ids != null) {
      hits.incrementAndGet();
      return ids;
    }
    misses.incrementAndGet();
    ids = encoder.apply(piece);
    synchronized (cache) {
      cache.put(piece, ids);
    }
    return ids;
  }

  @Override
  public String toString() {
    return "SegmentCache" + Arrays.toString(lengths);
  }
}
