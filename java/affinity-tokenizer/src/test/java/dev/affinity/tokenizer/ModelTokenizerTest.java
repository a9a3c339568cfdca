package dev.affinity.tokenizer;

import static dev.affinity.tokenizer.TinyTokenizer.config;
import static dev.affinity.tokenizer.TinyTokenizer.quote;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ModelTokenizer} on the real Qwen3 and Llama 3.1 tokenizers, and on tiny written ones for loading rules. */
class ModelTokenizerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ChatInput HELLO = new ChatInput(List.of(Map.of("role", "user", "content", "hello")), null, true,
      Map.of());

  private static ModelTokenizer qwen;
  private static ModelTokenizer llama;

  @TempDir
  Path tmp;

  @BeforeAll
  static void load() {
    qwen = ModelTokenizer.load(TestModels.dir(TestModels.QWEN3));
    llama = ModelTokenizer.load(TestModels.dir(TestModels.LLAMA3));
  }

  @AfterAll
  static void close() {
    if (qwen != null) {
      qwen.close();
    }
    if (llama != null) {
      llama.close();
    }
  }

  @Test
  void llamaAddsBeginOfTextWithSpecialTokens() {
    int[] with = llama.encode("Hello world", true);
    int[] without = llama.encode("Hello world", false);
    assertArrayEquals(new int[] {128000, 9906, 1917}, with);
    assertArrayEquals(new int[] {9906, 1917}, without);
  }

  @Test
  void qwenAddsNothing() {
    assertArrayEquals(new int[] {9707, 1879}, qwen.encode("Hello world", true));
    assertArrayEquals(qwen.encode("Hello world", true), qwen.encode("Hello world", false));
  }

  @Test
  void specialTokenTextIsEncodedAsTheSpecialToken() {
    assertArrayEquals(new int[] {151644, 872, 198}, qwen.encode("<|im_start|>user\n", false));
    assertArrayEquals(new int[] {128000, 128006}, llama.encode("<|start_header_id|>", true));
  }

  @Test
  void decodeSkipsSpecialTokensOnlyWhenAsked() {
    int[] ids = llama.encode("Hello world", true);
    assertEquals("Hello world", llama.decode(ids, true));
    assertEquals("<|begin_of_text|>Hello world", llama.decode(ids, false));
    int[] chat = qwen.encode("<|im_start|>user\nHi<|im_end|>", false);
    assertEquals("user\nHi", qwen.decode(chat, true));
    assertEquals("<|im_start|>user\nHi<|im_end|>", qwen.decode(chat, false));
    String text = "日本語 😀 tabs\tand  spaces\n";
    assertEquals(text, qwen.decode(qwen.encode(text, false), true));
  }

  @Test
  void vocabularySizeIsOneMoreThanTheLargestIdOfTheFile() throws Exception {
    JsonNode file = JSON.readTree(TestModels.dir(TestModels.QWEN3).resolve("tokenizer.json").toFile());
    int max = -1;
    for (JsonNode id : (Iterable<JsonNode>) () -> file.get("model").get("vocab").elements()) {
      max = Math.max(max, id.asInt());
    }
    for (JsonNode t : file.get("added_tokens")) {
      max = Math.max(max, t.get("id").asInt());
    }
    assertEquals(max + 1, qwen.vocabularySize());
    assertEquals(151669, qwen.vocabularySize());
    assertEquals(128256, llama.vocabularySize());
  }

  @Test
  void specialTokensOfTheConfig() {
    Map<String, String> q = qwen.specialTokens();
    assertNull(q.get("bos_token"));
    assertEquals("<|im_end|>", q.get("eos_token"));
    assertEquals("<|endoftext|>", q.get("pad_token"));
    assertEquals(List.of("bos_token", "eos_token", "unk_token", "pad_token"), List.copyOf(q.keySet()));
    assertEquals("<|begin_of_text|>", llama.specialTokens().get("bos_token"));
    assertEquals("<|eot_id|>", llama.specialTokens().get("eos_token"));
  }

  @Test
  void fingerprintIsTheFirst128BitsOfTheFilesSha256() throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    try (InputStream in = Files.newInputStream(TestModels.dir(TestModels.QWEN3).resolve("tokenizer.json"))) {
      sha.update(in.readAllBytes());
    }
    assertEquals(HexFormat.of().formatHex(sha.digest(), 0, 16), qwen.fingerprint());
    assertNotEquals(qwen.fingerprint(), llama.fingerprint());
  }

  @Test
  void directoryIsAbsoluteAndNormalized() {
    Path dir = TestModels.dir(TestModels.QWEN3);
    assertEquals(dir.toAbsolutePath().normalize(), qwen.directory());
  }

  @Test
  void chatIsRenderedThenEncodedWithoutAddedSpecialTokens() {
    String text = llama.renderChat(HELLO);
    assertTrue(text.startsWith("<|begin_of_text|><|start_header_id|>"), text);
    assertArrayEquals(llama.encode(text, false), llama.encodeChat(HELLO));
    assertEquals(1, java.util.Arrays.stream(llama.encodeChat(HELLO)).filter(id -> id == 128000).count(),
        "the template's own <|begin_of_text|>, not a second one");
    assertEquals("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", qwen.renderChat(HELLO));
  }

  // --- loading ---

  @Test
  void aMissingDirectoryIsRefused() {
    Path missing = tmp.resolve("nope");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(missing));
    assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
  }

  @Test
  void aDirectoryWithoutTokenizerJsonIsRefusedNamingTheFile() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("empty"));
    Files.writeString(dir.resolve("tokenizer_config.json"), config(null));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
  }

  @Test
  void aTokenizerJsonThatIsNotJsonIsRefusedNamingTheFile() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("bad"));
    Files.writeString(dir.resolve("tokenizer.json"), "{not json");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
  }

  @Test
  void aTokenizerJsonTheTokenizerCannotLoadIsRefusedNamingTheFile() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("bad-model"));
    Files.writeString(dir.resolve("tokenizer.json"), "{\"version\": \"1.0\", \"model\": {\"type\": \"Nope\"}}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
  }

  @Test
  void aTokenizerJsonThatIsNotAnObjectIsRefused() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("array"));
    Files.writeString(dir.resolve("tokenizer.json"), "[1, 2]");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains("tokenizer.json"), e.getMessage());
  }

  @Test
  void aBadTokenizerConfigIsRefusedNamingTheDirectory() {
    Path dir = TinyTokenizer.dir(tmp, "bad-config", "{broken");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
  }

  /** BUG (ModelTokenizer.load): an unreadable tokenizer_config.json is reported as "the tokenizer config in DIR". */
  @Test
  void aBadTokenizerConfigIsRefusedNamingTheFile() {
    Path dir = TinyTokenizer.dir(tmp, "bad-config2", "{broken");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
  }

  @Test
  void aTemplateThatCannotRenderIsRefusedAtLoad() {
    Path dir = TinyTokenizer.dir(tmp, "bad-template", config(quote("ok\n{{ messages[0].content.zfill(2) }}")));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(dir));
    assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
    assertTrue(e.getMessage().contains("template line 2"), e.getMessage());
  }

  @Test
  void tinyTokenizerLoadsWithItsConfig() {
    Path dir = TinyTokenizer.dir(tmp, "tiny", config(quote("{% for m in messages %}{{ m.role }} : {{ m.content }}"
        + "{% endfor %}")));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertArrayEquals(new int[] {0, 3, 4}, t.encode("hello world", true));
      assertArrayEquals(new int[] {3, 0, 4, 2}, t.encode("hello <s> world foo", false));
      assertEquals(8, t.vocabularySize());
      assertEquals("<s>", t.specialTokens().get("bos_token"));
      assertEquals("</s>", t.specialTokens().get("eos_token"), "an AddedToken object's content");
      assertEquals("user : hello", t.renderChat(HELLO));
      assertArrayEquals(new int[] {5, 7, 3}, t.encodeChat(HELLO));
    }
  }

  @Test
  void specialTokensFallBackToSpecialTokensMap() throws Exception {
    Path dir = TinyTokenizer.dir(tmp, "map", "{\"chat_template\": \"{{ bos_token }}{{ eos_token }}\"}");
    Files.writeString(dir.resolve("special_tokens_map.json"),
        "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\"}");
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("<s>", t.specialTokens().get("bos_token"));
      assertEquals("</s>", t.specialTokens().get("eos_token"));
      assertEquals("<s></s>", t.renderChat(HELLO));
    }
  }

  @Test
  void noChatTemplate() {
    Path dir = TinyTokenizer.dir(tmp, "base", config(null));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertTrue(t.chatTemplates().isEmpty());
      assertThrows(IllegalStateException.class, () -> t.renderChat(HELLO));
    }
    Path bare = TinyTokenizer.dir(tmp, "bare", null);
    try (ModelTokenizer t = ModelTokenizer.load(bare)) {
      assertTrue(t.chatTemplates().isEmpty());
      assertNull(t.specialTokens().get("bos_token"));
    }
  }

  @Test
  void chatTemplateJinjaIsPreferredOverTheConfigs() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("qwen-copy"));
    Path qwenDir = TestModels.dir(TestModels.QWEN3);
    Files.copy(qwenDir.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    Files.copy(qwenDir.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
    Files.writeString(dir.resolve("chat_template.jinja"), "JINJA<|im_start|>{{ messages[0].content }}{{ eos_token }}",
        StandardCharsets.UTF_8);
    Files.writeString(dir.resolve("chat_template.json"), "{\"chat_template\": \"JSON{{ messages[0].content }}\"}");
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("JINJA<|im_start|>hello<|im_end|>", t.renderChat(HELLO));
      assertArrayEquals(t.encode("JINJA<|im_start|>hello<|im_end|>", false), t.encodeChat(HELLO));
      assertArrayEquals(qwen.encode("JINJA<|im_start|>hello<|im_end|>", false), t.encodeChat(HELLO));
      assertEquals(qwen.fingerprint(), t.fingerprint(), "the same tokenizer.json");
    }
  }

  @Test
  void chatTemplateJsonIsPreferredOverTheConfigAndJinjaOverBoth() throws Exception {
    Path dir = TinyTokenizer.dir(tmp, "order", config(quote("CONFIG{{ messages[0].content }}")));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("CONFIGhello", t.renderChat(HELLO));
    }
    Files.writeString(dir.resolve("chat_template.json"), "{\"chat_template\": \"JSON{{ messages[0].content }}\"}");
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("JSONhello", t.renderChat(HELLO));
    }
    Files.writeString(dir.resolve("chat_template.jinja"), "JINJA{{ messages[0].content }}");
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("JINJAhello", t.renderChat(HELLO));
    }
  }

  @Test
  void namedTemplatesPickToolUseWithToolsElseDefault() {
    String list = "[{\"name\": \"default\", \"template\": \"D{{ messages|length }}\"}, "
        + "{\"name\": \"tool_use\", \"template\": \"T{{ tools|length }}\"}]";
    Path dir = TinyTokenizer.dir(tmp, "named", config(list));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("D1", t.renderChat(HELLO));
      assertEquals("T2", t.renderChat(new ChatInput(HELLO.messages(), List.of(Map.of(), Map.of()), true, Map.of())));
      assertEquals("default\0D{{ messages|length }}\0tool_use\0T{{ tools|length }}\0",
          t.chatTemplates().orElseThrow().sources());
    }
  }

  @Test
  void namedTemplatesWithoutToolUseUseDefaultForTools() {
    Path dir = TinyTokenizer.dir(tmp, "named-default", config("[{\"name\": \"default\", \"template\": \"D\"}, "
        + "{\"name\": \"rag\", \"template\": \"R\"}]"));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("D", t.renderChat(new ChatInput(HELLO.messages(), List.of(Map.of()), true, Map.of())));
    }
  }

  @Test
  void namedTemplatesWithoutDefault() {
    Path dir = TinyTokenizer.dir(tmp, "named-nodefault", config("[{\"name\": \"tool_use\", \"template\": \"T\"}]"));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      assertEquals("T", t.renderChat(new ChatInput(HELLO.messages(), List.of(), true, Map.of())));
      TemplateException e = assertThrows(TemplateException.class, () -> t.renderChat(HELLO));
      assertFalse(e.raisedByTemplate());
      assertTrue(e.getMessage().contains("tool_use"), e.getMessage());
    }
  }

  @Test
  void malformedChatTemplatesAreRefused() {
    Path number = TinyTokenizer.dir(tmp, "number", config("42"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(number));
    assertTrue(e.getMessage().contains("tokenizer_config.json"), e.getMessage());
    Path noName = TinyTokenizer.dir(tmp, "noname", config("[{\"template\": \"x\"}]"));
    IllegalArgumentException e2 = assertThrows(IllegalArgumentException.class, () -> ModelTokenizer.load(noName));
    assertTrue(e2.getMessage().contains("name and a template"), e2.getMessage());
  }
}
