package dev.affinity.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A model's Hugging Face tokenizer, loaded from its directory: {@code tokenizer.json} (encoded by the Rust
 * {@code tokenizers} crate through DJL, so ids equal the Python and Rust tokenizers' ids: added and special tokens,
 * byte fallback, normalizers and pre-tokenizers included), the chat template and the special tokens from
 * {@code tokenizer_config.json} (or {@code chat_template.jinja} / {@code chat_template.json} beside it, and
 * {@code special_tokens_map.json}), as {@code AutoTokenizer.from_pretrained} reads them.
 *
 * <p>Chat prompts are rendered, then encoded without added special tokens (as {@code apply_chat_template(tokenize=True)}
 * does), a segment between special tokens at a time with a cache of segments already seen ({@link SegmentCache}), so
 * an agent's history re-sent every turn is not re-encoded. Thread-safe. Holds a native tokenizer: close it.
 */
public final class ModelTokenizer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ModelTokenizer.class);

  private final Path directory;
  private final HuggingFaceTokenizer tokenizer;
  private final ChatTemplates templates;
  private final SegmentCache segments;
  private final String fingerprint;
  private final TokenizerFile file;
  private final Map<String, String> specialTokens;
  /** The Java encoder where it gives the Rust tokenizer's ids ({@link ByteLevelBpe}), else null. */
  private final ByteLevelBpe bpe;
  private final java.util.concurrent.atomic.LongAdder javaEncoded = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder rustEncoded = new java.util.concurrent.atomic.LongAdder();

  private ModelTokenizer(Path directory, HuggingFaceTokenizer tokenizer, ChatTemplates templates, SegmentCache segments,
      String fingerprint, TokenizerFile file, Map<String, String> specialTokens, ByteLevelBpe bpe) {
    this.bpe = bpe;
    this.file = file;
    this.specialTokens = specialTokens;
    this.directory = directory;
    this.tokenizer = tokenizer;
    this.templates = templates;
    this.segments = segments;
    this.fingerprint = fingerprint;
  }

  /**
   * Loads the tokenizer of the model whose files are in {@code directory} (a Hugging Face checkpoint or tokenizer
   * directory).
   *
   * @throws IllegalArgumentException naming the file when a file is missing or unreadable, or the chat template
   *     cannot be rendered
   */
  public static ModelTokenizer load(Path directory) {
    return load(directory, true);
  }

  /**
   * {@link #load(Path)}, with {@code javaEncoder} false to encode every text with the Rust tokenizer (the Java
   * byte-level BPE off: for comparing the two).
   */
  public static ModelTokenizer load(Path directory, boolean javaEncoder) {
    Path dir = directory.toAbsolutePath().normalize();
    Path json = dir.resolve("tokenizer.json");
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException("tokenizer directory " + dir + " does not exist");
    }
    if (!Files.isRegularFile(json)) {
      throw new IllegalArgumentException(json + " not found: a model's tokenizer directory holds the tokenizer.json"
          + " of its fast (Rust) tokenizer");
    }
    byte[] bytes;  // read once: parsed here, hashed, and handed to the native tokenizer
    TokenizerFile file;
    try {
      bytes = Files.readAllBytes(json);
      file = TokenizerFile.read(bytes);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + json + ": " + e.getMessage(), e);
    }
    Map<String, String> special = new LinkedHashMap<>();
    ChatTemplates templates;
    try {
      JsonNode config = readOptional(dir.resolve("tokenizer_config.json"));
      JsonNode map = readOptional(dir.resolve("special_tokens_map.json"));
      for (String name : new String[] {"bos_token", "eos_token", "unk_token", "pad_token"}) {
        String value = tokenText(config == null ? null : config.get(name));
        if (value == null && map != null) {
          value = tokenText(map.get(name));
        }
        special.put(name, value);
      }
      templates = ChatTemplates.read(dir, config, special);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the tokenizer config in " + dir + ": " + e.getMessage(), e);
    }
    HuggingFaceTokenizer hf;
    try (InputStream in = new java.io.ByteArrayInputStream(bytes)) {
      hf = HuggingFaceTokenizer.newInstance(in, Map.of("addSpecialTokens", "false", "truncation", "false",
          "padding", "false"));
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("cannot load " + json + ": " + e.getMessage(), e);
    }
    String digest = digest(bytes);
    ByteLevelBpe bpe = null;
    try {
      bpe = javaEncoder ? javaEncoder(digest, bytes, file, hf) : null;
    } catch (IOException | RuntimeException e) {
      hf.close();
      throw new IllegalArgumentException("cannot load " + json + ": " + e.getMessage(), e);
    }
    return new ModelTokenizer(dir, hf, templates, new SegmentCache(file, SegmentCache.DEFAULT_ENTRIES), digest,
        file, java.util.Collections.unmodifiableMap(special), bpe);
  }

  /** Java encoders (or their absence) by tokenizer.json digest: a file loaded again reuses its encoder. */
  private static final Map<String, Optional<ByteLevelBpe>> JAVA_ENCODERS = new LinkedHashMap<>(8, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Optional<ByteLevelBpe>> eldest) {
      return size() > 4;
    }
  };

  private static ByteLevelBpe javaEncoder(String digest, byte[] bytes, TokenizerFile file, HuggingFaceTokenizer hf)
      throws IOException {
    synchronized (JAVA_ENCODERS) {
      Optional<ByteLevelBpe> known = JAVA_ENCODERS.get(digest);
      if (known == null) {
        known = Optional.ofNullable(checked(ByteLevelBpe.of(bytes, file), hf, file));
        JAVA_ENCODERS.put(digest, known);
      }
      return known.orElse(null);
    }
  }

  /**
   * The Java encoder if it gives the Rust tokenizer's ids on a probe text (prose, code, contractions, digits,
   * whitespace runs, accents, CJK, emoji and the tokenizer's added tokens) and every added token encodes alone to its
   * id in the file, else null with a warning: a last guard against a tokenizer.json whose parts read alike but encode
   * differently.
   */
  private static ByteLevelBpe checked(ByteLevelBpe bpe, HuggingFaceTokenizer hf, TokenizerFile file) {
    if (bpe == null) {
      return null;
    }
    StringBuilder probe = new StringBuilder("Hello, world! It's 2026-12-07; we'll   re-run \"tests\" 1234567 times."
        + "\n\n\tdef f(x):\r\n    return x**2  # caf\u00e9 na\u00efve \u00c9COLE\n\u4f60\u597d\uff0c\u4e16\u754c\u3002"
        + " \u3053\u3093\u306b\u3061\u306f \ud83d\ude00\ud83c\udf89 I'M SHE'S   \n \u00a0end");
    file.addedTokens().keySet().stream().limit(64).forEach(t -> probe.append(t).append(" x").append(t));
    for (Map.Entry<String, JsonNode> t : file.addedTokens().entrySet()) {
      // the crate numbers added tokens itself (a token of the vocabulary keeps its id, the others follow it): the
      // file's ids must be those
      int[] id = rustIds(hf, t.getKey(), false);
      if (id.length != 1 || id[0] != t.getValue().path("id").asInt(-1)) {
        LOG.warn("added token {} has id {} in tokenizer.json but encodes to {}: every text is encoded by the Rust"
            + " tokenizer", t.getKey(), t.getValue().path("id"), java.util.Arrays.toString(id));
        return null;
      }
    }
    String text = probe.toString();
    int[] inJava = bpe.encode(text);
    int[] rust = rustIds(hf, text, false);
    int[] withSpecial = bpe.encodeWithSpecialTokens(text);
    if (inJava == null || !java.util.Arrays.equals(inJava, rust)
        || (withSpecial != null && !java.util.Arrays.equals(withSpecial, rustIds(hf, text, true)))) {
      LOG.warn("the Java encoder differs from the Rust tokenizer on a probe text: every text is encoded by the Rust"
          + " tokenizer");
      return null;
    }
    return bpe;
  }

  private static JsonNode readOptional(Path file) throws IOException {
    if (!Files.exists(file)) {
      return null;
    }
    try {
      return JSON.readTree(file.toFile());
    } catch (IOException e) {
      String why = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
      throw new IOException(file + ": " + why, e);
    }
  }

  /** A special token as tokenizer_config writes it: a string, or an AddedToken object with its {@code content}. */
  private static String tokenText(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (node.isTextual()) {
      return node.asText();
    }
    JsonNode content = node.get("content");
    return content != null && content.isTextual() ? content.asText() : null;
  }

  private static String digest(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes), 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }


  /** The directory the tokenizer was loaded from. */
  public Path directory() {
    return directory;
  }

  /** The special tokens a chat template may name ({@code bos_token}, ...; a value is null when the model has none). */
  public Map<String, String> specialTokens() {
    return specialTokens;
  }

  /** Ids below this are the model's (its vocabulary and added tokens). */
  public int vocabularySize() {
    return file.vocabularySize();
  }

  /**
   * The most input characters one token stands for in {@code texts}: a text of {@code n} characters has at least
   * {@code n / maxCharsPerToken(...)} tokens (the cheap bound admission refuses huge prompts by). A composing
   * normalizer (NFC, NFKC) shrinks only texts not already in its form, so those texts are checked
   * ({@link java.text.Normalizer#isNormalized}, a fast scan). 0 when the normalizer may delete input: no bound.
   */
  public int maxCharsPerToken(List<String> texts) {
    return file.maxCharsPerToken(inComposedForm(texts));
  }

  /** Whether the normalizer composes (NFC, NFKC) and every text is already in its form. */
  private boolean inComposedForm(List<String> texts) {
    boolean composed = file.composes() != null;
    for (int i = 0; composed && i < texts.size(); i++) {
      composed = java.text.Normalizer.isNormalized(texts.get(i), file.composes());
    }
    return composed;
  }

  /**
   * At least how many tokens {@code texts} encode to, alone or embedded in a prompt, by the pieces of the
   * tokenizer's pre-tokenizer ({@link PreTokenBound}: a regex pass, no model); 0 where the pre-tokenizer gives no
   * bound, or a composing normalizer would change a text not already in its form. Admission refuses a prompt whose
   * text alone is longer than its limit by this bound without tokenizing it.
   */
  public long minTokens(List<String> texts) {
    if (!file.preTokens().bounds() || (file.composes() != null && !inComposedForm(texts))) {
      return 0;
    }
    return file.preTokens().minTokens(texts);
  }

  /** The first 128 bits of the SHA-256 of {@code tokenizer.json}, hex: equal files, equal ids. */
  public String fingerprint() {
    return fingerprint;
  }

  /**
   * The ids of a text, with the special tokens the tokenizer's post-processor adds when {@code addSpecialTokens}
   * (a completion prompt, as {@code tokenizer(prompt)["input_ids"]}), else without.
   */
  public int[] encode(String text, boolean addSpecialTokens) {
    return ids(text, addSpecialTokens);
  }

  /** The ids of a rendered chat prompt (without added special tokens), through the segment cache. */
  public int[] encodeRendered(String rendered) {
    return segments.encode(rendered, this::encodeWhole);
  }

  /**
   * The ids of conversation {@code key}'s rendered prompt, reusing what its last prompt in {@code prefixes} (else its
   * parent's, {@code parentKey}) shares with it ({@link PromptPrefixes}); exactly {@link #encodeRendered}'s.
   */
  public int[] encodeRendered(String rendered, PromptPrefixes prefixes, String key, String parentKey) {
    return prefixes.encode(key, parentKey, rendered, segments, this::encodeWhole);
  }

  /** {@link #encodeRendered(String, PromptPrefixes, String, String)}, keeping what the render did in its loops. */
  int[] encodeRendered(String rendered, RenderMemo memo, PromptPrefixes prefixes, String key, String parentKey) {
    return prefixes.encode(key, parentKey, rendered, memo, segments, this::encodeWhole);
  }

  private int[] encodeWhole(String text) {
    return ids(text, false);
  }

  /**
   * The ids alone. {@link HuggingFaceTokenizer#encode} also copies every token's text, offsets and masks into Java
   * (DJL's {@code Encoding}), which costs about as much again as the encoding; the same native call without them.
   */
  private int[] ids(String text, boolean addSpecialTokens) {
    if (bpe != null) {
      int[] ids = addSpecialTokens ? bpe.encodeWithSpecialTokens(text) : bpe.encode(text);
      if (ids != null) {
        javaEncoded.increment();
        return ids;
      }
    }
    rustEncoded.increment();
    return rustIds(tokenizer, text, addSpecialTokens);
  }

  private static int[] rustIds(HuggingFaceTokenizer tokenizer, String text, boolean addSpecialTokens) {
    long encoding = TokenizersLibrary.LIB.encode(tokenizer.getHandle(), text, addSpecialTokens);
    long[] ids;
    try {
      ids = TokenizersLibrary.LIB.getTokenIds(encoding);
    } finally {
      TokenizersLibrary.LIB.deleteEncoding(encoding);
    }
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = Math.toIntExact(ids[i]);
    }
    return out;
  }

  /** The text of ids, special tokens skipped (as the workers' detokenizer by default). */
  public String decode(int[] ids, boolean skipSpecialTokens) {
    long[] l = new long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      l[i] = ids[i];
    }
    return tokenizer.decode(l, skipSpecialTokens);
  }

  /** The chat templates of the model: none for a base model without one. */
  public Optional<ChatTemplates> chatTemplates() {
    return Optional.ofNullable(templates);
  }

  /**
   * A conversation rendered with the model's chat template, as {@code apply_chat_template(tokenize=False)}.
   *
   * @throws TemplateException when the template refuses the conversation or cannot render it
   * @throws IllegalStateException when the model has no chat template
   */
  public String renderChat(ChatInput input) {
    if (templates == null) {
      throw new IllegalStateException("the tokenizer in " + directory + " has no chat template");
    }
    return templates.forInput(input).render(input);
  }

  /** {@link #renderChat} then {@link #encodeRendered}: {@code apply_chat_template(tokenize=True)}. */
  public int[] encodeChat(ChatInput input) {
    return encodeRendered(renderChat(input));
  }

  /** Whether texts are encoded in Java where it is exact ({@link ByteLevelBpe}). */
  public boolean javaEncoder() {
    return bpe != null;
  }

  /** The Java encoder's ids of {@code text}, or null where it leaves the text to the Rust tokenizer (tests). */
  int[] javaEncoded(String text) {
    return bpe == null ? null : bpe.encode(text);
  }

  /** The texts of the tokenizer's added tokens. */
  java.util.Set<String> addedTokenTexts() {
    return file.addedTokens().keySet();
  }

  /** Texts encoded so far by the Java encoder and by the Rust tokenizer. */
  public record EncoderCounts(long java, long rust) {}

  public EncoderCounts encoderCounts() {
    return new EncoderCounts(javaEncoded.sum(), rustEncoded.sum());
  }

  /** How many rendered segments the cache answered and encoded. */
  public SegmentCache.Stats cacheStats() {
    return segments.stats();
  }

  @Override
  public void close() {
    tokenizer.close();
  }
}
