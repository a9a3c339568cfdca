package dev.affinity.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

  private final TokenMatcher splitTokens;
  private final boolean whole;
  private final Map<String, int[]> cache;
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong misses = new AtomicLong();

  SegmentCache(TokenizerFile file, int entries) {
    Map<String, Integer> split = new HashMap<>();
    for (Map.Entry<String, JsonNode> e : file.addedTokens().entrySet()) {
      JsonNode t = e.getValue();
      if (t.path("special").asBoolean(false) && !t.path("normalized").asBoolean(false)
          && !t.path("lstrip").asBoolean(false) && !t.path("rstrip").asBoolean(false)
          && !t.path("single_word").asBoolean(false) && t.path("id").canConvertToInt()) {
        split.put(e.getKey(), t.get("id").asInt());
      }
    }
    this.splitTokens = new TokenMatcher(split);
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
    return encodeFrom(text, 0, encoder, null);
  }

  /** Whether texts are encoded whole (no split token to cut at): then no prefix of ids is ever reused. */
  boolean whole() {
    return whole;
  }

  /** The longest split token, in chars: a scan at {@code i} reads up to {@code i + maxSplitChars()}. */
  int maxSplitChars() {
    return splitTokens.maxLength();
  }

  /**
   * The ids of {@code text} from {@code from} on, where {@code from} is 0 or the start of a split token as the scan of
   * the whole text finds it (so the ids of the text are the ids before it followed by these); with {@code starts}
   * given, each split token's start (its char index) and its id's index among the returned ids are added to it.
   */
  int[] encodeFrom(String text, int from, Function<String, int[]> encoder, Boundaries starts) {
    List<int[]> parts = new ArrayList<>();
    int total = 0;
    int segmentStart = from;
    int i = from;
    while (i < text.length()) {
      String token = splitTokens.at(text, i, text.length());
      if (token == null) {
        i++;
        continue;
      }
      if (i > segmentStart) {
        int[] ids = segment(text.substring(segmentStart, i), encoder);
        parts.add(ids);
        total += ids.length;
      }
      if (starts != null) {
        starts.add(i, total);
      }
      parts.add(new int[] {splitTokens.id(token)});
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

  /** Where split tokens start in a text: pairs of (char index, index of the token's id), in order. */
  static final class Boundaries {
    private int[] chars = new int[16];
    private int[] ids = new int[16];
    private int size;

    void add(int charIndex, int idIndex) {
      if (size == chars.length) {
        chars = Arrays.copyOf(chars, size * 2);
        ids = Arrays.copyOf(ids, size * 2);
      }
      chars[size] = charIndex;
      ids[size] = idIndex;
      size++;
    }

    int size() {
      return size;
    }

    int charAt(int k) {
      return chars[k];
    }

    int idAt(int k) {
      return ids[k];
    }

    /** The last boundary at or before char {@code limit}, or -1. */
    int lastAtOrBefore(int limit) {
      int lo = 0;
      int hi = size - 1;
      int found = -1;
      while (lo <= hi) {
        int mid = (lo + hi) >>> 1;
        if (chars[mid] <= limit) {
          found = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      return found;
    }

    /**
     * The first {@code k} boundaries, then {@code rest}'s, whose id indexes count from the {@code idShift} ids before
     * them; in arrays of exactly their size.
     */
    static Boundaries join(Boundaries head, int k, Boundaries rest, int idShift) {
      Boundaries b = new Boundaries();
      b.size = k + rest.size;
      b.chars = Arrays.copyOf(head.chars, b.size);
      b.ids = Arrays.copyOf(head.ids, b.size);
      System.arraycopy(rest.chars, 0, b.chars, k, rest.size);
      for (int j = 0; j < rest.size; j++) {
        b.ids[k + j] = rest.ids[j] + idShift;
      }
      return b;
    }

    long bytes() {
      return 8L * chars.length + 32;
    }

    /** Trims the arrays to the boundaries held (for a kept state). */
    Boundaries trimmed() {
      if (chars.length != size) {
        chars = Arrays.copyOf(chars, size);
        ids = Arrays.copyOf(ids, size);
      }
      return this;
    }
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
    return "SegmentCache[" + splitTokens.maxLength() + "]";
  }
}
