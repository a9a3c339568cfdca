package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link RenderMemo}: a render that reuses the conversation's last render's loop iterations is the whole render,
 * character for character, turn after turn; and it reuses what an agent's next turn leaves unchanged. The four
 * families' real templates on agent conversations (tool calls and results, reasoning that Qwen3 drops from earlier
 * turns, a system prompt, edits of earlier messages, retries, sub-agents forked from a turn), then templates written to
 * read what the recording must see (the number of messages, a neighbour, namespaces written and read, loop variables,
 * variables left by an earlier iteration, macros) or cannot (calls that change what they are called on).
 */
class RenderMemoTest {
  private static final String[] WORDS = ("the a function returns value file test error build class method list map "
      + "string if else for while return null true false import config router worker cache token prefix block "
      + "<tool_response> </tool_response> <think> </think> \n \n\n").split(" ");

  private static ChatTemplate family(String family) throws Exception {
    Path config = TestModels.dir(family).resolve("tokenizer_config.json");
    String source = new ObjectMapper().readTree(Files.readString(config)).get("chat_template").asText();
    return ChatTemplate.compile(source, config.toString(), Map.of("bos_token", "<s>", "eos_token", "</s>"));
  }

  private static String words(Random r, int n) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) {
      out.append(WORDS[r.nextInt(WORDS.length)]).append(' ');
    }
    return out.toString();
  }

  private static Map<String, Object> message(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    m.putIfAbsent("media", List.of());
    return m;
  }

  /** The next message of a random agent conversation: a question, an answer, a tool call and its result. */
  private static List<Map<String, Object>> step(Random r, int turn, String family, boolean alternating) {
    boolean deepseek = family.equals(TestModels.DEEPSEEK_V3);
    if (alternating || r.nextInt(4) == 0) {
      String answer = r.nextBoolean() ? "<think>\n" + words(r, 8) + "\n</think>\n\n" + words(r, 10) : words(r, 12);
      Map<String, Object> a = message("role", "assistant", "content", answer);
      if (!alternating && r.nextInt(3) == 0) {
        a.put("reasoning_content", words(r, 5));
      }
      return List.of(message("role", "user", "content", r.nextInt(5) == 0
          ? "<tool_response>" + words(r, 4) + "</tool_response>" : "question " + turn + " " + words(r, 10)), a);
    }
    List<Object> calls = new ArrayList<>();
    int n = 1 + r.nextInt(2);
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object args = deepseek ? "{\"path\": \"f" + turn + "\"}" : Map.of("path", "f" + turn + "_" + i);
      calls.add(Map.of("id", "c" + turn + "_" + i, "type", "function", "function",
          Map.of("name", "read_file", "arguments", args)));
    }
    out.add(message("role", "assistant", "content", deepseek ? null : r.nextBoolean() ? "" : words(r, 4),
        "tool_calls", calls));
    for (int i = 0; i < n; i++) {
      out.add(message("role", "tool", "tool_call_id", "c" + turn + "_" + i, "content", words(r, 6 + r.nextInt(20))));
    }
    return out;
  }

  /** Each message a fresh map with the same values, as each turn's request is read anew. */
  private static List<Map<String, Object>> copies(List<Map<String, Object>> messages) {
    List<Map<String, Object>> out = new ArrayList<>();
    messages.forEach(m -> out.add(new LinkedHashMap<>(m)));
    return out;
  }

  /** Renders with and without the memo; they must agree. Returns the memo render. */
  private static ChatTemplate.Rendered check(ChatTemplate t, ChatInput input, RenderMemo memo, String what) {
    String whole;
    try {
      whole = t.render(input);
    } catch (TemplateException e) {
      TemplateException again = assertThrows(TemplateException.class, () -> t.render(input, memo), what);
      assertEquals(e.getMessage(), again.getMessage(), what);
      return null;
    }
    ChatTemplate.Rendered r = t.render(input, memo);
    assertEquals(whole, r.text(), what);
    return r;
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3})
  void agentConversationsRenderedTurnByTurnAreTheWholeRender(String family) throws Exception {
    ChatTemplate t = family(family);
    boolean alternating = family.equals(TestModels.GEMMA3);  // user / model turns only
    long reused = 0;
    long rendered = 0;
    long known = 0;
    long compared = 0;
    for (int seed = 0; seed < 12; seed++) {
      Random r = new Random(seed * 7919L + family.hashCode());
      List<Map<String, Object>> messages = new ArrayList<>();
      if (r.nextInt(4) != 0) {
        messages.add(message("role", "system", "content", "You are an agent. " + words(r, 20)));
      }
      RenderMemo memo = null;
      String lastText = null;
      List<RenderMemo> earlier = new ArrayList<>();
      for (int turn = 0; turn < 24; turn++) {
        int edit = r.nextInt(10);
        if (edit == 0 && messages.size() > 2) {  // an earlier message rewritten
          int at = r.nextInt(messages.size());
          Map<String, Object> m = new LinkedHashMap<>(messages.get(at));
          m.put("content", m.get("content") == null ? null : m.get("content") + words(r, 2));
          messages.set(at, m);
        } else if (edit == 1 && messages.size() > 4) {  // cut back (a compaction, a retry of an earlier turn)
          messages.subList(messages.size() - 2 - r.nextInt(2), messages.size()).clear();
        } else if (edit != 2) {  // edit 2: the same conversation again
          messages.addAll(step(r, turn, family, alternating));
        }
        Map<String, Object> kwargs = r.nextInt(6) == 0 ? Map.of("enable_thinking", false) : Map.of();
        ChatInput input = new ChatInput(copies(messages), null, r.nextInt(5) != 0, kwargs);
        String what = family + " seed " + seed + " turn " + turn;
        ChatTemplate.Rendered out = check(t, input, memo, what);
        if (out != null) {
          if (lastText != null && out.memo() != null) {
            // what the memo says the text shares with the last render's text without comparing it, it shares
            int same = out.memo().sameAs(lastText);
            assertTrue(out.text().regionMatches(0, lastText, 0, same), what + ": " + same + " chars the same");
            known += same;
            compared += PromptPrefixes.mismatch(out.text(), lastText);
          }
          lastText = out.text();
          memo = out.memo();
          earlier.add(memo);
          reused += out.reusedIterations();
          rendered += out.renderedIterations();
        }
        if (r.nextInt(6) == 0 && !earlier.isEmpty()) {  // a sub-agent forked from an earlier turn: its memo
          List<Map<String, Object>> fork = new ArrayList<>(messages.subList(0, messages.size() / 2));
          fork.add(message("role", "user", "content", "sub-task " + words(r, 6)));
          check(t, new ChatInput(copies(fork), null, true, Map.of()), earlier.get(r.nextInt(earlier.size())),
              what + " (sub-agent)");
        }
      }
    }
    // (Qwen3 too, whose walk over the messages reversed computes each one's index from their number and its loop
    // position, and whose main loop compares each position with the last question's: their values are the reads)
    // most of what the turns share with the last is known without comparing it
    assertTrue(known > compared / 2, family + ": known the same " + known + " of " + compared);
    assertTrue(reused > 3 * rendered, family + ": most iterations are reused, " + reused + " against " + rendered);
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.LLAMA3, TestModels.DEEPSEEK_V3, TestModels.GEMMA3, TestModels.QWEN3})
  void aTurnThatAddsMessagesRendersOnlyWhatItsReadsChanged(String family) throws Exception {
    ChatTemplate t = family(family);
    boolean alternating = family.equals(TestModels.GEMMA3);
    Random r = new Random(5);
    List<Map<String, Object>> messages = new ArrayList<>();
    for (int turn = 0; turn < 30; turn++) {
      messages.addAll(step(r, turn, family, true));
    }
    RenderMemo memo = check(t, new ChatInput(copies(messages), null, true, Map.of()), null, family).memo();
    int before = messages.size();
    messages.addAll(step(r, 30, family, alternating));
    ChatTemplate.Rendered next = check(t, new ChatInput(copies(messages), null, true, Map.of()), memo, family);
    // the main loop renders what changed: the new messages and the one whose loop.last turned false; Qwen3 also
    // walks its messages reversed, where the new messages and the first old one (which the index the new ones left
    // in the loop's scope precedes) render
    long loops = family.equals(TestModels.QWEN3) ? 2 : 1;
    long bound = loops * (messages.size() - before + 3);
    assertTrue(next.renderedIterations() <= bound, family + ": rendered " + next.renderedIterations());
    assertTrue(next.reusedIterations() >= loops * (before - 3), family + ": reused " + next.reusedIterations());
  }

  private static List<Map<String, Object>> chat(int n) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(message("role", i % 2 == 0 ? "user" : "assistant", "content", "m" + i));
    }
    return out;
  }

  /** Renders the conversation growing one message a turn, with and without the memo; returns iterations reused. */
  private static long grow(String source, int turns) {
    ChatTemplate t = ChatTemplate.compile(source, "test", Map.of("bos_token", "<s>"));
    RenderMemo memo = null;
    long reused = 0;
    for (int n = 1; n <= turns; n++) {
      ChatTemplate.Rendered out = check(t, new ChatInput(chat(n), null, true, Map.of()), memo, source + " n=" + n);
      assertNotNull(out);
      memo = out.memo();
      reused += out.reusedIterations();
    }
    return reused;
  }

  @Test
  void whatAnIterationReadsOutsideItsItemIsRead() {
    // each template's output for an old message changes as the conversation grows: reusing it whole would be wrong
    grow("{% for m in messages %}{{ m.content }}/{{ messages|length }};{% endfor %}", 8);
    grow("{% for m in messages %}{{ m.content }}{% if loop.last %}!{% endif %};{% endfor %}", 8);
    grow("{% for m in messages %}{{ loop.revindex }}{{ loop.length }}{{ m.content }};{% endfor %}", 8);
    grow("{% for m in messages %}{{ m.content }}>{{ messages[loop.index0 + 1].content if not loop.last }};{% endfor %}",
        8);
    grow("{% for m in messages %}{{ m.content }}{{ messages[-1].content }};{% endfor %}", 8);
    grow("{% set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.last = "
        + "loop.index0 %}{% endif %}{% endfor %}{% for m in messages %}{{ m.content }}"
        + "{% if loop.index0 >= ns.last %}*{% endif %};{% endfor %}", 8);
    // a namespace written by one iteration and read by the next; a variable one iteration leaves for the next
    grow("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{% endfor %}"
        + "{{ ns.n }}", 8);
    grow("{% for m in messages %}{% if prev is defined %}{{ prev }}{% endif %}{% set prev = m.content %}"
        + "{% endfor %}", 8);
    // a macro reading a template variable; a variable set after the loop
    grow("{% macro show(m) %}{{ bos_token }}{{ m.content }}{{ messages|length }}{% endmacro %}"
        + "{% for m in messages %}{{ show(m) }}{% endfor %}", 8);
    // nested loops, the inner one over all messages
    grow("{% for m in messages %}{% for o in messages %}{{ o.content }}{% endfor %}|{% endfor %}", 6);
  }

  @Test
  void derivedValuesAreTheReadsAndTheirChangesRender() {
    // Qwen3's shape: the index a reversed walk computes for a message, and each position compared with the last
    // question's; both the same for every old message as the conversation grows: reused
    String lastQuery = "{% set ns = namespace(q=-1) %}{% for m in messages[::-1] %}"
        + "{% set i = (messages|length - 1) - loop.index0 %}{% if ns.q < 0 and m.role == 'user' %}{% set ns.q = i %}"
        + "{% endif %}{% endfor %}{% for m in messages %}{% if loop.index0 > ns.q %}>{% endif %}{{ m.content }};"
        + "{% endfor %}";
    long reused = grow(lastQuery, 12);
    assertTrue(reused >= 70, "reused " + reused);  // 36 when the reads are the numbers the values come from
    // values that change as the conversation grows: printed, compared, or the namespace's attribute the iteration
    // wrote before it read it; and a value that is not a whole number (jinjava evaluates the text)
    grow("{% for m in messages %}{% set d = messages|length - loop.index0 %}{{ d }}{{ m.content }};{% endfor %}", 8);
    grow("{% for m in messages %}{% if messages|length - 2 == loop.index0 %}*{% endif %}{{ m.content }};"
        + "{% endfor %}", 8);
    grow("{% for m in messages[::-1] %}{% if loop.revindex0 + 1 >= messages|length - 1 %}*{% endif %}"
        + "{{ m.content }};{% endfor %}", 8);
    grow("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% if ns.n > 2 %}*"
        + "{% endif %}{{ m.content }};{% endfor %}", 8);
    grow("{% set ns = namespace(n=messages|length) %}{% for m in messages %}{% if ns.n - 1 == loop.index0 %}*"
        + "{% endif %}{{ m.content }};{% endfor %}", 8);
    grow("{% set ns = namespace(x=1.5) %}{% for m in messages %}{% if ns.x > 1 %}*{% endif %}{% set y = ns.x %}"
        + "{{ y }}{{ m.content }};{% endfor %}", 8);
    // an inner loop's counters: not the memoized loop's, read as jinjava reads them
    grow("{% for m in messages %}{% for c in m.content %}{% if loop.index0 > 0 %}+{% endif %}{{ c }}{% endfor %};"
        + "{% endfor %}", 6);
  }

  /** A message map that counts how often its entries are walked (a comparison by value walks them). */
  private static final class Counted extends LinkedHashMap<String, Object> {
    static int walks;

    Counted(Map<String, Object> m) {
      super(m);
    }

    @Override
    public java.util.Set<Map.Entry<String, Object>> entrySet() {
      walks++;
      return super.entrySet();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.LLAMA3})
  void messagesMadeFromTheSameObjectsAreComparedByThem(String family) throws Exception {
    ChatTemplate t = family(family);
    Random r = new Random(9);
    List<Map<String, Object>> messages = new ArrayList<>();
    List<Object> sources = new ArrayList<>();
    for (int turn = 0; turn < 20; turn++) {
      for (Map<String, Object> m : step(r, turn, family, true)) {
        messages.add(m);
        sources.add(new Object());
      }
    }
    List<Map<String, Object>> counted = new ArrayList<>();
    messages.forEach(m -> counted.add(new Counted(m)));
    RenderMemo memo = t.render(new ChatInput(counted, null, true, Map.of(), List.copyOf(sources)), null).memo();
    for (Map<String, Object> m : step(r, 20, family, true)) {
      messages.add(m);
      sources.add(new Object());
    }
    List<Map<String, Object>> next = new ArrayList<>();
    messages.forEach(m -> next.add(new Counted(m)));  // new maps, each made from the same object as before
    Counted.walks = 0;
    ChatTemplate.Rendered out = t.render(new ChatInput(next, null, true, Map.of(), List.copyOf(sources)), memo);
    assertEquals(t.render(new ChatInput(copies(messages), null, true, Map.of())), out.text());
    assertTrue(out.reusedIterations() >= messages.size() - 4, family + ": reused " + out.reusedIterations());
    // the reused iterations' items were compared by what they were made from (the template's own reads of a
    // message, its tool calls printed as JSON, walk a few)
    assertTrue(Counted.walks < 8, family + ": messages compared by value " + Counted.walks + " times");
    // made from other objects, the same messages are compared by value, and reused alike
    List<Object> others = new ArrayList<>();
    messages.forEach(m -> others.add(new Object()));
    ChatTemplate.Rendered byValue = t.render(new ChatInput(copies(messages), null, true, Map.of(), others), memo);
    assertEquals(out.text(), byValue.text());
    assertEquals(out.reusedIterations(), byValue.reusedIterations());
  }

  @Test
  void iterationsThatReadOnlyTheirItemAreReused() {
    long reused = grow("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}"
        + "{% if loop.first %}(first){% endif %}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}", 10);
    // turn n reuses its first n - 1 messages' iterations
    assertEquals(9 * 10 / 2, reused);
  }

  @Test
  void outputsWithinTheTextAreNotKeptTwice() {
    ChatTemplate t = ChatTemplate.compile("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        + "{% endfor %}", "t", Map.of("bos_token", "<s>"));
    List<Map<String, Object>> messages = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      messages.add(message("role", "user", "content", "m" + i + " " + "x".repeat(1000)));
    }
    ChatTemplate.Rendered first = t.render(new ChatInput(copies(messages), null, true, Map.of()), null);
    assertTrue(first.memo().bytes() < first.text().length(), "kept within the text: " + first.memo().bytes());
    messages.add(message("role", "user", "content", "next"));
    ChatTemplate.Rendered next = t.render(new ChatInput(copies(messages), null, true, Map.of()), first.memo());
    assertEquals(50, next.reusedIterations());
    assertTrue(next.memo().bytes() < next.text().length(), "the reused ones too: " + next.memo().bytes());
    // a loop inside a set block (its output changed before it reaches the text) is not memoized
    assertEquals(0, grow("{% set body %}{% for m in messages %}{{ m.content }};{% endfor %}{% endset %}"
        + "{{ body|upper }}", 6));
  }

  @Test
  void callsThatChangeWhatTheyAreCalledOnAreNeverReused() {
    String append = "{% set seen = [] %}{% for m in messages %}{% do seen.append(m.content) %}{{ seen|length }}"
        + "{% endfor %}";
    assertEquals(0, grow(append, 6));
    assertEquals(0, grow("{% for m in messages %}{{ loop.cycle('a', 'b') }}{{ m.content }}{% endfor %}", 6));
    assertEquals(0, grow("{% for m in messages %}{% set ns = namespace(x=m.content) %}{{ ns.x }}{% endfor %}", 6));
    assertEquals(0, grow("{% for m in messages %}{% macro say() %}{{ m.content }}{% endmacro %}{{ say() }}"
        + "{% endfor %}", 6));
    // loop controls and the engine's random helpers: the template renders whole every time
    assertEquals(0, grow("{% for m in messages %}{% if m.content == 'm3' %}{% break %}{% endif %}{{ m.content }}"
        + "{% endfor %}", 6));
  }

  @ParameterizedTest
  @ValueSource(strings = {TestModels.QWEN3, TestModels.DEEPSEEK_V3})
  void aRequestsTurnsThroughTheRendererAreTheWholeEncoding(String family) throws Exception {
    try (ModelTokenizer t = ModelTokenizer.load(TestModels.dir(family))) {
      PromptRenderer keeping = new PromptRenderer(t, new PromptPrefixes(64L << 20));
      PromptRenderer whole = new PromptRenderer(t);
      dev.affinity.protocol.ProtocolCodec codec = new dev.affinity.protocol.ProtocolCodec();
      ObjectMapper json = new ObjectMapper();
      Random r = new Random(11);
      List<Map<String, Object>> messages = new ArrayList<>();
      messages.add(Map.of("role", "system", "content", "You are an agent. " + words(r, 20)));
      List<Object> tools = List.of(Map.of("type", "function", "function", Map.of("name", "read_file",
          "parameters", Map.of("type", "object", "properties", Map.of("path", Map.of("type", "string"))))));
      for (int turn = 0; turn < 12; turn++) {
        for (Map<String, Object> m : step(r, turn, family, false)) {
          Map<String, Object> wire = new LinkedHashMap<>(m);
          wire.remove("media");
          if (wire.get("tool_calls") instanceof List<?> calls) {  // on the wire, arguments are a JSON string
            List<Object> sent = new ArrayList<>();
            for (Object c : calls) {
              @SuppressWarnings("unchecked")
              Map<String, Object> call = new LinkedHashMap<>((Map<String, Object>) c);
              @SuppressWarnings("unchecked")
              Map<String, Object> f = new LinkedHashMap<>((Map<String, Object>) call.get("function"));
              f.put("arguments", f.get("arguments") instanceof String a ? a : json.writeValueAsString(f.get("arguments")));
              call.put("function", f);
              sent.add(call);
            }
            wire.put("tool_calls", sent);
          }
          messages.add(wire);
        }
        byte[] body = json.writeValueAsBytes(Map.of("model", "m", "messages", messages, "tools", tools));
        dev.affinity.protocol.ChatCompletionRequest chat = codec.parseChatCompletionRequest(body);
        String what = family + " turn " + turn;
        assertEquals(java.util.Arrays.toString(whole.encodeChat(chat)),
            java.util.Arrays.toString(keeping.encodeChat(chat, "c", null)), what);
        assertNotNull(keeping.prefixes().renderMemo("c", null), what);
      }
      assertTrue(keeping.prefixes().stats().reusedIterations() > 0, family);
    }
  }

  @Test
  void readsPastTheRendersContextAndValuesItCannotCompareRenderWhole() {
    // a loop inside a macro, a call block or a set block reads their arguments and variables past the render's
    // context: such loops, and templates with macros, are not memoized
    grow("{% macro show(p) %}{% for m in messages %}{{ p }}{{ m.content }};{% endfor %}{% endmacro %}"
        + "{{ show(messages|length) }}", 6);
    grow("{% set body %}{% set p = messages|length %}{% for m in messages %}{{ p }}{{ m.content }};{% endfor %}"
        + "{% endset %}{{ body }}", 6);
    grow("{% if messages|length > 2 %}{% macro f() %}A{% endmacro %}{% else %}{% macro f() %}B{% endmacro %}"
        + "{% endif %}{% for m in messages %}{{ f() }}{{ m.content }};{% endfor %}", 6);
    // a namespace read whole
    grow("{% set ns = namespace(n=messages|length) %}{% for m in messages %}{{ ns|tojson }}{{ m.content }};"
        + "{% endfor %}", 6);
    grow("{% set ns = namespace(n=messages|length) %}{% for m in messages %}{{ ns }}{{ m.content }};{% endfor %}", 6);
    // {% set loop = ... %}
    grow("{% for m in messages %}{{ loop if loop is string }}{% if loop.first %}{% set loop = m.content %}{% endif %};"
        + "{% endfor %}", 6);
  }

  @Test
  void aMapWithItsKeysInAnotherOrderIsAnotherValue() {
    ChatTemplate t = ChatTemplate.compile("{% for m in messages %}{{ m.role }}:{{ m.args|tojson }};{% endfor %}",
        "t", Map.of());
    Map<String, Object> ab = new LinkedHashMap<>();
    ab.put("a", 1);
    ab.put("b", 2);
    Map<String, Object> ba = new LinkedHashMap<>();
    ba.put("b", 2);
    ba.put("a", 1);
    RenderMemo memo = check(t, new ChatInput(List.of(message("role", "user", "args", ab)), null, true, Map.of()),
        null, "ab").memo();
    ChatTemplate.Rendered next = check(t, new ChatInput(List.of(message("role", "user", "args", ba),
        message("role", "user", "args", ab)), null, true, Map.of()), memo, "ba");
    assertEquals("user:{\"b\": 2, \"a\": 1};user:{\"a\": 1, \"b\": 2};", next.text());
  }

  @Test
  void aReplayedIterationHandsOnNothingTheNextRenderCouldChange() {
    // the list one iteration makes and later ones append to: were it replayed, a later render's append would change
    // the memo that other renders (a retry, another sub-agent of the same parent) still read
    String source = "{% for m in messages %}{% if loop.first %}{% set acc = [] %}{% endif %}"
        + "{% if m.role == 'assistant' %}{{ acc.append(1) or '' }}{% endif %}{{ m.content }}{{ acc|length }};"
        + "{% endfor %}";
    ChatTemplate t = ChatTemplate.compile(source, "t", Map.of());
    RenderMemo memo = check(t, new ChatInput(chat(1), null, true, Map.of()), null, "1").memo();
    check(t, new ChatInput(chat(2), null, true, Map.of()), memo, "2");  // appends to the list
    check(t, new ChatInput(chat(3), null, true, Map.of()), memo, "3 from the first memo again");
  }

  @Test
  void aRenderThatMayChangeItsInputLeavesNoMemo() {
    // (the trial render at compile time has one user message: an unconditional change would fail it)
    ChatTemplate t = ChatTemplate.compile("{% for m in messages %}{% if m.role == 'assistant' %}"
        + "{% do m.update({'content': 'x'}) %}{% endif %}{{ m.content }}{% endfor %}", "t", Map.of());
    ChatTemplate.Rendered r = t.render(new ChatInput(chat(3), null, true, Map.of()), null);
    assertEquals("m0xm2", r.text());
    assertNull(r.memo());
  }

  @Test
  void aMemoOfAnotherTemplateIsNotUsed() {
    ChatTemplate a = ChatTemplate.compile("{% for m in messages %}{{ m.content }}{% endfor %}", "a", Map.of());
    ChatTemplate b = ChatTemplate.compile("{% for m in messages %}[{{ m.content }}]{% endfor %}", "b", Map.of());
    ChatInput input = new ChatInput(chat(4), null, true, Map.of());
    RenderMemo memo = a.render(input, null).memo();
    ChatTemplate.Rendered out = b.render(input, memo);
    assertEquals("[m0][m1][m2][m3]", out.text());
    assertEquals(0, out.reusedIterations());
    assertNull(a.render(input, null).memo().run(b, null, 0));
  }

  @Test
  void aRaisedExceptionIsTheWholeRendersAgain() {
    ChatTemplate t = ChatTemplate.compile("{% for m in messages %}{% if m.content == 'm3' %}"
        + "{{ raise_exception('no m3') }}{% endif %}{{ m.content }}{% endfor %}", "t", Map.of());
    RenderMemo memo = t.render(new ChatInput(chat(3), null, true, Map.of()), null).memo();
    TemplateException e = assertThrows(TemplateException.class,
        () -> t.render(new ChatInput(chat(4), null, true, Map.of()), memo));
    assertEquals("no m3", e.getMessage());
  }

  /**
   * Renders on several threads at once, with and without the memo, of one template whose loops nest (a namespace, a
   * loop inside a loop and inside a macro), each equal to the same render alone: every thread renders on its own
   * engine. On one engine shared by all threads, loops wrote the same unguarded set of the engine's global context
   * and renders failed with a {@code ConcurrentModificationException}.
   */
  @Test
  void rendersOnSeveralThreadsAtOnceEachGiveTheRenderAlone() throws Exception {
    ChatTemplate qwen = family(TestModels.QWEN3);
    ChatTemplate nested = ChatTemplate.compile("{% macro m(xs) %}{% for x in xs %}({{ x }}){% endfor %}{% endmacro %}"
        + "{% set ns = namespace(n=0) %}{% for msg in messages %}{% for c in msg.content.split(' ') %}{{ c|length }},"
        + "{% set ns.n = ns.n + 1 %}{% endfor %}{{ m([msg.role, ns.n]) }}{% endfor %}", "nested", Map.of());
    Random r = new Random(3);
    List<Map<String, Object>> messages = new ArrayList<>();
    for (int turn = 0; turn < 30; turn++) {
      messages.addAll(step(r, turn, TestModels.QWEN3, true));
    }
    ChatInput input = new ChatInput(messages, null, true, Map.of());
    String qwenAlone = qwen.render(input);
    String nestedAlone = nested.render(input);
    RenderMemo memo = qwen.render(input, null).memo();
    int threads = 4;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
    try {
      // each thread its own engine: nothing of one render's context chain is another thread's
      com.hubspot.jinjava.interpret.Context mine = qwen.globalContext();
      assertNotSame(mine, pool.submit(qwen::globalContext).get(), "another thread renders on another engine");
      assertSame(mine, qwen.globalContext());
      List<java.util.concurrent.Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(pool.submit(() -> {
          for (int i = 0; i < 150; i++) {
            assertEquals(qwenAlone, qwen.render(input));
            assertEquals(qwenAlone, qwen.render(input, memo).text());
            assertEquals(nestedAlone, nested.render(input));
          }
          return null;
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
