package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link ChatTemplate} against Jinja2 as Hugging Face configures it ({@code ImmutableSandboxedEnvironment(
 * trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])}, {@code tojson} as {@code json.dumps(...,
 * ensure_ascii=False)}): every expected text below was rendered by jinja2 3.1.6 with that environment on the same
 * input.
 */
class ChatTemplateTest {

  private static final List<Map<String, Object>> MESSAGES = List.of(
      msg("system", "  sys\n"),
      msg("user", "Hi there"),
      msg("assistant", "\n\n<think>\nhmm\n</think>\n\nHello!  "));

  private static Map<String, Object> msg(String role, Object content) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("role", role);
    m.put("content", content);
    return m;
  }

  private static String render(String template) {
    return render(template, MESSAGES, null, Map.of(), Map.of());
  }

  private static String render(String template, List<Map<String, Object>> messages, List<Object> tools,
      Map<String, String> special, Map<String, Object> kwargs) {
    return ChatTemplate.compile(template, "test", special).render(new ChatInput(messages, tools, true, kwargs));
  }

  static Stream<Arguments> whitespace() {
    return Stream.of(
        Arguments.of("trim_blocks", "{% for m in messages %}\n{{ m.role }}\n{% endfor %}\n", "system\nuser\nassistant\n"),
        Arguments.of("lstrip_blocks", "{% for m in messages %}\n    {% if m.role == 'user' %}\n  [{{ m.content }}]\n"
            + "    {% endif %}\n{% endfor %}", "  [Hi there]\n"),
        Arguments.of("lstrip with tabs", "\t{% if true %}y\n\t{% endif %}z", "y\nz"),
        Arguments.of("lstrip at a line start", "q\n   {% if true %}y{% endif %}\nz", "q\nyz"),
        Arguments.of("lstrip of a comment", "q\n   {# c #}\nz", "q\nz"),
        Arguments.of("expressions are not lstripped", "q\n   {{ 'e' }}\nz", "q\n   e\nz"),
        Arguments.of("no trim after an expression", "{{ 'e' }}\nz", "e\nz"),
        Arguments.of("whitespace-only line kept", "a\n    \n{% if true %}b{% endif %}", "a\n    \nb"),
        Arguments.of("raw text indent", "  {{ messages[0].role }}\n  {% set x = 1 %}\n  after", "  system\n  after"),
        Arguments.of("{{- -}}", "a  \n  {{- messages[1].content -}}  \n  b", "aHi thereb"),
        Arguments.of("{{- only", "a \n {{- 'b' }}", "ab"),
        Arguments.of("-}} only", "{{ 'b' -}} \n c", "bc"),
        Arguments.of("{%- -%}", "x\n  {%- for m in messages -%}\n  {{ m.role }}  \n{%- endfor -%}\n  y",
            "xsystemuserassistanty"),
        Arguments.of("{%- with a newline after", "{%- for m in messages %}\n  {{- m.role }}\n{%- endfor %}\n",
            "systemuserassistant"),
        Arguments.of("{#- -#}", "a  {#- c -#}  b", "ab"),
        Arguments.of("comments and dashes", "a\n{# note #}\nb\n  {#- c -#}  \nc", "a\nbc"),
        Arguments.of("if / elif / else", "{% if 1 > 2 %}\nA\n{% elif 2 > 1 %}\nB\n{% else %}\nC\n{% endif %}\n", "B\n"),
        Arguments.of("nested blocks", "{% for i in [1,2] %}\n  {% if i == 1 %}\n    one\n  {% else %}\n    other\n"
            + "  {% endif %}\n{% endfor %}\n", "    one\n    other\n"),
        Arguments.of("macro", "{% macro f(x) %}<{{ x }}>{% endmacro %}{{ f('a') }}{{ f(x='b') }}", "<a><b>"),
        Arguments.of("loop controls", "{% for m in messages %}{% if loop.index0 == 1 %}{% continue %}{% endif %}"
            + "{% if loop.index0 == 2 %}{% break %}{% endif %}{{ m.role }}{% endfor %}", "system"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("whitespace")
  void whitespaceControlAsJinja2(String name, String template, String jinja2) {
    assertEquals(jinja2, render(template));
  }

  static Stream<Arguments> whitespaceDivergences() {
    return Stream.of(
        Arguments.of("space before a mid-line block", "a {% if true %}b{% endif %} c", "a b c"),
        Arguments.of("space after an expression before a block", "{{ 'x' }} {% if true %}y{% endif %}", "x y"),
        Arguments.of("space before endfor", "{% for i in [1,2] %}{{ i }} {% endfor %}|", "1 2 |"),
        Arguments.of("space before a mid-line set", "a {% set x = 1 %}b", "a b"),
        Arguments.of("dash on one side only", "A {%- if true %} B {% endif -%} C", "A B C"),
        Arguments.of("space before a mid-line comment", "q {# c #} z", "q  z"),
        Arguments.of("keep_trailing_newline=False", "hello\n", "hello"),
        Arguments.of("keep_trailing_newline=False, two", "hello\n\n", "hello\n"),
        Arguments.of("keep_trailing_newline=False after a block", "[{% if add_generation_prompt %}gen{% endif %}]\n",
            "[gen]"),
        Arguments.of("trim_blocks of \\r\\n", "{% if true %}\r\nz{% endif %}", "z"),
        Arguments.of("{%+ disables lstrip", "  {%+ if true %}x{% endif %}\n", "  x"));
  }

  /**
   * BUGS (ChatTemplate, jinjava's whitespace handling): (1) lstrip_blocks strips the spaces before a block or comment
   * tag that is not at the start of a line ({@code "a {% if true %}b{% endif %} c"} renders {@code "ab c"}, Jinja2
   * {@code "a b c"}); (2) the template's single trailing newline is kept (Jinja2's default
   * {@code keep_trailing_newline=False}, which HF keeps, drops it); (3) trim_blocks leaves {@code \r\n}; (4)
   * {@code {%+} is not supported.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("whitespaceDivergences")
  void whitespaceDivergencesFromJinja2(String name, String template, String jinja2) {
    assertEquals(jinja2, render(template));
  }

  @Test
  void theTopLevelJoinedAsJinjavaJoinsIt() {
    // the template's own top level joined into one buffer; a template with blocks is jinjava's render throughout
    String loops = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
        + "{% if add_generation_prompt %}<assistant>{% endif %}";
    ChatTemplate t = ChatTemplate.compile(loops, "t", Map.of("bos_token", "<s>"));
    ChatInput input = new ChatInput(List.of(Map.of("role", "user", "content", "hi"),
        Map.of("role", "assistant", "content", "ho")), null, true, Map.of());
    assertEquals("<s><user>hi<assistant>ho<assistant>", t.render(input));
    ChatTemplate.Rendered first = t.render(input, null);
    assertEquals("<s><user>hi<assistant>ho<assistant>", t.render(input, first.memo()).text());
    ChatTemplate blocks = ChatTemplate.compile("{% block head %}[{{ bos_token }}]{% endblock %}" + loops, "b",
        Map.of("bos_token", "<s>"));
    assertEquals("[<s>]<s><user>hi<assistant>ho<assistant>", blocks.render(input));
  }

  @Test
  void raiseExceptionIsATemplateExceptionRaisedByTheTemplate() {
    TemplateException e = assertThrows(TemplateException.class, () -> render(
        "{% if messages[0].role == 'system' %}{{ raise_exception('no system: ' + messages[0].role) }}{% endif %}ok"));
    assertTrue(e.raisedByTemplate());
    assertEquals("no system: system", e.getMessage());
  }

  @Test
  void aTemplateThatRaisesOnTheTrialConversationStillCompiles() {
    ChatTemplate t = ChatTemplate.compile(
        "{% if messages|length == 1 %}{{ raise_exception('need two') }}{% endif %}{{ messages|length }}", "test", Map.of());
    assertEquals("3", t.render(new ChatInput(MESSAGES, null, true, Map.of())));
    TemplateException e = assertThrows(TemplateException.class,
        () -> t.render(new ChatInput(List.of(msg("user", "x")), null, true, Map.of())));
    assertTrue(e.raisedByTemplate());
    assertEquals("need two", e.getMessage());
  }

  @Test
  void anEngineErrorAtRenderIsNotRaisedByTheTemplate() {
    ChatTemplate t = ChatTemplate.compile(
        "ok\n{% if messages[0].role == 'tool' %}{{ messages[0].content.zfill(2) }}{% endif %}", "origin.json", Map.of());
    TemplateException e = assertThrows(TemplateException.class,
        () -> t.render(new ChatInput(List.of(msg("tool", "x")), null, true, Map.of())));
    assertFalse(e.raisedByTemplate());
    assertTrue(e.getMessage().contains("origin.json"), e.getMessage());
    assertTrue(e.getMessage().contains("template line 2"), e.getMessage());
  }

  @Test
  void aSyntaxErrorIsRefusedAtCompileNamingTheLine() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ChatTemplate.compile("a\n{{ 1 + }}", "/models/x/tokenizer_config.json", Map.of()));
    assertTrue(e.getMessage().contains("template line 2"), e.getMessage());
    assertTrue(e.getMessage().contains("/models/x/tokenizer_config.json"), e.getMessage());
  }

  @Test
  void aTemplateFailingOnAPlainConversationIsRefusedAtCompile() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ChatTemplate.compile("line1\nline2\n{{ messages[0].content.zfill(3) }}", "test", Map.of()));
    assertTrue(e.getMessage().contains("template line 3"), e.getMessage());
  }

  /**
   * BUG (ChatTemplate.compile): parse errors jinjava reports while parsing (a missing end tag, an unknown tag) go
   * through {@code failOn(..., false)} outside the try block and escape as {@link TemplateException}
   * (raisedByTemplate false), not as the {@link IllegalArgumentException} the javadoc promises; so
   * {@code ModelTokenizer.load} also throws TemplateException for such a model.
   */
  @Test
  void parseErrorsAreIllegalArgumentExceptions() {
    IllegalArgumentException missingEnd = assertThrows(IllegalArgumentException.class,
        () -> ChatTemplate.compile("line1\n{% if true %}\nx", "test", Map.of()));
    assertTrue(missingEnd.getMessage().contains("template line 2"), missingEnd.getMessage());
    IllegalArgumentException unknownTag = assertThrows(IllegalArgumentException.class,
        () -> ChatTemplate.compile("line1\nline2\n{% frobnicate %}", "test", Map.of()));
    assertTrue(unknownTag.getMessage().contains("template line 3"), unknownTag.getMessage());
  }

  @Test
  void parseErrorsAreRefusedAtCompileNamingTheLine() {
    // what the code does today (see parseErrorsAreIllegalArgumentExceptions): refused, the line named
    RuntimeException e = assertThrows(RuntimeException.class,
        () -> ChatTemplate.compile("line1\n{% if true %}\nx", "test", Map.of()));
    assertTrue(e.getMessage().contains("template line 2"), e.getMessage());
  }

  /**
   * DIVERGENCE: templates Jinja2 refuses at compile are accepted and render silently: an unknown filter
   * ({@code {{ 'abc' | nosuchfilter }}} renders {@code ""}), an unclosed {@code {{}, a stray {@code {% endfor %}}.
   */
  @Disabled("DIVERGENCE: unknown filters, unclosed expressions and stray end tags are accepted")
  @Test
  void templatesJinja2RefusesAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> ChatTemplate.compile("{{ 'abc' | nosuchfilter }}", "t", Map.of()));
    assertThrows(IllegalArgumentException.class, () -> ChatTemplate.compile("a\n{{ x ", "t", Map.of()));
    assertThrows(IllegalArgumentException.class, () -> ChatTemplate.compile("a\n\n{% endfor %}", "t", Map.of()));
  }

  @Test
  void toJsonWithIndentSortKeysAndSeparators() {
    Map<String, Object> params = new LinkedHashMap<>();
    params.put("z", 1);
    params.put("a", Arrays.asList(1, 2.5, null, true));
    params.put("m", Map.of());
    Map<String, Object> function = new LinkedHashMap<>();
    function.put("name", "f");
    function.put("description", "d");
    function.put("parameters", params);
    Map<String, Object> tool = new LinkedHashMap<>();
    tool.put("type", "function");
    tool.put("function", function);
    List<Object> tools = List.of(tool);
    String out = render("{{ messages[0] | tojson }}|{{ tools | tojson(indent=2) }}|"
        + "{{ tools | tojson(indent=2, sort_keys=true) }}|{{ tools|tojson(sort_keys=true) }}", MESSAGES, tools,
        Map.of(), Map.of());
    assertEquals("{\"role\": \"system\", \"content\": \"  sys\\n\"}|[\n  {\n    \"type\": \"function\",\n"
        + "    \"function\": {\n      \"name\": \"f\",\n      \"description\": \"d\",\n      \"parameters\": {\n"
        + "        \"z\": 1,\n        \"a\": [\n          1,\n          2.5,\n          null,\n          true\n"
        + "        ],\n        \"m\": {}\n      }\n    }\n  }\n]|[\n  {\n    \"function\": {\n"
        + "      \"description\": \"d\",\n      \"name\": \"f\",\n      \"parameters\": {\n        \"a\": [\n"
        + "          1,\n          2.5,\n          null,\n          true\n        ],\n        \"m\": {},\n"
        + "        \"z\": 1\n      }\n    },\n    \"type\": \"function\"\n  }\n]|[{\"function\": {\"description\": "
        + "\"d\", \"name\": \"f\", \"parameters\": {\"a\": [1, 2.5, null, true], \"m\": {}, \"z\": 1}}, "
        + "\"type\": \"function\"}]", out);
    Map<String, Object> t2 = new LinkedHashMap<>();
    t2.put("a", List.of(1, 2));
    t2.put("b", "x");
    assertEquals("[{\"a\":[1,2],\"b\":\"x\"}]", render("{{ tools | tojson(separators=(',', ':')) }}", MESSAGES,
        List.of(t2), Map.of(), Map.of()));
  }

  @Test
  void toJsonEscapesMessageText() {
    String content = "é\"\\\n\r\t\b\f\u0001\u001f\u007f ☃ 😀 \u2028";
    assertEquals("\"é\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\u007f ☃ 😀 \u2028\"",
        render("{{ messages[0].content | tojson }}", List.of(msg("user", content)), null, Map.of(), Map.of()));
  }

  @Test
  void loopVariables() {
    assertEquals("0F,1,2L,", render("{% for m in messages %}{{ loop.index0 }}{% if loop.first %}F{% endif %}"
        + "{% if loop.last %}L{% endif %},{% endfor %}"));
    assertEquals("1/3/2,2/3/1,3/3/0,", render("{% for m in messages %}{{ loop.index }}/{{ loop.length }}/"
        + "{{ loop.revindex0 }},{% endfor %}"));
  }

  @Test
  void isStringDefinedNone() {
    List<Map<String, Object>> messages = List.of(msg("user", "text"), msg("assistant", null),
        msg("tool", List.of(Map.of("type", "text", "text", "t"))));
    // jinja2: 'SRD!|NR|RD!|nu'
    String out = render("{% for m in messages %}{% if m.content is string %}S{% endif %}"
        + "{% if m.content is none %}N{% endif %}{% if m.role is defined %}R{% endif %}"
        + "{% if m.content is defined and m.content is not none %}D{% endif %}"
        + "{% if m.tool_calls is defined %}T{% endif %}{% if m.content is not none %}!{% endif %}|{% endfor %}"
        + "{% if none is none %}n{% endif %}{% if 1 is string %}s{% endif %}{% if nothing is not defined %}u{% endif %}",
        messages, null, Map.of(), Map.of());
    assertEquals("SRD!|NR|RD!|nu", out);
  }

  /**
   * DIVERGENCE: a key whose value is None is defined in Jinja2 ({@code {'content': None}}: {@code content is
   * defined}); jinjava says it is not, so e.g. a tool without parameters ({@code parameters: null}, as OpenAiChat
   * normalizes it) fails {@code tool.function.parameters is defined}.
   */
  @Disabled("DIVERGENCE: a None-valued key `is defined` is false in jinjava, true in Jinja2")
  @Test
  void noneValuesAreDefined() {
    assertEquals("ND", render("{% if messages[0].content is none %}N{% endif %}{% if messages[0].content is defined %}D"
        + "{% endif %}", List.of(msg("assistant", null)), null, Map.of(), Map.of()));
  }

  /** DIVERGENCE: an undefined attribute {@code is none} in jinjava; in Jinja2 Undefined is not None. */
  @Disabled("DIVERGENCE: `undefined is none` is true in jinjava, false in Jinja2")
  @Test
  void undefinedIsNotNone() {
    assertEquals("", render("{% if messages[0].missing is none %}N{% endif %}"));
    assertEquals("!", render("{% if messages[0].missing is not none %}!{% endif %}"));
  }

  /**
   * DIVERGENCE: Python prints {@code True}/{@code False}/{@code None} (also inside lists); jinjava prints
   * {@code true}/{@code false} and nothing for None, so a template printing a boolean or a None field (a tool
   * without a description, {@code {{ tool.function.description }}}) renders differently.
   */
  @Disabled("DIVERGENCE: booleans render as true/false and None as empty (Jinja2: True/False/None)")
  @Test
  void pythonLiteralsRenderAsPython() {
    assertEquals("True False", render("{{ true }} {{ false }}"));
    assertEquals("[None]", render("[{{ none }}]"));
    assertEquals("[1, 'a', None, True]", render("{{ [1, 'a', none, true] }}"));
    assertEquals("a1None", render("{{ 'a' ~ 1 ~ none }}"));
    assertEquals("1.5e+16", render("{{ 1.5e16 }}"));
  }

  /**
   * BUG (ChatTemplate.compile: {@code withUsePyishObjectMapper(true)}): a string printed with {@code {{ }}} has its
   * control characters other than \t \n \f \r replaced by JSON escape text: a tool result with an ANSI colour code
   * ({@code "\u001b[31mred"}) renders as the 11 characters {@code \u001B[31mred}, {@code \b} as the two characters
   * {@code \b}. Jinja2 writes the characters as they are. Verified: the same Jinjava config with
   * usePyishObjectMapper(false) prints them unchanged.
   */
  @Test
  void controlCharactersArePrintedAsThemselves() {
    for (String s : List.of("\u001b[31mred\u001b[0m", "a\u0000b", "a\u0008b", "a\u000bb", "a\u001cb")) {
      assertEquals(s, render("{{ messages[0].content }}", List.of(msg("tool", s)), null, Map.of(), Map.of()));
    }
  }

  @Test
  void printableTextIsPrintedAsItIs() {
    String s = "tab\t nl\n cr\r ff\f é 日本 😀 \u2028 \u00a0 \u007f";
    assertEquals(s, render("{{ messages[0].content }}", List.of(msg("user", s)), null, Map.of(), Map.of()));
  }

  @Test
  void specialTokensAreVariables() {
    Map<String, String> special = new HashMap<>();
    special.put("bos_token", "<s>");
    special.put("eos_token", null);
    assertEquals("<s>|undefined", render("{{ bos_token }}|{% if eos_token is defined %}defined{% else %}undefined"
        + "{% endif %}", MESSAGES, null, special, Map.of()));
  }

  /**
   * HF's apply_chat_template renders with {@code {**special_tokens_map, **kwargs}}: a request kwarg of the same name
   * overrides the special token. (The working tree's ChatTemplate.render does this; the committed one put the special
   * tokens last, so they overrode the kwargs.)
   */
  @Test
  void chatTemplateKwargsOverrideSpecialTokens() {
    Map<String, Object> kwargs = new LinkedHashMap<>();
    kwargs.put("bos_token", "<B>");
    kwargs.put("enable_thinking", false);
    assertEquals("<B>|off", render("{{ bos_token }}|{% if enable_thinking %}on{% else %}off{% endif %}", MESSAGES,
        null, Map.of("bos_token", "<s>"), kwargs));
    assertEquals("<s>|on", render("{{ bos_token }}|{% if enable_thinking is not defined or enable_thinking %}on"
        + "{% else %}off{% endif %}", MESSAGES, null, Map.of("bos_token", "<s>"), Map.of()));
  }

  @Test
  void chatTemplateKwargsDoNotOverrideTheConversation() {
    Map<String, Object> kwargs = new LinkedHashMap<>();
    kwargs.put("messages", "not the conversation");
    kwargs.put("add_generation_prompt", false);
    kwargs.put("tools", "not the tools");
    ChatTemplate t = ChatTemplate.compile("{{ messages|length }}|{% if add_generation_prompt %}gen{% endif %}|"
        + "{{ tools|length }}", "test", Map.of());
    assertEquals("3|gen|1", t.render(new ChatInput(MESSAGES, List.of(Map.of("a", 1)), true, kwargs)));
  }

  @Test
  void addGenerationPromptAndToolsBindings() {
    ChatTemplate t = ChatTemplate.compile("{% if tools is defined %}T{{ tools|length }}{% endif %}"
        + "{% if add_generation_prompt %}G{% endif %}", "test", Map.of());
    assertEquals("G", t.render(new ChatInput(MESSAGES, null, true, Map.of())));
    assertEquals("T2", t.render(new ChatInput(MESSAGES, List.of(1, 2), false, Map.of())));
  }

  @Test
  void namespaceAndReversedLoop() {
    assertEquals("2-1", render("{% set ns = namespace(i=messages|length - 1, flag=false) %}"
        + "{{ ns.i }}{% if ns.flag %}True{% endif %}{% for m in messages %}{% set ns.i = ns.i - 1 %}{% endfor %}"
        + "{{ ns.i }}"));
    assertEquals("assistant,user,system,", render("{% for m in messages[::-1] %}{{ m.role }},{% endfor %}"));
  }

  @Test
  void strftimeNow() {
    String out = render("{{ strftime_now('%d %B %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %%') }}|"
        + "{{ strftime_now('%-d') }}");
    assertTrue(out.matches("\\d{2} [A-Z][a-z]+ \\d{4}\\|\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} %\\|\\d{1,2}"), out);
  }

  @Test
  void sourceIsKeptAsShipped() {
    String src = "{% for m in messages[::-1] %}{{ m.role }}{% endfor %}";
    assertEquals(src, ChatTemplate.compile(src, "test", Map.of()).source());
  }

  @Test
  void dictItemsKeepInsertionOrder() {
    Map<String, Object> tool = new LinkedHashMap<>();
    tool.put("b", 1);
    tool.put("a", "s");
    assertEquals("b=1;a=s;", render("{% for k, v in tools[0].items() %}{{ k }}={{ v }};{% endfor %}", MESSAGES,
        List.of(tool), Map.of(), Map.of()));
  }

  /**
   * Renders leave the shared global context as it was: jinjava records what each render resolves in every context
   * above it, which under the global one was a plain set written by concurrent renders (ChatTemplate.RenderContext).
   */
  @Test
  void rendersOnManyThreadsLeaveTheSharedGlobalContextAsItWas() throws Exception {
    ChatTemplate t = ChatTemplate.compile("{% for m in messages %}{{ m.role }}: {{ m.content.strip() }}"
        + "{% if m.content.startswith('x') %}!{% endif %};{% endfor %}", "test", Map.of());
    var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      List<java.util.concurrent.Future<String>> renders = new java.util.ArrayList<>();
      for (int i = 0; i < 200; i++) {
        String text = "x" + i;
        renders.add(pool.submit(() -> t.render(new ChatInput(List.of(Map.of("role", "user", "content", text)), null,
            true, Map.of()))));
      }
      for (int i = 0; i < renders.size(); i++) {
        assertEquals("user: x" + i + "!;", renders.get(i).get());
      }
    } finally {
      pool.shutdown();
    }
    assertTrue(t.globalContext().getResolvedValues().isEmpty(), t.globalContext().getResolvedValues().toString());
    assertTrue(t.globalContext().getResolvedExpressions().isEmpty(),
        t.globalContext().getResolvedExpressions().toString());
  }
}
