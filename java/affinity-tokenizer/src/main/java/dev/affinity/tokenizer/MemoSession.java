package dev.affinity.tokenizer;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.lib.fn.Functions;
import com.hubspot.jinjava.objects.Namespace;
import com.hubspot.jinjava.objects.collections.PyList;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.util.ForLoop;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One render that reuses the iterations of the conversation's last render ({@link RenderMemo}) and records its own
 * for the next. The template's top-level {@code for} loops ({@link MemoForTag}) ask it for the last render's
 * iterations and record each iteration they render: every read that leaves the loop's scope (the render's context,
 * {@link Recording#name}), every loop variable read ({@link CallLookups}), every {@code messages[i]} and
 * {@code messages|length} ({@link MessageList}), every namespace attribute read before the iteration wrote it
 * ({@link MemoNamespace}). What the recording cannot see makes the iteration one that is never reused: a method
 * called on anything but a string or a plain read of a map or list ({@code list.append}, {@code loop.cycle}), a
 * namespace made inside it, {@code strftime_now}, an error. One per render, on the rendering thread.
 */
final class MemoSession implements AutoCloseable {
  private static final ThreadLocal<MemoSession> CURRENT = new ThreadLocal<>();

  private final ChatTemplate template;
  private final RenderMemo previous;
  private final MessageList messages;
  private final List<?> sources;
  private final Context outside;
  private final IdentityHashMap<TagNode, List<RenderMemo.Iteration[]>> loops = new IdentityHashMap<>();
  private final List<MemoNamespace> namespaces = new ArrayList<>();
  private final List<Run> runs = new ArrayList<>();
  private final IdentityHashMap<String, Integer> placed = new IdentityHashMap<>();
  private Recording recording;
  private boolean mutating;
  private int depth;
  private long reused;
  private long rendered;

  private MemoSession(ChatTemplate template, RenderMemo previous, List<?> messages, List<?> sources, Context outside) {
    this.template = template;
    this.previous = previous;
    this.messages = new MessageList(messages, this);
    this.sources = sources;
    this.outside = outside;
  }

  /**
   * Starts the render's session on this thread; {@code outside} is the render's own context, {@code sources} what
   * each message was made from ({@link ChatInput#sources}, null: unknown).
   */
  static MemoSession open(ChatTemplate template, RenderMemo previous, List<?> messages, List<?> sources,
      Context outside) {
    MemoSession s = new MemoSession(template, previous, messages, sources, outside);
    CURRENT.set(s);
    return s;
  }

  /** The session of the render on this thread, or null. */
  static MemoSession current() {
    return CURRENT.get();
  }

  @Override
  public void close() {
    CURRENT.remove();
  }

  /** What the render bound as {@code messages}. */
  MessageList messages() {
    return messages;
  }

  /**
   * What the {@code i}-th item of a loop over {@code items} was made from, where the items are the render's messages
   * (in order, or reversed) and the item is the message itself; null otherwise.
   */
  Object sourceOf(List<?> items, int i, Object item) {
    if (sources == null) {
      return null;
    }
    List<Object> raw = messages.raw();
    int at = items == messages ? i : items instanceof ReversedMessages && items.size() == raw.size()
        ? raw.size() - 1 - i : -1;
    return at >= 0 && at < raw.size() && raw.get(at) == item ? sources.get(at) : null;
  }

  /** The value of a template variable outside every loop's scope, as the render's context holds it now. */
  Object outside(String name) {
    return outside.get(name);
  }

  /** The render's own context (the template's top level). */
  Context outsideContext() {
    return outside;
  }

  /** The iteration being recorded, or null. */
  Recording recording() {
    return recording;
  }

  /** The {@code ordinal}-th namespace this render made, or null. */
  MemoNamespace namespace(int ordinal) {
    return ordinal < namespaces.size() ? namespaces.get(ordinal) : null;
  }

  /** Loop nesting: only loops outside every other loop are memoized. */
  int enterLoop() {
    return depth++;
  }

  void exitLoop() {
    depth--;
  }

  /** The index of {@code node}'s run about to start (a loop may run more than once in a render). */
  int nextRun(TagNode node) {
    return loops.computeIfAbsent(node, n -> new ArrayList<>()).size();
  }

  /** The last render's iterations of the {@code run}-th run of {@code node} (null: none). */
  RenderMemo.Iteration[] previousRun(TagNode node, int run) {
    return previous == null ? null : previous.run(template, node, run);
  }

  /** A run's iterations, its output and where each iteration's output starts in it. */
  void keepRun(TagNode node, List<RenderMemo.Iteration> iterations, String output, int[] starts,
      RenderMemo.Iteration[] before) {
    RenderMemo.Iteration[] run = iterations.toArray(new RenderMemo.Iteration[0]);
    loops.get(node).add(run);
    runs.add(new Run(run, iterations.size() == starts.length ? output : null, starts, before));
  }

  /**
   * Where the template's top level put the output {@code value} in the render's text (a top-level loop's output is
   * that string itself: {@link #memo} then finds the run's output there without searching the text for it).
   */
  void placed(String value, int offset) {
    placed.put(value, offset);
  }

  /** A run's iterations (the array the memo keeps), its output (null: not one per item) and their starts in it. */
  private record Run(RenderMemo.Iteration[] iterations, String output, int[] starts, RenderMemo.Iteration[] before) {}

  void countReused() {
    reused++;
  }

  void countRendered() {
    rendered++;
  }

  long reused() {
    return reused;
  }

  long rendered() {
    return rendered;
  }

  /** Starts recording an iteration whose loop's scope holds {@code scope} (the item named {@code itemName}). */
  Recording record(ForLoop loop, Context scope, String itemName) {
    recording = new Recording(loop, scope, itemName);
    return recording;
  }

  void stopRecording() {
    recording = null;
  }

  /**
   * The memo of this render, for the conversation's next. The outputs of a run that lies whole within the render's
   * text ({@code text}, kept with the memo: a top-level loop's output goes to it as it is) are read from there, not
   * kept twice; the others are kept as strings of their own. None where the render called something that may
   * have changed its input.
   */
  RenderMemo memo(String text) {
    if (mutating) {
      return null;
    }
    String sameAs = null;
    int sameUpTo = 0;
    Run first = null;
    int firstAt = Integer.MAX_VALUE;
    for (Run r : runs) {
      Integer p = r.output() == null ? null : placed.get(r.output());
      if (p != null && p < firstAt) {
        first = r;
        firstAt = p;
      }
    }
    if (first != null && first.before() != null) {
      // The text's first loop, iteration by iteration, against the last render's text (the source of the
      // iterations it replayed): an iteration replayed at the offset that text had it is that text there; another
      // is compared with it; the text before the loop is compared (the system prompt, the tools). The text is that
      // text up to the first difference, which the conversation's kept prompt then need not look for again.
      for (RenderMemo.Iteration b : first.before()) {
        if (b != null && b.shared()) {
          sameAs = b.source();
          break;
        }
      }
      if (sameAs != null) {
        sameUpTo = PromptPrefixes.mismatch(text, sameAs, 0, firstAt);
        RenderMemo.Iteration[] run = first.iterations();
        int end = firstAt + (first.output() == null ? 0 : first.output().length());
        for (int i = 0; i < run.length && sameUpTo == firstAt + first.starts()[i]; i++) {
          RenderMemo.Iteration it = run[i];
          int to = i + 1 < run.length ? firstAt + first.starts()[i + 1] : end;
          boolean replayedInPlace = it != null && i < first.before().length && it == first.before()[i]
              && it.shared() && it.source() == sameAs && it.start() == sameUpTo;
          sameUpTo = replayedInPlace ? to : PromptPrefixes.mismatch(text, sameAs, sameUpTo, to);
        }
      }
    }
    for (Run r : runs) {
      RenderMemo.Iteration[] run = r.iterations();
      Integer placedAt = r.output() == null ? null : placed.get(r.output());
      int at = r.output() == null ? -1 : placedAt != null ? placedAt : text.indexOf(r.output());
      for (int i = 0; i < run.length; i++) {
        if (run[i] != null && run[i].source() != null) {
          run[i] = at >= 0 ? run[i].within(text, at + r.starts()[i]) : run[i].owned();
        }
      }
    }
    return new RenderMemo(template, loops, sameAs, sameUpTo);
  }

  /** Hugging Face's {@code namespace(...)} (jinjava's), numbered in the order the render makes them. */
  public static Namespace namespace(Object... args) {
    Namespace made = Functions.createNamespace(args);
    MemoSession s = CURRENT.get();
    if (s == null) {
      return made;
    }
    if (s.recording != null) {
      s.recording.opaque();  // a namespace made inside an iteration: the next render's numbering would differ
    }
    MemoNamespace ns = new MemoNamespace(made.toMap(), s, s.namespaces.size());
    s.namespaces.add(ns);
    return ns;
  }

  /**
   * A call that may change what it is called on: the iteration being recorded is never reused, and a call on a map or
   * a list (perhaps one that an earlier iteration's recorded read still refers to) leaves no memo at all.
   */
  void impureCall(Object base) {
    if (recording != null) {
      recording.opaque();
    }
    if (base instanceof Map<?, ?> || base instanceof List<?>) {
      mutating = true;
    }
  }

  /** Marks the iteration being recorded, if any, as one that is never reused. */
  static void opaqueCall() {
    MemoSession s = CURRENT.get();
    if (s != null && s.recording != null) {
      s.recording.opaque();
    }
  }

  /**
   * A {@link DerivedExpression}'s value in the render on this thread, its operands looked up in {@code context} as
   * jinjava would; null where jinjava must evaluate its text: an operand not a whole number, {@code loop} not a for
   * loop, a variable not a namespace or the messages not a list, and in an iteration being recorded, an operand it
   * could not compare in the next render (another loop's counter, a namespace or the messages not the render's own,
   * an attribute the iteration already wrote). In an iteration being recorded the value is one read, and the operands
   * are not.
   */
  static Object derived(DerivedExpression d, Context context) {
    MemoSession s = CURRENT.get();
    Recording r = s == null ? null : s.recording;
    ForLoop loop = null;
    Object[] namespaces = new Object[d.variables().size()];
    List<?> messages = null;
    for (DerivedExpression.Term t : d.operands()) {
      if (t instanceof DerivedExpression.LoopCounter) {
        if (loop == null) {
          if (!(context.get("loop") instanceof ForLoop f) || r != null && f != r.loop) {
            return null;
          }
          loop = f;
        }
      } else if (t instanceof DerivedExpression.NamespaceAttribute a) {
        Object ns = namespaces[a.slot()];
        if (ns == null) {
          ns = context.get(a.variable());
          namespaces[a.slot()] = ns;
        }
        boolean comparable = r != null
            ? ns instanceof MemoNamespace m && s.outside(a.variable()) == m && !r.wrote(m, a.attribute())
            : ns instanceof Namespace;
        if (!comparable) {
          return null;
        }
      } else if (messages == null) {
        if (!(context.get("messages") instanceof List<?> m) || r != null && m != s.messages()) {
          return null;
        }
        messages = m;
      }
    }
    ForLoop counters = loop;
    List<?> list = messages;
    Object value = d.evaluate(new DerivedExpression.Operands() {
      @Override
      public Object loopCounter(String attribute) {
        return RenderMemo.loopAttribute(counters, attribute);
      }

      @Override
      public Object namespaceAttribute(int slot, String attribute) {
        Object ns = namespaces[slot];
        return ns instanceof MemoNamespace m ? m.rawGet(attribute) : ((Namespace) ns).get(attribute);
      }

      @Override
      public Object messageCount() {
        return list instanceof MessageList m ? m.raw().size() : list.size();  // raw: the count is no read here
      }
    });
    if (value != null && r != null) {
      int[] ordinals = new int[namespaces.length];
      for (int i = 0; i < ordinals.length; i++) {
        ordinals[i] = namespaces[i] instanceof MemoNamespace m ? m.ordinal : -1;
      }
      r.reads.add(new RenderMemo.DerivedRead(d, ordinals, value));
    }
    return value;
  }

  /** What one iteration read and whether it can be reused. */
  final class Recording {
    private final ForLoop loop;
    private final Context scope;
    private final String itemName;
    private final Map<String, Object> start;
    private final Map<?, ?> macros;
    private final List<RenderMemo.Read> reads = new ArrayList<>();
    private final Map<MemoNamespace, Set<String>> written = new IdentityHashMap<>();
    private boolean counted;
    private boolean opaque;

    private Recording(ForLoop loop, Context scope, String itemName) {
      this.loop = loop;
      this.scope = scope;
      this.itemName = itemName;
      this.start = new HashMap<>(scope.getScope());
      this.macros = macrosOf(scope);
    }

    /** Never reuse this iteration. */
    void opaque() {
      opaque = true;
    }

    /** A template variable read from the render's context (it was in no loop's scope). */
    void name(String name, Object value) {
      reads.add(new RenderMemo.NameRead(name, RenderMemo.norm(value)));
    }

    /** A variable of a for loop read: this loop's is a read; an inner loop's is the iteration's own. */
    void loopAttribute(ForLoop l, String attribute, Object value) {
      if (l != loop) {
        return;
      }
      if (value == null) {
        opaque = true;
      } else {
        reads.add(new RenderMemo.LoopRead(attribute, value));
      }
    }

    void message(int index, Object message) {
      reads.add(new RenderMemo.MessageRead(index, message));
    }

    void messageCount(int count) {
      if (!counted) {
        counted = true;
        reads.add(new RenderMemo.MessageCount(count));
      }
    }

    void namespaceRead(MemoNamespace ns, Object attribute, Object value) {
      Set<String> w = written.get(ns);
      if (!(attribute instanceof String a)) {
        opaque = true;
      } else if (w == null || !w.contains(a)) {
        reads.add(new RenderMemo.NamespaceRead(ns.ordinal, a, RenderMemo.norm(value)));
      }
    }

    /** Whether the iteration has written the namespace's attribute. */
    boolean wrote(MemoNamespace ns, String attribute) {
      Set<String> w = written.get(ns);
      return w != null && w.contains(attribute);
    }

    void namespaceWrite(MemoNamespace ns, Object attribute) {
      if (attribute instanceof String a) {
        written.computeIfAbsent(ns, n -> new java.util.HashSet<>()).add(a);
      } else {
        opaque = true;
      }
    }

    /** The macros defined in the loop's scope (a copy; read without making the map, as jinjava's getter would). */
    private static Map<?, ?> macrosOf(Context scope) {
      Object m = scope.getScope().get(Context.GLOBAL_MACROS_SCOPE_KEY);
      return m instanceof Map<?, ?> map ? new HashMap<>(map) : Map.of();
    }

    private boolean sameMacros() {
      Map<?, ?> now = macrosOf(scope);
      if (now.size() != macros.size()) {
        return false;
      }
      for (Map.Entry<?, ?> e : now.entrySet()) {
        if (macros.get(e.getKey()) != e.getValue()) {
          return false;
        }
      }
      return true;
    }

    /** The iteration as the next render may reuse it, or null when it may not. */
    RenderMemo.Iteration finish(Object item, Object source, String output) {
      if (opaque || !sameMacros()) {
        return null;  // a macro defined in the iteration keeps its scope: replaying the output would not define it
      }
      List<String> carriedNames = new ArrayList<>();
      List<Object> carriedValues = new ArrayList<>();
      for (Map.Entry<String, Object> e : start.entrySet()) {
        if (!e.getKey().equals(itemName) && !e.getKey().equals("loop")) {
          carriedNames.add(e.getKey());
          carriedValues.add(RenderMemo.norm(e.getValue()));
        }
      }
      List<String> names = new ArrayList<>();
      List<Object> values = new ArrayList<>();
      for (Map.Entry<String, Object> e : scope.getScope().entrySet()) {
        String k = e.getKey();
        Object v = e.getValue();
        if (k.equals("loop") && v != loop) {
          return null;  // {% set loop = ... %}: the next iteration reads it
        }
        if (k.equals(itemName) || k.equals("loop") || start.containsKey(k) && start.get(k) == v) {
          continue;
        }
        if (!RenderMemo.immutable(v)) {
          // a reference into this render (a namespace, a macro keeping its scope, a list the next render may change):
          // replaying it would hand the next render this one's object
          return null;
        }
        names.add(k);
        values.add(v);
      }
      List<RenderMemo.NamespaceWrite> nsWrites = new ArrayList<>();
      for (Map.Entry<MemoNamespace, Set<String>> e : written.entrySet()) {
        for (String a : e.getValue()) {
          Object v = e.getKey().rawGet(a);
          if (!RenderMemo.immutable(v)) {
            return null;
          }
          nsWrites.add(new RenderMemo.NamespaceWrite(e.getKey().ordinal, a, v));
        }
      }
      return new RenderMemo.Iteration(item, source, carriedNames.toArray(new String[0]), carriedValues.toArray(),
          reads.toArray(new RenderMemo.Read[0]), output, names.toArray(new String[0]), values.toArray(),
          nsWrites.toArray(new RenderMemo.NamespaceWrite[0]));
    }
  }

  /**
   * The render's {@code messages}, a jinjava list as any list it is handed becomes: while an iteration is recorded,
   * every element and every size read through it is a read of the iteration (what jinjava's own size checks read
   * too: the element read by an index is read as that element, {@link CallLookups}).
   */
  static final class MessageList extends PyList {
    private final List<Object> raw;
    private final MemoSession session;
    private final List<Object> recorded = new AbstractList<>() {
      @Override
      public Object get(int index) {
        Recording r = session.recording;
        if (r != null) {
          if (index >= 0 && index < raw.size()) {
            r.message(index, raw.get(index));
          } else {
            r.messageCount(raw.size());
          }
        }
        return raw.get(index);
      }

      @Override
      public int size() {
        Recording r = session.recording;
        if (r != null) {
          r.messageCount(raw.size());
        }
        return raw.size();
      }

      @Override
      public Object set(int index, Object element) {
        return raw.set(index, element);
      }

      @Override
      public void add(int index, Object element) {
        raw.add(index, element);
      }

      @Override
      public Object remove(int index) {
        return raw.remove(index);
      }
    };

    @SuppressWarnings("unchecked")
    MessageList(List<?> raw, MemoSession session) {
      super((List<Object>) raw);
      this.raw = (List<Object>) raw;
      this.session = session;
    }

    List<Object> raw() {
      return raw;
    }

    @Override
    protected List<Object> delegate() {
      return session.recording != null ? recorded : raw;
    }
  }

  /**
   * The render's messages reversed ({@code messages[::-1]}): a loop over them takes the last render's iteration for
   * the same message, counted from the end ({@link MemoForTag}), since the new messages come first.
   */
  static final class ReversedMessages extends ArrayList<Object> {}

  /** A template's namespace: its reads and writes while an iteration is recorded are the iteration's. */
  static final class MemoNamespace extends Namespace {
    final int ordinal;
    private final MemoSession session;

    MemoNamespace(Map<String, Object> values, MemoSession session, int ordinal) {
      super(values);
      this.session = session;
      this.ordinal = ordinal;
    }

    Object rawGet(String attribute) {
      return delegate().get(attribute);
    }

    void rawPut(String attribute, Object value) {
      delegate().put(attribute, value);
    }

    @Override
    public Object get(Object key) {
      Object v = super.get(key);
      Recording r = session.recording;
      if (r != null) {
        r.namespaceRead(this, key, v);
      }
      return v;
    }

    @Override
    public Object get(String key, Object defaultValue) {
      Recording r = session.recording;
      if (r != null) {
        r.opaque();
      }
      return super.get(key, defaultValue);
    }

    @Override
    public boolean containsKey(Object key) {
      Recording r = session.recording;
      if (r != null) {
        r.namespaceRead(this, key, super.get(key));
      }
      return super.containsKey(key);
    }

    @Override
    public Object put(String key, Object value) {
      Recording r = session.recording;
      if (r != null) {
        r.namespaceWrite(this, key);
      }
      return super.put(key, value);
    }

    /** A read of the whole namespace (printed, serialized, iterated): not a read the memo can compare. */
    private void whole() {
      Recording r = session.recording;
      if (r != null) {
        r.opaque();
      }
    }

    @Override
    public java.util.Set<Map.Entry<String, Object>> entrySet() {
      whole();
      return super.entrySet();
    }

    @Override
    public java.util.Set<String> keySet() {
      whole();
      return super.keySet();
    }

    @Override
    public java.util.Collection<Object> values() {
      whole();
      return super.values();
    }

    @Override
    public int size() {
      whole();
      return super.size();
    }

    @Override
    public boolean isEmpty() {
      whole();
      return super.isEmpty();
    }

    @Override
    public boolean containsValue(Object value) {
      whole();
      return super.containsValue(value);
    }

    @Override
    public String toString() {
      whole();
      return super.toString();
    }

    @Override
    public <T extends Appendable & CharSequence> T appendPyishString(T appendable) throws java.io.IOException {
      whole();
      return super.appendPyishString(appendable);
    }

    @Override
    public boolean equals(Object o) {
      whole();
      return super.equals(o);
    }

    @Override
    public int hashCode() {
      whole();
      return super.hashCode();
    }

    @Override
    public void putAll(Map<? extends String, ? extends Object> m) {
      Recording r = session.recording;
      if (r != null) {
        r.opaque();
      }
      super.putAll(m);
    }
  }
}
