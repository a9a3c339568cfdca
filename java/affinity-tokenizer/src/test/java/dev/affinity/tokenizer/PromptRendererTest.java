package dev.affinity.tokenizer;

import static dev.affinity.tokenizer.TinyTokenizer.config;
import static dev.affinity.tokenizer.TinyTokenizer.quote;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.protocol.ChatCompletionRequest;
import dev.affinity.protocol.CompletionRequest;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link PromptRenderer} and {@link ModelPromptTokenizer} with the real Llama 3.1 tokenizer and tiny written ones. */
class PromptRendererTest {
  private static final ProtocolCodec CODEC = new ProtocolCodec();
  private static final int LONG = ModelPromptTokenizer.LONG_PROMPT_CHARS;

  private static ModelTokenizer llama;
  private static PromptRenderer renderer;
  private static final AtomicBoolean RENDER_ALIKE = new AtomicBoolean(true);
  private static ModelPromptTokenizer prompts;

  @TempDir
  Path tmp;

  @BeforeAll
  static void load() {
    llama = ModelTokenizer.load(TestModels.dir(TestModels.LLAMA3));
    renderer = new PromptRenderer(llama);
    prompts = new ModelPromptTokenizer(renderer, RENDER_ALIKE::get);
  }

  @AfterAll
  static void close() {
    if (llama != null) {
      llama.close();
    }
  }

  private static byte[] json(String s) {
    return s.replace('\'', '"').getBytes(StandardCharsets.UTF_8);
  }

  private static CompletionRequest completion(String json) {
    return CODEC.parseCompletionRequest(json(json));
  }

  private static ChatCompletionRequest chat(String json) {
    return CODEC.parseChatCompletionRequest(json(json));
  }

  private static ChatCompletionRequest chatOf(String extra) {
    return chat("{'model': 'm', 'messages': [{'role': 'system', 'content': 'Be brief.'}, "
        + "{'role': 'user', 'content': 'Hello world'}]" + extra + "}");
  }

  // --- completions ---

  @Test
  void completionTextGetsTheTokenizersSpecialTokens() {
    assertArrayEquals(new int[] {128000, 9906, 1917}, prompts.tokenize(completion("{'model': 'm', 'prompt': 'Hello world'}")));
    assertArrayEquals(new int[] {128000, 9906, 1917},
        prompts.tokenize(completion("{'model': 'm', 'prompt': 'Hello world', 'add_special_tokens': true}")));
    assertArrayEquals(new int[] {9906, 1917},
        prompts.tokenize(completion("{'model': 'm', 'prompt': 'Hello world', 'add_special_tokens': false}")));
    assertArrayEquals(new int[] {128000, 9906, 1917}, prompts.tokenize(completion("{'model': 'm', 'prompt': ['Hello world']}")));
  }

  @Test
  void clientIdsAreUsedAsTheyAre() {
    assertArrayEquals(new int[] {1, 2, 3, 999999}, prompts.tokenize(completion("{'model': 'm', 'prompt': [1, 2, 3, 999999]}")));
    assertArrayEquals(new int[] {5, 6, 7}, prompts.tokenize(chatOf(", 'prompt_token_ids': [5, 6, 7]")));
    assertArrayEquals(new int[] {5, 6, 7}, renderer.encodeChat(chatOf(", 'prompt_token_ids': [5, 6, 7]")));
  }

  // --- chats ---

  @Test
  void chatIdsAreTheRenderedChatEncoded() {
    ChatCompletionRequest chat = chatOf("");
    int[] expected = llama.encodeChat(OpenAiChat.toInput(chat));
    assertArrayEquals(expected, prompts.tokenize(chat));
    assertArrayEquals(expected, renderer.encodeChat(chat));
    assertEquals(llama.renderChat(OpenAiChat.toInput(chat)), renderer.render(chat));
    assertEquals(128000, expected[0], "the template's <|begin_of_text|>");
    assertEquals(1, java.util.Arrays.stream(expected).filter(id -> id == 128000).count());
  }

  @Test
  void chatWithToolsAndKwargsIsTheRenderedChatEncoded() {
    ChatCompletionRequest chat = chatOf(", 'tools': [{'type': 'function', 'function': {'name': 'get_weather', "
        + "'description': 'Weather', 'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}}}}], "
        + "'add_generation_prompt': false, 'chat_template_kwargs': {'tools_in_user_message': false}");
    assertArrayEquals(llama.encodeChat(OpenAiChat.toInput(chat)), prompts.tokenize(chat));
    assertTrue(renderer.render(chat).endsWith("Hello world<|eot_id|>"), "add_generation_prompt false");
  }

  @Test
  void aRequestChatTemplateIsUsed() {
    ChatCompletionRequest chat = chatOf(", 'chat_template': '{{ bos_token }}X{% for m in messages %}[{{ m.content }}]"
        + "{% endfor %}'");
    assertEquals("<|begin_of_text|>X[Be brief.][Hello world]", renderer.render(chat));
    assertArrayEquals(llama.encodeRendered("<|begin_of_text|>X[Be brief.][Hello world]"), prompts.tokenize(chat));
    assertNotEquals(llama.renderChat(OpenAiChat.toInput(chat)), renderer.render(chat));
    assertEquals(renderer.render(chat), renderer.render(chat), "compiled once, cached");
  }

  @Test
  void aBadRequestChatTemplateIsA400NamingChatTemplate() {
    ProtocolException syntax = assertThrows(ProtocolException.class,
        () -> prompts.tokenize(chatOf(", 'chat_template': 'a\\n{{ 1 + }}'")));
    assertEquals(400, syntax.status());
    assertEquals("chat_template", syntax.field());
    assertTrue(syntax.getMessage().contains("template line 2"), syntax.getMessage());

    ProtocolException raised = assertThrows(ProtocolException.class, () -> renderer.render(chatOf(
        ", 'chat_template': '{% if messages[0].role == \\'system\\' %}{{ raise_exception(\\'no system\\') }}{% endif %}'")));
    assertEquals(400, raised.status());
    assertEquals("chat_template", raised.field());
    assertEquals("no system", raised.detail());
  }

  /**
   * BUG (ChatTemplate.compile, seen through PromptRenderer): a request chat_template with a parse error jinjava
   * reports while parsing (a missing end tag, an unknown tag) escapes compile as a TemplateException (not raised by the
   * template) instead of an IllegalArgumentException, so requestTemplate does not turn it into the 400 naming
   * chat_template; render rethrows it as an engine error and ModelPromptTokenizer.tokenize routes the chat on its
   * text (returns null) instead of refusing the client's broken template.
   */
  @org.junit.jupiter.api.Disabled("BUG: a request chat_template with a missing end tag is not a 400 naming chat_template")
  @Test
  void aRequestChatTemplateWithAMissingEndTagIsA400NamingChatTemplate() {
    ProtocolException unclosed = assertThrows(ProtocolException.class,
        () -> renderer.render(chatOf(", 'chat_template': '{% if true %}x'")));
    assertEquals("chat_template", unclosed.field());
    ProtocolException unknownTag = assertThrows(ProtocolException.class,
        () -> prompts.tokenize(chatOf(", 'chat_template': '{% frobnicate %}'")));
    assertEquals("chat_template", unknownTag.field());
  }

  @Test
  void anEngineErrorIsNotTheClientsFault() {
    Path dir = TinyTokenizer.dir(tmp, "engine", config(quote("{% for m in messages %}{% if m.role == 'tool' %}"
        + "{{ m.content.zfill(3) }}{% endif %}{{ m.role }} : {{ m.content }}{% endfor %}")));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      PromptRenderer r = new PromptRenderer(t);
      ModelPromptTokenizer p = new ModelPromptTokenizer(r, () -> true);
      ChatCompletionRequest toolChat = chat("{'model': 'm', 'messages': [{'role': 'tool', 'content': 'hello'}]}");
      TemplateException e = assertThrows(TemplateException.class, () -> r.encodeChat(toolChat));
      assertFalse(e.raisedByTemplate());
      assertEquals(null, p.tokenize(toolChat), "routed on its text");
      assertEquals(1, p.engineErrors());
    }
  }

  @Test
  void aRaisingModelTemplateIsA400NamingMessages() {
    Path dir = TinyTokenizer.dir(tmp, "strict", config(quote("{% for m in messages %}{% if m.role == 'system' %}"
        + "{{ raise_exception('System role not supported') }}{% endif %}{{ m.role }} : {{ m.content }}{% endfor %}")));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      ModelPromptTokenizer p = new ModelPromptTokenizer(new PromptRenderer(t), () -> true);
      ProtocolException e = assertThrows(ProtocolException.class, () -> p.tokenize(chatOf("")));
      assertEquals(400, e.status());
      assertEquals("messages", e.field());
      assertEquals("System role not supported", e.detail());
      assertArrayEquals(new int[] {5, 7, 3, 4},
          p.tokenize(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': 'hello world'}]}")));
    }
  }

  @Test
  void aModelWithoutATemplateIsA400NamingMessages() {
    Path dir = TinyTokenizer.dir(tmp, "base", config(null));
    try (ModelTokenizer t = ModelTokenizer.load(dir)) {
      PromptRenderer r = new PromptRenderer(t);
      ProtocolException e = assertThrows(ProtocolException.class, () -> r.encodeChat(chatOf("")));
      assertEquals(400, e.status());
      assertEquals("messages", e.field());
      assertEquals("hello", r.render(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': 'hello'}], "
          + "'chat_template': '{{ messages[0].content }}'}")), "a request template still works");
    }
  }

  // --- forwardsIds ---

  @Test
  void forwardsIds() {
    CompletionRequest text = completion("{'model': 'm', 'prompt': 'Hello'}");
    CompletionRequest ids = completion("{'model': 'm', 'prompt': [1, 2]}");
    ChatCompletionRequest plain = chatOf("");
    ChatCompletionRequest withIds = chatOf(", 'prompt_token_ids': [1, 2]");
    ChatCompletionRequest withMedia = chat("{'model': 'm', 'messages': [{'role': 'user', 'content': [{'type': 'text', "
        + "'text': 'what is this'}, {'type': 'image_url', 'image_url': {'url': 'http://x/y.png'}}]}]}");
    try {
      RENDER_ALIKE.set(true);
      assertTrue(prompts.forwardsIds(text));
      assertTrue(prompts.forwardsIds(ids));
      assertTrue(prompts.forwardsIds(plain));
      assertFalse(prompts.forwardsIds(withIds), "client ids go as they came");
      assertFalse(prompts.forwardsIds(withMedia), "media: the ids are an estimate");
      RENDER_ALIKE.set(false);
      assertTrue(prompts.forwardsIds(text), "completions always");
      assertTrue(prompts.forwardsIds(ids));
      assertFalse(prompts.forwardsIds(plain), "workers render differently");
      assertFalse(prompts.forwardsIds(withIds));
      assertFalse(prompts.forwardsIds(withMedia));
    } finally {
      RENDER_ALIKE.set(true);
    }
  }

  // --- isLong ---

  @Test
  void isLongForCompletions() {
    assertTrue(prompts.isLong(completion("{'model': 'm', 'prompt': '" + "a".repeat(LONG) + "'}")));
    assertFalse(prompts.isLong(completion("{'model': 'm', 'prompt': '" + "a".repeat(LONG - 1) + "'}")));
    assertFalse(prompts.isLong(completion("{'model': 'm', 'prompt': [1, 2, 3]}")));
  }

  @Test
  void isLongForChatsCountsAllMessages() {
    String half = "b".repeat(LONG / 2);
    assertTrue(prompts.isLong(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': '" + half + "'}, "
        + "{'role': 'assistant', 'content': '" + half + "'}]}")));
    assertFalse(prompts.isLong(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': '" + half + "'}, "
        + "{'role': 'assistant', 'content': '" + half.substring(1) + "'}]}")));
    assertTrue(prompts.isLong(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': [{'type': 'text', "
        + "'text': '" + "c".repeat(LONG) + "'}]}]}")));
    assertFalse(prompts.isLong(chat("{'model': 'm', 'messages': [{'role': 'user', 'content': '" + "d".repeat(LONG)
        + "'}], 'prompt_token_ids': [1, 2]}")), "client ids are not tokenized");
    assertFalse(prompts.isLong(chatOf("")));
  }

  // --- fingerprint ---

  @Test
  void fingerprintIsStableForTheSameDirectory() {
    try (ModelTokenizer again = ModelTokenizer.load(TestModels.dir(TestModels.LLAMA3))) {
      assertEquals(renderer.fingerprint(), new PromptRenderer(again).fingerprint());
    }
    assertTrue(renderer.fingerprint().matches("affinity-render-v1:[0-9a-f]{32}"), renderer.fingerprint());
  }

  @Test
  void fingerprintDiffersForADifferentTemplateOrNone() {
    Path a = TinyTokenizer.dir(tmp, "a", config(quote("A{{ messages[0].content }}")));
    Path a2 = TinyTokenizer.dir(tmp, "a2", config(quote("A{{ messages[0].content }}")));
    Path b = TinyTokenizer.dir(tmp, "b", config(quote("B{{ messages[0].content }}")));
    Path none = TinyTokenizer.dir(tmp, "none", config(null));
    try (ModelTokenizer ta = ModelTokenizer.load(a); ModelTokenizer ta2 = ModelTokenizer.load(a2);
        ModelTokenizer tb = ModelTokenizer.load(b); ModelTokenizer tn = ModelTokenizer.load(none)) {
      String fa = new PromptRenderer(ta).fingerprint();
      assertEquals(fa, new PromptRenderer(ta2).fingerprint(), "same files in another directory");
      assertNotEquals(fa, new PromptRenderer(tb).fingerprint());
      assertNotEquals(fa, new PromptRenderer(tn).fingerprint());
      assertNotEquals(renderer.fingerprint(), fa);
      assertEquals(ta.fingerprint(), tb.fingerprint(), "the tokenizer.json digest alone does not see the template");
    }
  }

  @Test
  void hfTokenCodec() {
    HfTokenCodec codec = new HfTokenCodec(llama);
    assertArrayEquals(new int[] {9906, 1917}, codec.encode("Hello world"));
    assertArrayEquals(new int[] {128000, 9906, 1917}, codec.encodePrompt("Hello world", true));
    assertArrayEquals(renderer.encodeChat(chatOf("")), codec.encodeChat(chatOf("")));
    assertEquals("Hello world", codec.decode(new int[] {128000, 9906, 1917, 200000, -1}));
    assertEquals("", codec.decode(new int[] {200000}));
    assertEquals(renderer.fingerprint(), codec.renderFingerprint());
  }
}
