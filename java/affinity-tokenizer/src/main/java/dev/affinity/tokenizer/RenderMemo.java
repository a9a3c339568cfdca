package dev.affinity.tokenizer;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.util.ForLoop;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What one render of a conversation did in each of its template's top-level {@code for} loops, iteration by iteration,
 * so that the conversation's next render reuses the iterations whose inputs are unchanged ({@link MemoSession}).
 *
 * <p>An iteration is a function of what it reads: its item, the loop variables it reads ({@code loop.index0},
 * {@code loop.last}, ...), the template variables it reads from outside the loop ({@code ns.last_query_index},
 * {@code messages[loop.index0 + 1]}, {@code bos_token}), and what earlier iterations left in the loop's scope. Each
 * iteration keeps all of that as it was read, with its output and what it wrote (to the loop's scope and to
 * namespaces); the next render takes an iteration's output and writes only where every one of those reads gives the
 * same value again, and renders it otherwise. Immutable once made; shared by the renders that reuse it.
 */
public final class RenderMemo {
  private final ChatTemplate template;
  private final IdentityHashMap<TagNode, List<Iteration[]>> loops;
  private final long bytes;
  private final String sameAs;
  private final int sameUpTo;

  /**
   * @param sameAs a text the render's text equals up to {@code sameUpTo} chars (the last render's, whose iterations
   *     it replayed at the same offsets), or null
   */
  RenderMemo(ChatTemplate template, IdentityHashMap<TagNode, List<Iteration[]>> loops, String sameAs, int sameUpTo) {
    this.template = template;
    this.loops = loops;
    this.sameAs = sameAs;
    this.sameUpTo = sameUpTo;
    long b = 64;
    for (List<Iteration[]> runs : loops.values()) {
      for (Iteration[] run : runs) {
        b += 16 + 8L * run.length;
        for (Iteration it : run) {
          b += it == null ? 0 : it.bytes();
        }
      }
    }
    this.bytes = b;
  }

  /** The iterations of the {@code occurrence}-th run of loop {@code node} (null: none kept), for {@code t}'s renders. */
  Iteration[] run(ChatTemplate t, TagNode node, int occurrence) {
    if (t != template) {
      return null;
    }
    List<Iteration[]> runs = loops.get(node);
    return runs == null || occurrence >= runs.size() ? null : runs.get(occurrence);
  }

  /**
   * What the memo takes in memory beyond the render's text (outputs not within it at two bytes a char, its reads and
   * writes), an estimate.
   */
  public long bytes() {
    return bytes;
  }

  /**
   * How many leading chars of the render's text are known to equal {@code text}'s without comparing them: the
   * leading iterations of its first loop replayed the last render's at the same offsets in {@code text} (the last
   * render's text, the one the conversation kept), and the text before the loop was compared. 0 for any other text.
   */
  int sameAs(String text) {
    return text == sameAs ? sameUpTo : 0;
  }

  /** How long the outputs of a run's kept iterations are together (0 for none). */
  static int outputLength(Iteration[] run) {
    long n = 0;
    if (run != null) {
      for (Iteration it : run) {
        n += it == null ? 0 : it.end() - it.start();
      }
    }
    return (int) Math.min(n, Integer.MAX_VALUE - 1024);
  }

  /** A value read in an iteration, as it compares across renders: a namespace by its order of creation. */
  static Object norm(Object value) {
    if (value instanceof MemoSession.MemoNamespace ns) {
      return new NamespaceRef(ns.ordinal);
    }
    if (value instanceof MemoSession.MessageList) {
      return MessagesRef.MESSAGES;
    }
    return value;
  }

  /** Whether a value read now is the one read before ({@link #norm normalized} both). */
  static boolean same(Object before, Object now) {
    return before == now || equalInOrder(before, norm(now));
  }

  /**
   * Equal, maps with their keys in the same order (a map's {@code equals} ignores the order, which {@code tojson} and
   * a loop over its items print).
   */
  static boolean equalInOrder(Object a, Object b) {
    if (a == b) {
      return true;
    }
    if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
      if (x.size() != y.size()) {
        return false;
      }
      var i = x.entrySet().iterator();
      var j = y.entrySet().iterator();
      while (i.hasNext()) {
        var e = i.next();
        var f = j.next();
        if (!Objects.equals(e.getKey(), f.getKey()) || !equalInOrder(e.getValue(), f.getValue())) {
          return false;
        }
      }
      return true;
    }
    if (a instanceof List<?> x && b instanceof List<?> y) {
      if (x.size() != y.size()) {
        return false;
      }
      for (int k = 0; k < x.size(); k++) {
        if (!equalInOrder(x.get(k), y.get(k))) {
          return false;
        }
      }
      return true;
    }
    return Objects.equals(a, b);
  }

  /** A value a replayed iteration may hand the next render as it is: one nothing can change. */
  static boolean immutable(Object v) {
    return v == null || v instanceof String || v instanceof Number || v instanceof Boolean || v instanceof Character
        || v instanceof com.hubspot.jinjava.interpret.NullValue;
  }

  /** The render's {@code messages} (its reads are kept one by one). */
  enum MessagesRef { MESSAGES }

  /** The {@code ordinal}-th namespace the render made. */
  record NamespaceRef(int ordinal) {}

  /** One read an iteration's output depends on. */
  sealed interface Read {
    /** Whether it gives the same value in {@code s}'s render, at loop position {@code loop}. */
    boolean holds(MemoSession s, ForLoop loop);
  }

  /** A template variable from outside the loop. */
  record NameRead(String name, Object value) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      return same(value, s.outside(name));
    }
  }

  /** A variable of the loop itself ({@code loop.index0}, {@code loop.last}, ...). */
  record LoopRead(String attribute, Object value) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      return Objects.equals(value, loopAttribute(loop, attribute));
    }
  }

  /** {@code messages[index]}. */
  record MessageRead(int index, Object message) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      List<?> messages = s.messages().raw();
      return index < messages.size() && same(message, messages.get(index));
    }
  }

  /** How many messages there are ({@code messages|length}, an index out of range, iterating them). */
  record MessageCount(int count) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      return s.messages().raw().size() == count;
    }
  }

  /** An attribute of a namespace as it was before the iteration wrote it. */
  record NamespaceRead(int ordinal, String attribute, Object value) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      MemoSession.MemoNamespace ns = s.namespace(ordinal);
      return ns != null && same(value, ns.rawGet(attribute));
    }
  }

  /**
   * A {@link DerivedExpression}'s value, computed again from the loop's counters at its position, the namespaces'
   * attributes (namespace {@code ordinals[slot]} for the expression's variable {@code slot}) and the number of messages.
   */
  record DerivedRead(DerivedExpression expression, int[] ordinals, Object value) implements Read {
    @Override
    public boolean holds(MemoSession s, ForLoop loop) {
      Object now = expression.evaluate(new DerivedExpression.Operands() {
        @Override
        public Object loopCounter(String attribute) {
          return loopAttribute(loop, attribute);
        }

        @Override
        public Object namespaceAttribute(int slot, String attribute) {
          MemoSession.MemoNamespace ns = s.namespace(ordinals[slot]);
          return ns == null ? null : ns.rawGet(attribute);
        }

        @Override
        public Object messageCount() {
          return s.messages().raw().size();
        }
      });
      return value.equals(now);
    }
  }

  /** An attribute of a namespace the iteration left. */
  record NamespaceWrite(int ordinal, String attribute, Object value) {}

  /**
   * One iteration: its item, what the loop's scope held when it began (besides the item and {@code loop}), what it
   * read from outside, its output, and what it left in the scope and in namespaces.
   */
  record Iteration(Object item, Object itemSource, String[] carriedNames, Object[] carriedValues, Read[] reads,
      String source, int start, int end, boolean shared, String[] writtenNames, Object[] writtenValues,
      NamespaceWrite[] namespaceWrites) {

    /**
     * An iteration whose output is {@code output}, a string of its own; {@code itemSource} what its item was made from
     * ({@link ChatInput#sources}), or null.
     */
    Iteration(Object item, Object itemSource, String[] carriedNames, Object[] carriedValues, Read[] reads,
        String output, String[] writtenNames, Object[] writtenValues, NamespaceWrite[] namespaceWrites) {
      this(item, itemSource, carriedNames, carriedValues, reads, output, 0, output == null ? 0 : output.length(),
          false, writtenNames, writtenValues, namespaceWrites);
    }

    /** Appends its output. */
    void appendOutput(StringBuilder out) {
      out.append(source, start, end);
    }

    /** The same iteration, its output the chars of {@code text} from {@code at} (the render's text: kept anyway). */
    Iteration within(String text, int at) {
      return new Iteration(item, itemSource, carriedNames, carriedValues, reads, text, at, at + (end - start), true,
          writtenNames, writtenValues, namespaceWrites);
    }

    /** The same iteration with its output in a string of its own (it no longer keeps another render's text). */
    Iteration owned() {
      return !shared ? this : new Iteration(item, itemSource, carriedNames, carriedValues, reads,
          source.substring(start, end), writtenNames, writtenValues, namespaceWrites);
    }

    /** A run's first item alone, for a run that kept nothing else: never reused. */
    static Iteration firstItemOnly(Object item) {
      return new Iteration(item, null, new String[0], new Object[0], new Read[0], null, new String[0], new Object[0],
          new NamespaceWrite[0]);
    }

    /**
     * Whether the iteration at the loop's position, with {@code item} (made from {@code nowSource}, or null) and the
     * scope {@code scope}, is this one.
     */
    boolean holds(Object now, Object nowSource, String itemName, Context scope, MemoSession s, ForLoop loop) {
      if (source == null) {
        return false;
      }
      if (!(itemSource != null && itemSource == nowSource) && !same(item, now)) {
        return false;
      }
      Map<String, Object> held = scope.getScope();
      int others = held.size() - (held.containsKey(itemName) ? 1 : 0) - (held.containsKey("loop") ? 1 : 0);
      if (others != carriedNames.length) {
        return false;
      }
      for (int i = 0; i < carriedNames.length; i++) {
        if (!held.containsKey(carriedNames[i]) || !same(carriedValues[i], held.get(carriedNames[i]))) {
          return false;
        }
      }
      for (Read r : reads) {
        if (!r.holds(s, loop)) {
          return false;
        }
      }
      return true;
    }

    /** Leaves in the scope and the namespaces what the iteration left. */
    void replay(Context scope, MemoSession s) {
      for (int i = 0; i < writtenNames.length; i++) {
        scope.put(writtenNames[i], writtenValues[i]);
      }
      for (NamespaceWrite w : namespaceWrites) {
        s.namespace(w.ordinal()).rawPut(w.attribute(), w.value());
      }
    }

    long bytes() {
      return 96 + (source == null || shared ? 0 : 2L * (end - start))
          + 48L * (reads.length + carriedNames.length + writtenNames.length + namespaceWrites.length);
    }
  }

  /** The loop variables a template reads ({@link CallLookups} answers the same ones); null for any other. */
  static Object loopAttribute(ForLoop loop, String name) {
    return switch (name) {
      case "index" -> loop.getIndex();
      case "index0" -> loop.getIndex0();
      case "first" -> loop.isFirst();
      case "last" -> loop.isLast();
      case "length" -> loop.getLength();
      case "revindex" -> loop.getRevindex();
      case "revindex0" -> loop.getRevindex0();
      default -> null;
    };
  }
}
