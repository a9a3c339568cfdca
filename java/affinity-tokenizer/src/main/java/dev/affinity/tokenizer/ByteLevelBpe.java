package dev.affinity.tokenizer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Hugging Face's byte-level BPE (GPT-2's scheme, as Qwen, Llama 3 and DeepSeek ship it), encoded in Java: a text to
 * the ids the Rust {@code tokenizers} crate gives for {@code encode(text, add_special_tokens=False)} (and, where its
 * post-processor only puts special tokens around them, for {@code add_special_tokens=True}), without a native call, and with a cache of words already seen, so that a first sight of a long history costs a fraction of the Rust
 * tokenizer's time.
 *
 * <p>The steps are the crate's, in its order: added tokens cut out of the raw text, leftmost-longest
 * ({@code AddedVocabulary::extract_and_normalize}: first those matched on the raw text, then, in each piece left, the
 * normalizer and the tokens matched on normalized text); the pre-tokenizer's {@code Split}s ({@code Isolated}) by
 * their regexes; every piece's UTF-8 bytes spelled as GPT-2's byte characters ({@code ByteLevel}); then the BPE model
 * on each piece ({@code Word::merge_all}: the lowest-ranked adjacent pair first, the leftmost among equals; with
 * {@code ignore_merges}, a piece that is a token is that token).
 *
 * <p>Only where it is provably the same: {@link #of} accepts a tokenizer whose every part is one of those (a BPE model
 * without dropout, byte fallback, unknown token or affixes; no normalizer or NFC; pre-tokenizer regexes without the
 * constructs where Oniguruma and Java read differently; added tokens that take no neighbouring whitespace). And
 * {@link #encode} answers null (the caller encodes with the Rust tokenizer) for a text it is not sure of: characters
 * outside the ranges whose Unicode properties have not changed between the versions Java 17-25 and Oniguruma know,
 * unpaired surrogates, or a piece NFC would change.
 */
final class ByteLevelBpe {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ByteLevelBpe.class);
  /** Words kept with their ids; as Hugging Face's BPE cache, new words stop being kept once it is full. */
  static final int WORD_CACHE_ENTRIES = 1 << 16;
  /** Longer words are merged every time. */
  static final int MAX_CACHED_WORD_CHARS = 256;
  /** GPT-2's byte characters: byte b is spelled {@code BYTE_CHARS[b]}. */
  static final char[] BYTE_CHARS = byteChars();

  private final TokenMatcher rawTokens;
  private final TokenMatcher normalizedTokens;
  private final boolean nfc;
  private final Pattern[] splits;
  private final int[] byteIds;
  private final PairMerges merges;
  /** Token text to id, for {@code ignore_merges}; null without it. */
  private final Map<String, Integer> wholeWords;
  /**
   * The ids the post-processor puts before and after a text's when special tokens are added ({@code [bos]} and
   * {@code []} for Llama 3, none for Qwen3 and DeepSeek V3), or null where the post-processor is not one this encoder
   * reads (then such texts go to the Rust tokenizer).
   */
  private final int[][] specialAffixes;
  private final ConcurrentHashMap<String, int[]> words = new ConcurrentHashMap<>();
  private final AtomicInteger cached = new AtomicInteger();

  private ByteLevelBpe(TokenMatcher rawTokens, TokenMatcher normalizedTokens, boolean nfc, Pattern[] splits,
      int[] byteIds, PairMerges merges, Map<String, Integer> wholeWords, int[][] specialAffixes) {
    this.specialAffixes = specialAffixes;
    this.rawTokens = rawTokens;
    this.normalizedTokens = normalizedTokens;
    this.nfc = nfc;
    this.splits = splits;
    this.byteIds = byteIds;
    this.merges = merges;
    this.wholeWords = wholeWords;
  }

  /**
   * The encoder of a tokenizer.json ({@code json}, already read into {@code file}), or null (with the reason logged
   * at debug) where it would not give the Rust tokenizer's ids.
   */
  static ByteLevelBpe of(byte[] json, TokenizerFile file) throws IOException {
    try {
      return read(json, file);
    } catch (Unsupported e) {
      LOG.debug("encoded by the Rust tokenizer alone: {}", e.getMessage());
      return null;
    }
  }

  /** Why a tokenizer's model is not one this encoder gives the same ids for. */
  private static final class Unsupported extends Exception {
    Unsupported(String why) {
      super(why, null, false, false);
    }
  }

  private static ByteLevelBpe read(byte[] json, TokenizerFile file) throws IOException, Unsupported {
    Pattern[] splits = splitPatterns(file.preTokenizer());
    if (splits == null) {
      throw new Unsupported("the pre-tokenizer is not regex splits ending in a byte-level one");
    }
    String form = normalizerForm(file.normalizer());
    if (form == null) {
      throw new Unsupported("the normalizer is not none or NFC");
    }
    for (JsonNode t : file.addedTokens().values()) {
      if (t.path("lstrip").asBoolean(false) || t.path("rstrip").asBoolean(false)
          || t.path("single_word").asBoolean(false) || !t.path("id").canConvertToInt()) {
        throw new Unsupported("an added token takes neighbouring whitespace or word boundaries");
      }
    }
    Map<String, Integer> vocab = new HashMap<>();
    List<String[]> mergeList = new ArrayList<>();
    boolean ignoreMerges = false;
    try (JsonParser p = new JsonFactory().createParser(json)) {
      p.nextToken();
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (!"model".equals(field) || value != JsonToken.START_OBJECT) {
          p.skipChildren();
          continue;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String key = p.currentName();
          JsonToken v = p.nextToken();
          switch (key) {
            case "type" -> {
              if (!"BPE".equals(p.getText())) {
                throw new Unsupported("the model is " + p.getText() + ", not BPE");
              }
            }
            case "vocab" -> {
              if (v != JsonToken.START_OBJECT) {
                throw new Unsupported("the vocabulary is not an object");
              }
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                String token = p.currentName();
                p.nextToken();
                vocab.put(token, p.getIntValue());
              }
            }
            case "merges" -> {
              while (p.nextToken() != JsonToken.END_ARRAY) {
                if (p.currentToken() == JsonToken.VALUE_STRING) {
                  String m = p.getText();
                  int space = m.indexOf(' ', 1);
                  if (space < 0 || m.indexOf(' ', space + 1) >= 0) {
                    throw new Unsupported("a merge is not two tokens: " + m);
                  }
                  mergeList.add(new String[] {m.substring(0, space), m.substring(space + 1)});
                } else if (p.currentToken() == JsonToken.START_ARRAY) {
                  p.nextToken();
                  String a = p.getText();
                  p.nextToken();
                  String b = p.getText();
                  if (p.nextToken() != JsonToken.END_ARRAY) {
                    throw new Unsupported("a merge is not two tokens");
                  }
                  mergeList.add(new String[] {a, b});
                } else {
                  throw new Unsupported("a merge is neither a string nor a pair");
                }
              }
            }
            case "dropout" -> {
              if (v != JsonToken.VALUE_NULL && p.getDoubleValue() != 0.0) {
                throw new Unsupported("BPE dropout is random");
              }
            }
            case "unk_token" -> {
              if (v != JsonToken.VALUE_NULL) {
                throw new Unsupported("an unknown token");
              }
            }
            case "continuing_subword_prefix", "end_of_word_suffix" -> {
              if (v != JsonToken.VALUE_NULL && !p.getText().isEmpty()) {
                throw new Unsupported(key + " is set");
              }
            }
            case "byte_fallback", "fuse_unk" -> {
              if (v == JsonToken.VALUE_TRUE) {
                throw new Unsupported(key + " is set");
              }
            }
            case "ignore_merges" -> ignoreMerges = v == JsonToken.VALUE_TRUE;
            default -> p.skipChildren();
          }
        }
      }
    }
    int[] byteIds = new int[256];
    for (int b = 0; b < 256; b++) {
      Integer id = vocab.get(String.valueOf(BYTE_CHARS[b]));
      if (id == null) {
        throw new Unsupported("byte " + b + " has no token");
      }
      byteIds[b] = id;
    }
    PairMerges merges = new PairMerges(mergeList.size());
    for (int rank = 0; rank < mergeList.size(); rank++) {
      String[] m = mergeList.get(rank);
      Integer a = vocab.get(m[0]);
      Integer b = vocab.get(m[1]);
      Integer merged = vocab.get(m[0] + m[1]);
      if (a == null || b == null || merged == null) {
        throw new Unsupported("merge " + rank + " names a token the vocabulary lacks");
      }
      merges.put(a, b, rank, merged);
    }
    Map<String, Integer> raw = new HashMap<>();
    Map<String, Integer> normalized = new HashMap<>();
    boolean nfc = form.equals("NFC");
    for (Map.Entry<String, JsonNode> e : file.addedTokens().entrySet()) {
      int id = e.getValue().get("id").asInt();
      if (e.getValue().path("normalized").asBoolean(!e.getValue().path("special").asBoolean(false))) {
        normalized.put(nfc ? Normalizer.normalize(e.getKey(), Normalizer.Form.NFC) : e.getKey(), id);
      } else {
        raw.put(e.getKey(), id);
      }
    }
    return new ByteLevelBpe(new TokenMatcher(raw), new TokenMatcher(normalized), nfc, splits, byteIds, merges,
        ignoreMerges ? vocab : null,
        specialAffixes(file.postProcessor()));
  }

  /**
   * What a post-processor adds around a single text's ids: none, a {@code ByteLevel} one (it trims offsets only), a
   * {@code TemplateProcessing} whose {@code single} template is special tokens around the sequence {@code A}, or a
   * {@code Sequence} of these with at most one template; null for any other.
   */
  static int[][] specialAffixes(JsonNode post) {
    if (post == null || post.isNull() || post.path("type").asText().equals("ByteLevel")) {
      return new int[][] {new int[0], new int[0]};
    }
    if (post.path("type").asText().equals("Sequence")) {
      int[][] found = {new int[0], new int[0]};
      int templates = 0;
      for (JsonNode step : post.path("processors")) {
        int[][] a = specialAffixes(step);
        if (a == null || (a[0].length + a[1].length > 0 && templates++ > 0)) {
          return null;
        }
        if (a[0].length + a[1].length > 0) {
          found = a;
        }
      }
      return found;
    }
    if (!post.path("type").asText().equals("TemplateProcessing")) {
      return null;
    }
    List<Integer> before = new ArrayList<>();
    List<Integer> after = new ArrayList<>();
    boolean sequence = false;
    for (JsonNode piece : post.path("single")) {
      if (piece.has("Sequence") && piece.path("Sequence").path("id").asText().equals("A") && !sequence) {
        sequence = true;
      } else if (piece.has("SpecialToken")) {
        JsonNode ids = post.path("special_tokens").path(piece.path("SpecialToken").path("id").asText()).path("ids");
        if (!ids.isArray() || ids.isEmpty()) {
          return null;
        }
        for (JsonNode id : ids) {
          (sequence ? after : before).add(id.asInt());
        }
      } else {
        return null;
      }
    }
    return sequence ? new int[][] {before.stream().mapToInt(Integer::intValue).toArray(),
        after.stream().mapToInt(Integer::intValue).toArray()} : null;
  }

  /**
   * The ids of {@code text} with the special tokens the post-processor adds ({@code encode(text)}, as a completion
   * prompt is encoded); null where this encoder leaves the text, or such texts, to the Rust tokenizer.
   */
  int[] encodeWithSpecialTokens(String text) {
    int[] ids = specialAffixes == null ? null : encode(text);
    if (ids == null || specialAffixes[0].length + specialAffixes[1].length == 0) {
      return ids;
    }
    int[] out = new int[specialAffixes[0].length + ids.length + specialAffixes[1].length];
    System.arraycopy(specialAffixes[0], 0, out, 0, specialAffixes[0].length);
    System.arraycopy(ids, 0, out, specialAffixes[0].length, ids.length);
    System.arraycopy(specialAffixes[1], 0, out, specialAffixes[0].length + ids.length, specialAffixes[1].length);
    return out;
  }

  /** "NONE" or "NFC" for a normalizer this encoder applies, else null. */
  private static String normalizerForm(JsonNode n) {
    if (n == null || n.isNull()) {
      return "NONE";
    }
    return switch (n.path("type").asText()) {
      case "NFC" -> "NFC";
      case "Sequence" -> {
        String form = "NONE";
        for (JsonNode step : n.path("normalizers")) {
          String f = normalizerForm(step);
          if (f == null || (!f.equals("NONE") && !form.equals("NONE"))) {
            yield null;
          }
          form = f.equals("NONE") ? form : f;
        }
        yield form;
      }
      default -> null;
    };
  }

  /**
   * The regexes of a pre-tokenizer that is isolating {@code Split}s followed by a {@code ByteLevel} that applies no
   * regex of its own and adds no prefix space (or a lone {@code ByteLevel} with GPT-2's regex); null otherwise.
   */
  static Pattern[] splitPatterns(JsonNode pre) {
    if (pre == null || pre.isNull()) {
      return null;
    }
    List<JsonNode> steps = new ArrayList<>();
    if (pre.path("type").asText().equals("Sequence")) {
      pre.path("pretokenizers").forEach(steps::add);
    } else {
      steps.add(pre);
    }
    if (steps.isEmpty()) {
      return null;
    }
    JsonNode last = steps.get(steps.size() - 1);
    if (!last.path("type").asText().equals("ByteLevel") || last.path("add_prefix_space").asBoolean(true)) {
      return null;
    }
    List<Pattern> out = new ArrayList<>();
    for (JsonNode s : steps.subList(0, steps.size() - 1)) {
      boolean isolated = s.path("type").asText().equals("Split") && s.path("behavior").asText().equals("Isolated")
          && !s.path("invert").asBoolean(false) && s.path("pattern").path("Regex").isTextual();
      Pattern p = isolated ? javaRegex(s.path("pattern").path("Regex").asText()) : null;
      if (p == null) {
        return null;
      }
      out.add(p);
    }
    if (last.path("use_regex").asBoolean(true)) {
      out.add(javaRegex(PreTokenBound.GPT2_REGEX));
    }
    return out.isEmpty() ? null : out.toArray(Pattern[]::new);
  }

  /**
   * An Oniguruma regex (Ruby syntax, as the crate compiles a {@code Split}'s pattern) as a Java pattern that matches
   * alike, or null where it uses a construct the two engines read differently: {@code ^ $ .} (line-based in Ruby),
   * {@code \w \W \b \B \h \H \R \X \K \G \A \z \Z}, property names beyond the general categories, class intersection
   * or nesting, and groups other than non-capturing, case-insensitive and look-around ones.
   */
  static Pattern javaRegex(String regex) {
    boolean inClass = false;
    for (int i = 0; i < regex.length(); i++) {
      char c = regex.charAt(i);
      if (c == '\\') {
        if (i + 1 >= regex.length()) {
          return null;
        }
        char e = regex.charAt(++i);
        if ("wWbBhHRXKGAzZ".indexOf(e) >= 0) {
          return null;
        }
        if (e == 'p' || e == 'P') {
          int close = regex.indexOf('}', i);
          if (i + 1 >= regex.length() || regex.charAt(i + 1) != '{' || close < 0
              || !regex.substring(i + 2, close).matches("[LMNPSZC][ultmocdnekfsip]?")) {
            return null;
          }
          i = close;
        }
        continue;
      }
      if (inClass) {
        if (c == '[' || (c == '&' && i + 1 < regex.length() && regex.charAt(i + 1) == '&')) {
          return null;
        }
        if (c == ']') {
          inClass = false;
        }
        continue;
      }
      switch (c) {
        case '[' -> {
          inClass = true;
          if (i + 1 < regex.length() && regex.charAt(i + 1) == '^') {
            i++;
          }
          if (i + 1 < regex.length() && regex.charAt(i + 1) == ']') {
            i++;  // a leading ] is a literal in both
          }
        }
        case '^', '$', '.' -> {
          return null;
        }
        case '(' -> {
          if (i + 1 < regex.length() && regex.charAt(i + 1) == '?') {
            String rest = regex.substring(i + 2);
            if (!(rest.startsWith(":") || rest.startsWith("i:") || rest.startsWith("=") || rest.startsWith("!")
                || rest.startsWith("<=") || rest.startsWith("<!"))) {
              return null;
            }
          }
        }
        default -> { }
      }
    }
    if (inClass) {
      return null;
    }
    try {
      // Oniguruma matches \s and case-insensitively by Unicode, as Java does with this flag
      return Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS);
    } catch (PatternSyntaxException e) {
      return null;
    }
  }

  /**
   * The ids of {@code text} without added special tokens, as the Rust tokenizer gives them; null where this encoder
   * is not sure of it (see the class comment): then the Rust tokenizer encodes it.
   */
  int[] encode(String text) {
    if (!knownCharacters(text)) {
      return null;
    }
    try {
      return encodeKnown(text);
    } catch (StackOverflowError e) {
      return null;  // a regex whose repetitions recurse in Java's engine, on a long piece: the Rust tokenizer's
    }
  }

  private int[] encodeKnown(String text) {
    Ids out = new Ids(Math.max(16, text.length() / 3));
    Matcher[] matchers = new Matcher[splits.length];
    for (int k = 0; k < splits.length; k++) {
      matchers[k] = splits[k].matcher(text);
      matchers[k].useTransparentBounds(false).useAnchoringBounds(true);
    }
    int from = 0;
    int n = text.length();
    for (int i = 0; i < n && !rawTokens.isEmpty(); i++) {
      String token = rawTokens.at(text, i, n);
      if (token != null) {
        if (!normalizedPiece(text, from, i, matchers, out)) {
          return null;
        }
        out.add(rawTokens.id(token));
        from = i + token.length();
        i = from - 1;
      }
    }
    return normalizedPiece(text, from, n, matchers, out) ? out.toArray() : null;
  }

  /**
   * A piece between raw added tokens: normalized, then cut at its normalized added tokens, then split; false where
   * NFC would change it or a split regex matched empty.
   */
  private boolean normalizedPiece(String text, int from, int to, Matcher[] matchers, Ids out) {
    if (from >= to) {
      return true;
    }
    if (nfc && !Normalizer.isNormalized(text.subSequence(from, to), Normalizer.Form.NFC)) {
      return false;
    }
    int start = from;
    for (int i = from; i < to && !normalizedTokens.isEmpty(); i++) {
      String token = normalizedTokens.at(text, i, to);
      if (token != null) {
        if (!split(text, start, i, 0, matchers, out)) {
          return false;
        }
        out.add(normalizedTokens.id(token));
        start = i + token.length();
        i = start - 1;
      }
    }
    return split(text, start, to, 0, matchers, out);
  }

  /**
   * Cuts {@code text[from, to)} by split {@code level} into its matches and the gaps between them, and each of those
   * by the next level; false where a regex matched empty (where Java and Oniguruma step on differently).
   */
  private boolean split(String text, int from, int to, int level, Matcher[] matchers, Ids out) {
    if (from >= to) {
      return true;
    }
    if (level == matchers.length) {
      word(text.substring(from, to), out);
      return true;
    }
    Matcher m = matchers[level];
    m.region(from, to);  // opaque bounds: a piece is a string of its own to the regex, as in the crate
    int end = from;
    while (m.find()) {
      int s = m.start();
      int e = m.end();
      if (e == s || !split(text, end, s, level + 1, matchers, out) || !split(text, s, e, level + 1, matchers, out)) {
        return false;
      }
      end = e;
    }
    return split(text, end, to, level + 1, matchers, out);
  }

  /** A pre-token's ids: from the cache, else merged. */
  private void word(String word, Ids out) {
    int[] ids = words.get(word);
    if (ids == null) {
      ids = merge(word.getBytes(StandardCharsets.UTF_8));
      if (word.length() <= MAX_CACHED_WORD_CHARS && cached.get() < WORD_CACHE_ENTRIES
          && words.putIfAbsent(word, ids) == null) {
        cached.incrementAndGet();
      }
    }
    out.add(ids);
  }

  /** BPE over a word's bytes, as {@code Word::merge_all} (and {@code ignore_merges}) does. */
  int[] merge(byte[] bytes) {
    int n = bytes.length;
    if (n == 1) {
      return new int[] {byteIds[bytes[0] & 0xff]};
    }
    if (wholeWords != null) {
      char[] spelled = new char[n];
      for (int i = 0; i < n; i++) {
        spelled[i] = BYTE_CHARS[bytes[i] & 0xff];
      }
      Integer id = wholeWords.get(new String(spelled));
      if (id != null) {
        return new int[] {id};
      }
    }
    int[] sym = new int[n];
    int[] prev = new int[n];
    int[] next = new int[n];
    for (int i = 0; i < n; i++) {
      sym[i] = byteIds[bytes[i] & 0xff];
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    boolean[] gone = new boolean[n];
    LongHeap queue = new LongHeap(n);
    for (int i = 0; i + 1 < n; i++) {
      long m = merges.get(sym[i], sym[i + 1]);
      if (m != PairMerges.NONE) {
        queue.push((m & 0xffffffff00000000L) | i);
      }
    }
    int left = n;
    while (!queue.isEmpty()) {
      long top = queue.pop();
      int pos = (int) top;
      int rank = (int) (top >>> 32);
      if (gone[pos] || next[pos] < 0) {
        continue;
      }
      int right = next[pos];
      long m = merges.get(sym[pos], sym[right]);
      if (m == PairMerges.NONE || (int) (m >>> 32) != rank) {
        continue;  // this pair changed since it was queued
      }
      sym[pos] = (int) m;
      gone[right] = true;
      left--;
      next[pos] = next[right];
      if (next[right] >= 0) {
        prev[next[right]] = pos;
      }
      if (prev[pos] >= 0) {
        long pm = merges.get(sym[prev[pos]], sym[pos]);
        if (pm != PairMerges.NONE) {
          queue.push((pm & 0xffffffff00000000L) | prev[pos]);
        }
      }
      if (next[pos] >= 0) {
        long nm = merges.get(sym[pos], sym[next[pos]]);
        if (nm != PairMerges.NONE) {
          queue.push((nm & 0xffffffff00000000L) | pos);
        }
      }
    }
    int[] ids = new int[left];
    for (int i = 0, k = 0; i >= 0; i = next[i]) {
      ids[k++] = sym[i];
    }
    return ids;
  }

  /**
   * Whether every character of {@code text} is one whose Unicode properties Java (17 to 25: Unicode 13 to 16) and
   * Oniguruma read alike: assigned in Java's tables and inside blocks that no Unicode version since 13 has added to
   * (Latin to NKo, punctuation, symbols and arrows, CJK punctuation and kana, the CJK ideographs to U+9FEF, Hangul
   * syllables, full-width forms, the common emoji); surrogates only in pairs.
   */
  static boolean knownCharacters(String text) {
    for (int i = 0, n = text.length(); i < n; i++) {
      char c = text.charAt(i);
      if (c < 0x800) {
        if (c >= 0x370 && Character.getType(c) == Character.UNASSIGNED) {
          return false;
        }
        continue;
      }
      int cp = c;
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= n || !Character.isLowSurrogate(text.charAt(i + 1))) {
          return false;
        }
        cp = Character.toCodePoint(c, text.charAt(++i));
      }
      boolean stable = (cp >= 0x2000 && cp < 0x2400) || (cp >= 0x2440 && cp < 0x2B00) || (cp >= 0x3000 && cp < 0x3100)
          || (cp >= 0x4E00 && cp < 0x9FF0) || (cp >= 0xAC00 && cp < 0xD7A4) || (cp >= 0xFF00 && cp < 0xFFF0)
          || (cp >= 0x1F300 && cp < 0x1F650);
      if (!stable || Character.getType(cp) == Character.UNASSIGNED) {
        return false;
      }
    }
    return true;
  }

  private static char[] byteChars() {
    char[] chars = new char[256];
    int extra = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      chars[b] = printable ? (char) b : (char) (256 + extra++);
    }
    return chars;
  }

  /** A growing int array. */
  private static final class Ids {
    private int[] a;
    private int size;

    Ids(int capacity) {
      a = new int[capacity];
    }

    void add(int id) {
      if (size == a.length) {
        a = Arrays.copyOf(a, size * 2);
      }
      a[size++] = id;
    }

    void add(int[] ids) {
      if (size + ids.length > a.length) {
        a = Arrays.copyOf(a, Math.max(a.length * 2, size + ids.length));
      }
      System.arraycopy(ids, 0, a, size, ids.length);
      size += ids.length;
    }

    int[] toArray() {
      return size == a.length ? a : Arrays.copyOf(a, size);
    }
  }

  /** A binary min-heap of longs: (rank, position) pairs, the lowest rank first, then the leftmost. */
  private static final class LongHeap {
    private long[] a;
    private int size;

    LongHeap(int capacity) {
      a = new long[Math.max(4, capacity)];
    }

    boolean isEmpty() {
      return size == 0;
    }

    void push(long v) {
      if (size == a.length) {
        a = Arrays.copyOf(a, size * 2);
      }
      int i = size++;
      while (i > 0) {
        int parent = (i - 1) >>> 1;
        if (a[parent] <= v) {
          break;
        }
        a[i] = a[parent];
        i = parent;
      }
      a[i] = v;
    }

    long pop() {
      long top = a[0];
      long v = a[--size];
      int i = 0;
      while (true) {
        int child = 2 * i + 1;
        if (child >= size) {
          break;
        }
        if (child + 1 < size && a[child + 1] < a[child]) {
          child++;
        }
        if (v <= a[child]) {
          break;
        }
        a[i] = a[child];
        i = child;
      }
      if (size > 0) {
        a[i] = v;
      }
      return top;
    }
  }
}
