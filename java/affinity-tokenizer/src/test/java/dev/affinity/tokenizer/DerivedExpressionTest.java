package dev.affinity.tokenizer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link DerivedExpression}: the grammar it takes, and a property test that a tag handed to it gives what jinjava gives
 * for the same expression in a print tag (which is not rewritten), for random expressions of the grammar over random
 * operands (whole numbers, and values it leaves to jinjava: floats, strings, booleans, none, undefined), with and
 * without the reuse of the last render's iterations.
 */
class DerivedExpressionTest {

  @ParameterizedTest
  @ValueSource(strings = {"loop.index0 > ns.last_query_index", "(messages|length - 1) - loop.index0",
      "messages | length - 1", "ns.a + 2 - ns.b <= loop.revindex0", "((loop.index))", "ns.a == 0", "x.y != z.w + 1"})
  void takes(String text) {
    assertNotNull(DerivedExpression.parse(text), text);
  }

  @ParameterizedTest
  @ValueSource(strings = {"1 + 2", "loop.first", "loop.cycle", "loop.index0 > 1.5", "ns.a > 1 and ns.b",
      "m.content|length > 3", "ns.a.b > 1", "-ns.a", "ns.a * 2", "ns.a > ns.b > 0", "messages|length|string",
      "messages[0] == 1", "ns.f(1) > 0", "ns.a > 'x'", "ns.true > 0", "ns.a in ns.b", "loop.index0 > 1e3",
      "ns.a > 12345678901", "(ns.a", "ns.a)", ""})
  void refuses(String text) {
    assertNull(DerivedExpression.parse(text), text);
  }

  @Test
  void ofRefusesWhatItCannotParse() {
    assertThrows(IllegalArgumentException.class, () -> DerivedExpression.of("ns.a and ns.b"));
  }

  private static final String[] OPERANDS = {"loop.index0", "loop.index", "loop.length", "loop.revindex",
      "loop.revindex0", "ns.a", "ns.b", "other.c", "messages|length", "0", "1", "3"};
  private static final String[] VALUES = {"0", "1", "2", "-3", "7", "1.5", "'x'", "true", "none", "[1]"};

  private static String sum(Random r, int depth) {
    String t = depth > 0 && r.nextInt(4) == 0 ? "(" + sum(r, depth - 1) + ")" : OPERANDS[r.nextInt(OPERANDS.length)];
    int more = r.nextInt(3);
    for (int i = 0; i < more; i++) {
      t += (r.nextBoolean() ? " + " : " - ") + OPERANDS[r.nextInt(OPERANDS.length)];
    }
    return t;
  }

  private static String expression(Random r) {
    String[] ops = {"==", "!=", "<", "<=", ">", ">="};
    return r.nextInt(3) == 0 ? sum(r, 2) : sum(r, 2) + " " + ops[r.nextInt(ops.length)] + " " + sum(r, 2);
  }

  private static String render(ChatTemplate t, List<Map<String, Object>> messages, RenderMemo[] memo) {
    try {
      ChatTemplate.Rendered out = t.render(new ChatInput(messages, null, true, Map.of()), memo[0]);
      memo[0] = out.memo();
      return out.text();
    } catch (TemplateException e) {
      return "error";
    }
  }

  @Test
  void aTagHandedToItGivesWhatJinjavaGivesForTheExpression() {
    Random r = new Random(47);
    int handed = 0;
    for (int n = 0; n < 300; n++) {
      String e = expression(r);
      String ns = "{% set ns = namespace(a=" + VALUES[r.nextInt(VALUES.length)] + ", b="
          + VALUES[r.nextInt(VALUES.length)] + ") %}" + (r.nextBoolean() ? "{% set other = namespace(c="
          + VALUES[r.nextInt(VALUES.length)] + ") %}" : "");
      String reversed = r.nextBoolean() ? "messages[::-1]" : "messages";
      String write = r.nextInt(3) == 0 ? "{% set ns.a = loop.index0 %}" : "";  // the namespace written in the loop
      String jinjava = ns + "{% for m in " + reversed + " %}{{ m.content }}:{{ " + e + " }}/"
          + "{{ 'T' if (" + e + ") else 'F' }};" + write + "{% endfor %}";
      String handedOver = ns + "{% for m in " + reversed + " %}{{ m.content }}:{% set v = " + e + " %}{{ v }}/"
          + "{% if " + e + " %}T{% else %}F{% endif %};" + write + "{% endfor %}";
      ChatTemplate plain;
      ChatTemplate derived;
      try {
        plain = ChatTemplate.compile(jinjava, "plain", Map.of());
        derived = ChatTemplate.compile(handedOver, "derived", Map.of());
      } catch (IllegalArgumentException refused) {
        assertThrows(IllegalArgumentException.class, () -> ChatTemplate.compile(jinjava, "plain", Map.of()), e);
        continue;
      }
      if (TemplateSource.rewrite(handedOver).contains(TemplateSource.DERIVED)) {
        handed++;
      }
      RenderMemo[] memoPlain = {null};
      RenderMemo[] memoDerived = {null};
      List<Map<String, Object>> messages = new ArrayList<>();
      for (int turn = 0; turn < 5; turn++) {
        messages.add(Map.of("role", turn % 2 == 0 ? "user" : "assistant", "content", "m" + turn));
        String want = render(plain, messages, memoPlain);
        assertEquals(want, render(derived, messages, memoDerived), e + " turn " + turn);
        assertEquals(want, render(derived, messages, new RenderMemo[1]), e + " turn " + turn + " (whole)");
      }
    }
    assertEquals(true, handed > 200, "expressions handed over: " + handed);
  }
}
