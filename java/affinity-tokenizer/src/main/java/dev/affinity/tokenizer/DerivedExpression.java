package dev.affinity.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An expression of a template's {@code if}, {@code elif} or {@code set} tag that only adds, subtracts and compares whole
 * numbers read from a loop's counters, a namespace's attributes and the number of messages:
 * {@code loop.index0 > ns.last_query_index} and {@code (messages|length - 1) - loop.index0} in Qwen3's template.
 * {@link TemplateSource} hands such a tag's expression to {@code _affinity_derived_} ({@link ChatTemplate#derived}),
 * which evaluates it here, and in a render that reuses the last one's loop iterations ({@link MemoSession}) makes its
 * value the iteration's read, not the numbers it was computed from: the test "is this answer after the last question"
 * gives the same answer for every earlier answer when a new question moves the last question's index, and the index
 * a loop over the messages reversed computes for a message is the same when new messages come before it in the loop.
 *
 * <p>The grammar: {@code cmp := sum [(==|!=|<|<=|>|>=) sum]}, {@code sum := term ((+|-) term)*},
 * {@code term := digits | loop.NAME | NAME.NAME | messages|length | ( sum )}. Where a value is not a whole number
 * (an undefined attribute, a string, a map rather than a namespace), the caller evaluates the expression's text as
 * jinjava would have, so the value is always jinjava's: {@code Long} for a sum (jinjava's arithmetic on integers),
 * {@code Boolean} for a comparison. Immutable.
 */
final class DerivedExpression {
  private static final int MAX_CACHED = 1024;
  private static final Map<String, DerivedExpression> PARSED = new ConcurrentHashMap<>();

  /** One operand or operation. */
  sealed interface Term {}

  record Literal(long value) implements Term {}

  /** {@code loop.NAME}: one of the counters {@link RenderMemo#loopAttribute} answers. */
  record LoopCounter(String attribute) implements Term {}

  /** {@code VAR.NAME}, where VAR is the template's namespace (index {@code slot} of {@link #variables}). */
  record NamespaceAttribute(int slot, String variable, String attribute) implements Term {}

  /** {@code messages|length}. */
  record MessageCount() implements Term {}

  record Sum(char op, Term left, Term right) implements Term {}

  record Compare(String op, Term left, Term right) implements Term {}

  /** Where the operands come from in one evaluation; null from any of them: not a whole number, evaluate the text. */
  interface Operands {
    Object loopCounter(String attribute);

    Object namespaceAttribute(int slot, String attribute);

    Object messageCount();
  }

  private final String text;
  private final Term root;
  private final List<String> variables;
  private final List<Term> operands;

  private DerivedExpression(String text, Term root, List<String> variables) {
    this.text = text;
    this.root = root;
    this.variables = List.copyOf(variables);
    this.operands = List.copyOf(operandsOf(root, new ArrayList<>()));
  }

  /** The expression as written. */
  String text() {
    return text;
  }

  /** The namespace variables it reads, in slot order. */
  List<String> variables() {
    return variables;
  }

  /** The parsed expression, or null when {@code text} is not of the grammar. */
  static DerivedExpression parse(String text) {
    Parser p = new Parser(text);
    try {
      Term t = p.comparison();
      p.skipSpace();
      if (p.at != text.length()) {
        return null;
      }
      DerivedExpression d = new DerivedExpression(text, t, p.variables);
      return d.operands.isEmpty() ? null : d;
    } catch (IllegalStateException e) {
      return null;
    }
  }

  /** {@link #parse} through a cache (a template's few expressions; a render evaluates them many times). */
  static DerivedExpression of(String text) {
    DerivedExpression d = PARSED.get(text);
    if (d == null) {
      d = parse(text);
      if (d == null) {
        throw new IllegalArgumentException("not a derived expression: " + text);
      }
      if (PARSED.size() < MAX_CACHED) {
        PARSED.put(text, d);
      }
    }
    return d;
  }

  /** Its value with these operands: a {@code Long} or a {@code Boolean}; null where an operand is not whole. */
  Object evaluate(Operands operands) {
    if (root instanceof Compare c) {
      Long l = sum(c.left(), operands);
      Long r = l == null ? null : sum(c.right(), operands);
      if (r == null) {
        return null;
      }
      int cmp = Long.compare(l, r);
      return switch (c.op()) {
        case "==" -> cmp == 0;
        case "!=" -> cmp != 0;
        case "<" -> cmp < 0;
        case "<=" -> cmp <= 0;
        case ">" -> cmp > 0;
        default -> cmp >= 0;
      };
    }
    return sum(root, operands);
  }

  private static Long sum(Term t, Operands o) {
    if (t instanceof Literal l) {
      return l.value();
    }
    if (t instanceof Sum s) {
      Long l = sum(s.left(), o);
      Long r = l == null ? null : sum(s.right(), o);
      return r == null ? null : s.op() == '+' ? l + r : l - r;
    }
    Object v;
    if (t instanceof LoopCounter c) {
      v = o.loopCounter(c.attribute());
    } else if (t instanceof NamespaceAttribute a) {
      v = o.namespaceAttribute(a.slot(), a.attribute());
    } else {
      v = o.messageCount();
    }
    return whole(v);
  }

  /** A whole number as jinjava's arithmetic takes it (not a boolean, not a float); null otherwise. */
  private static Long whole(Object v) {
    if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      return ((Number) v).longValue();
    }
    return null;
  }

  /** The loop counters, namespace attributes and message counts it reads, in order, for the callers' checks. */
  List<Term> operands() {
    return operands;
  }

  private static List<Term> operandsOf(Term t, List<Term> out) {
    if (t instanceof Sum s) {
      operandsOf(s.left(), out);
      operandsOf(s.right(), out);
    } else if (t instanceof Compare c) {
      operandsOf(c.left(), out);
      operandsOf(c.right(), out);
    } else if (!(t instanceof Literal)) {
      out.add(t);
    }
    return out;
  }

  private static final class Parser {
    private final String s;
    private final List<String> variables = new ArrayList<>();
    private int at;

    Parser(String s) {
      this.s = s;
    }

    Term comparison() {
      Term left = sum();
      skipSpace();
      for (String op : new String[] {"==", "!=", "<=", ">=", "<", ">"}) {
        if (s.startsWith(op, at)) {
          at += op.length();
          return new Compare(op, left, sum());
        }
      }
      return left;
    }

    Term sum() {
      Term t = term();
      while (true) {
        skipSpace();
        if (at < s.length() && (s.charAt(at) == '+' || s.charAt(at) == '-')) {
          char op = s.charAt(at++);
          t = new Sum(op, t, term());
        } else {
          return t;
        }
      }
    }

    Term term() {
      skipSpace();
      if (at >= s.length()) {
        throw new IllegalStateException();
      }
      char c = s.charAt(at);
      if (c == '(') {
        at++;
        Term t = sum();
        skipSpace();
        expect(')');
        return t;
      }
      if (c >= '0' && c <= '9') {
        int start = at;
        while (at < s.length() && Character.isDigit(s.charAt(at))) {
          at++;
        }
        if (at - start > 9 || at < s.length() && (Character.isLetter(s.charAt(at)) || s.charAt(at) == '.')) {
          throw new IllegalStateException();  // a float, 1e3, a long literal: jinjava's, not ours
        }
        return new Literal(Long.parseLong(s.substring(start, at)));
      }
      String name = name();
      if (name.equals("messages")) {
        skipSpace();
        expect('|');
        skipSpace();
        if (!name().equals("length")) {
          throw new IllegalStateException();
        }
        return new MessageCount();
      }
      expect('.');
      String attribute = name();
      if (name.equals("loop")) {
        if (!List.of("index", "index0", "length", "revindex", "revindex0").contains(attribute)) {
          throw new IllegalStateException();
        }
        return new LoopCounter(attribute);
      }
      if (isKeyword(name) || isKeyword(attribute)) {
        throw new IllegalStateException();
      }
      int slot = variables.indexOf(name);
      if (slot < 0) {
        slot = variables.size();
        variables.add(name);
      }
      return new NamespaceAttribute(slot, name, attribute);
    }

    private static boolean isKeyword(String n) {
      return switch (n) {
        case "and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "True", "False", "None" -> true;
        default -> false;
      };
    }

    String name() {
      skipSpace();
      int start = at;
      while (at < s.length() && (Character.isLetterOrDigit(s.charAt(at)) || s.charAt(at) == '_')) {
        at++;
      }
      if (at == start || Character.isDigit(s.charAt(start))) {
        throw new IllegalStateException();
      }
      String n = s.substring(start, at);
      // a call, an index or a further attribute is not an operand of the grammar
      if (at < s.length() && (s.charAt(at) == '(' || s.charAt(at) == '[')) {
        throw new IllegalStateException();
      }
      return n;
    }

    void expect(char c) {
      if (at >= s.length() || s.charAt(at) != c) {
        throw new IllegalStateException();
      }
      at++;
    }

    void skipSpace() {
      while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
        at++;
      }
    }
  }
}
