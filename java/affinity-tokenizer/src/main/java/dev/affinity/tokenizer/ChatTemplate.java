package dev.affinity.tokenizer;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.tree.Node;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import jinjava.javax.el.CompositeELResolver;

/**
 * A model's chat template ({@code chat_template} of its {@code tokenizer_config.json}), rendered as Hugging Face's
 * {@code apply_chat_template} renders it ({@code transformers/utils/chat_template_utils.py}): Jinja with
 * {@code trim_blocks} and {@code lstrip_blocks}, whitespace control, the {@code raise_exception} and
 * {@code strftime_now} globals, {@code tojson} as {@code json.dumps(..., ensure_ascii=False)} with Python's spacing,
 * {@code namespace}, loop controls and the methods of Python's {@code str} that templates call. Rendered with jinjava
 * (parsed once, {@link TemplateSource} adapting the two constructs it parses otherwise).
 *
 * <p>A template the engine cannot parse, or that fails on a plain conversation, is refused when it is loaded
 * ({@link IllegalArgumentException} naming the template line); a render that reports any error is an exception,
 * never a partial text. Thread-safe: each render has its own interpreter.
 */
public final class ChatTemplate {
  private static final CompositeELResolver RESOLVER = new CompositeELResolver();

  static {
    RESOLVER.add(new CallLookups());
    RESOLVER.add(new PythonStrings());
    RESOLVER.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
  }

  /**
   * What a template may call whose result the reuse of loop iterations cannot see as a read: jinjava's random, time
   * and stateful helpers; loop controls ({@code break} leaves the loop, which a reused iteration would not); macros
   * (which macro a name calls is looked up past the render's context, and a macro defined in one branch or another
   * is not a read the memo compares). A template that uses any of them renders whole every time.
   */
  private static final java.util.regex.Pattern NOT_MEMOIZABLE = java.util.regex.Pattern.compile(
      "\\b(random|shuffle|cycler|joiner|today|unixtimestamp)\\s*[(|]|\\|\\s*(random|shuffle)\\b"
      + "|\\{%[-+]?\\s*(break|continue|macro|call)\\b");

  /** Tags that make a template's output more than its top-level nodes' outputs in order ({@link RootInterpreter}). */
  private static final java.util.regex.Pattern TEMPLATE_STRUCTURE = java.util.regex.Pattern.compile(
      "\\{%[-+]?\\s*(extends|block|include|import|from)\\b");

  private final Node tree;
  private final String source;
  private final String origin;
  private final Map<String, Object> specialTokens;
  private final boolean memoizable;
  private final boolean plainRoot;

  private ChatTemplate(Node tree, String source, String origin, Map<String, Object> specialTokens) {
    this.tree = tree;
    this.source = source;
    this.origin = origin;
    this.specialTokens = specialTokens;
    this.memoizable = !NOT_MEMOIZABLE.matcher(source).find();
    this.plainRoot = !TEMPLATE_STRUCTURE.matcher(source).find();
  }

  /**
   * A jinjava engine set up for chat templates: Jinja2's whitespace rules, our resolver, and the filters, functions and
   * tags of Hugging Face's environment. One per thread that renders ({@link #engine}): the engine's global context
   * holds sets that every render's contexts share and write without a lock (the names a loop adds and removes,
   * {@code Context.addNonMetaContextVariables}), and two renders at once on one engine broke them
   * ({@code ConcurrentModificationException} under concurrent agent turns).
   */
  private static Jinjava engine() {
    Jinjava jinjava = new Jinjava(JinjavaConfig.newBuilder()
        // trim_blocks, lstrip_blocks and keep_trailing_newline as Jinja2's lexer applies them: TemplateSource
        .withTrimBlocks(false)
        .withLstripBlocks(false)
        .withElResolver(RESOLVER)
        .withLegacyOverrides(LegacyOverrides.newBuilder()
            .withParseWhitespaceControlStrictly(true)
            .withUseTrimmingForNotesAndExpressions(true)
            .withKeepNullableLoopValues(true)
            .build())
        .withFailOnUnknownTokens(false)
        .build());
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException", String.class));
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", "strftime_now", ChatTemplate.class, "strftimeNow", String.class));
    jinjava.getGlobalContext().registerFilter(new ToJson());
    jinjava.getGlobalContext().registerFilter(new PyReverse());
    // before the parse, which binds each tag node to its tag: for loops that reuse the last render's iterations
    jinjava.getGlobalContext().registerTag(new MemoForTag());
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", "namespace", MemoSession.class, "namespace", Object[].class));
    jinjava.getGlobalContext().registerFunction(
        new ELFunctionDefinition("", TemplateSource.DERIVED, ChatTemplate.class, "derived", String.class));
    return jinjava;
  }

  /** This thread's engine (the parsed template is shared: its nodes and tags keep no render's state). */
  private static final ThreadLocal<Jinjava> ENGINES = ThreadLocal.withInitial(ChatTemplate::engine);

  /** A render's text, and what the conversation's next render may reuse of it (null: nothing). */
  public record Rendered(String text, RenderMemo memo, long reusedIterations, long renderedIterations) {}

  /**
   * Compiles a template and renders it once on a short conversation to find what the engine cannot do.
   *
   * @param origin where the template comes from, for errors (for example {@code /models/qwen3/tokenizer_config.json})
   * @param specialTokens the tokenizer's special tokens the template may name ({@code bos_token}, {@code eos_token},
   *     ...; absent ones are left undefined)
   * @throws IllegalArgumentException naming the origin and the template line when it cannot be rendered
   */
  public static ChatTemplate compile(String source, String origin, Map<String, String> specialTokens) {
    Objects.requireNonNull(source, "source");
    Jinjava jinjava = ENGINES.get();
    Map<String, Object> tokens = new HashMap<>();
    specialTokens.forEach((k, v) -> {
      if (v != null) {
        tokens.put(k, v);
      }
    });
    JinjavaInterpreter interpreter = jinjava.newInterpreter();
    Node tree;
    JinjavaInterpreter.pushCurrent(interpreter);
    try {
      tree = interpreter.parse(TemplateSource.rewrite(source));
    } finally {
      JinjavaInterpreter.popCurrent();
    }
    ChatTemplate template = new ChatTemplate(tree, source, origin, Map.copyOf(tokens));
    try {
      template.failOn(interpreter.getErrors(), false);
      template.render(new ChatInput(List.of(Map.of("role", "user", "content", "Hello")), null, true, Map.of()));
    } catch (TemplateException e) {
      if (!e.raisedByTemplate()) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    }
    return template;
  }

  /** This thread's engine's global context, shared by its renders (tests check that renders leave it as it was). */
  Context globalContext() {
    return ENGINES.get().getGlobalContext();
  }

  /** The template's source as the model ships it. */
  public String source() {
    return source;
  }

  /**
   * Renders a conversation: {@code messages}, {@code tools} (when given), {@code add_generation_prompt}, the
   * special tokens, and the request's {@code chat_template_kwargs}, which override the special tokens (not the
   * conversation), as in {@code apply_chat_template}.
   *
   * @throws TemplateException when the template raises ({@code raise_exception}) or the engine reports an error
   */
  public String render(ChatInput input) {
    return render(input, null, false).text();
  }

  /**
   * {@link #render(ChatInput)}, reusing what the conversation's last render ({@code previous}, null: none) did in the
   * template's top-level loops where every read of an iteration gives the same value ({@link RenderMemo}): the text
   * is the whole render's. The result's memo is this render's, for the next.
   */
  public Rendered render(ChatInput input, RenderMemo previous) {
    return render(input, previous, memoizable);
  }

  private Rendered render(ChatInput input, RenderMemo previous, boolean memo) {
    // A context under this thread's engine's global one, not Jinjava.newInterpreter()'s copy of it: the copy is a root
    // context, which registers every built-in filter, function and tag again by reflection on each render (about half
    // of a 2k-token chat's render); the template's own assignments stay in this context either way.
    Jinjava engine = ENGINES.get();
    RenderContext context = new RenderContext(engine.getGlobalContext());
    JinjavaInterpreter interpreter = plainRoot
        ? new RootInterpreter(engine, context, tree)
        : new JinjavaInterpreter(engine, context, engine.getGlobalConfig());
    MemoSession session = memo ? MemoSession.open(this, previous, input.messages(), input.sources(), context) : null;
    try {
      Map<String, Object> bindings = new HashMap<>(specialTokens);  // {**special_tokens_map, **kwargs}, as HF
      bindings.putAll(input.kwargs());
      bindings.put("messages", session != null ? session.messages() : input.messages());
      if (input.tools() != null) {
        bindings.put("tools", input.tools());
      }
      bindings.put("add_generation_prompt", input.addGenerationPrompt());
      interpreter.getContext().putAll(bindings);
      context.session = session;
      String out;
      JinjavaInterpreter.pushCurrent(interpreter);
      try {
        out = interpreter.render(tree);
      } finally {
        JinjavaInterpreter.popCurrent();
      }
      failOn(interpreter.getErrors(), true);
      return session == null ? new Rendered(out, null, 0, 0)
          : new Rendered(out, session.memo(out), session.reused(), session.rendered());
    } finally {
      if (session != null) {
        session.close();
      }
    }
  }

  private void failOn(List<TemplateError> errors, boolean rendering) {
    for (TemplateError e : errors) {
      if (e.getSeverity() != TemplateError.ErrorType.FATAL) {
        continue;
      }
      Throwable cause = e.getException();
      while (cause != null && !(cause instanceof RaisedException) && cause.getCause() != cause) {
        cause = cause.getCause();
      }
      if (cause instanceof RaisedException raised) {
        throw new TemplateException(raised.getMessage(), true);
      }
      String what = rendering ? "cannot render" : "cannot parse";
      throw new TemplateException("chat template of " + origin + " " + what + " at template line " + e.getLineno()
          + ": " + e.getMessage(), false);
    }
  }

  /**
   * A tag's expression that {@link TemplateSource} found to be a {@link DerivedExpression}: its value, evaluated here
   * from the loop's counters, the namespace's attributes and the number of messages where they are all whole numbers
   * (in an iteration being recorded, as one read of the iteration: {@link MemoSession#derived}), and by jinjava from
   * its text otherwise.
   */
  public static Object derived(String text) {
    JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
    DerivedExpression d = DerivedExpression.of(text);
    Object value = MemoSession.derived(d, interpreter.getContext());
    return value != null ? value : interpreter.resolveELExpression(text, interpreter.getLineNumber());
  }

  /** The template's {@code raise_exception(message)}. */
  public static Object raiseException(String message) {
    throw new RaisedException(message);
  }

  /** Hugging Face's {@code strftime_now(format)}: the local time in a C {@code strftime} format. */
  public static String strftimeNow(String format) {
    MemoSession.opaqueCall();  // the time is no read the next render could compare
    LocalDateTime now = LocalDateTime.now();
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < format.length(); i++) {
      char c = format.charAt(i);
      if (c != '%' || i + 1 == format.length()) {
        out.append(c);
        continue;
      }
      char f = format.charAt(++i);
      String pattern = switch (f) {
        case 'd' -> "dd";
        case 'm' -> "MM";
        case 'Y' -> "yyyy";
        case 'y' -> "yy";
        case 'b' -> "MMM";
        case 'B' -> "MMMM";
        case 'H' -> "HH";
        case 'M' -> "mm";
        case 'S' -> "ss";
        case 'a' -> "EEE";
        case 'A' -> "EEEE";
        case 'j' -> "DDD";
        default -> null;
      };
      if (pattern != null) {
        out.append(now.format(DateTimeFormatter.ofPattern(pattern, Locale.ROOT)));
      } else if (f == '-' && i + 1 < format.length()) {  // %-d: without padding
        char g = format.charAt(++i);
        out.append(switch (g) {
          case 'd' -> now.getDayOfMonth();
          case 'm' -> now.getMonthValue();
          case 'H' -> now.getHour();
          default -> "%-" + g;
        });
      } else if (f == '%') {
        out.append('%');
      } else {
        out.append('%').append(f);
      }
    }
    return out.toString();
  }

  /** What a template's {@code raise_exception} throws. */
  static final class RaisedException extends RuntimeException {
    RaisedException(String message) {
      super(message, null, false, false);
    }
  }

  /** {@code x[::-1]} ({@link TemplateSource}): a string reversed is a string, anything iterable a list. */
  static final class PyReverse implements Filter {
    @Override
    public String getName() {
      return "py_reverse";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      if (var instanceof String s) {
        return new StringBuilder(s).reverse().toString();  // reverses surrogate pairs as pairs
      }
      // the render's messages reversed: a loop over them reuses the last render's iterations counted from the end
      java.util.List<Object> out = var instanceof MemoSession.MessageList
          ? new MemoSession.ReversedMessages() : new java.util.ArrayList<>();
      if (var instanceof Iterable<?> items) {
        items.forEach(out::add);
      } else if (var instanceof Object[] array) {
        out.addAll(java.util.Arrays.asList(array));
      } else if (var != null) {
        throw new IllegalArgumentException("object of type " + var.getClass().getSimpleName() + " is not subscriptable");
      }
      java.util.Collections.reverse(out);
      return out;
    }
  }

  /** Hugging Face's {@code tojson}: {@code json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)}. */
  static final class ToJson implements Filter {
    @Override
    public String getName() {
      return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      return filter(var, interpreter, (Object[]) args, Map.of());
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
      Object separators = kwargs.get("separators");
      String item = null;
      String key = null;
      if (separators instanceof List<?> pair && pair.size() == 2) {
        item = String.valueOf(pair.get(0));
        key = String.valueOf(pair.get(1));
      }
      boolean sort = Boolean.TRUE.equals(kwargs.get("sort_keys"));
      int spaces = indent == null ? -1 : indent instanceof Number n ? n.intValue() : Integer.parseInt(indent.toString());
      return new dev.affinity.protocol.PythonJsonDumps(spaces, item, key, sort, false, false).write(var);
    }
  }

  /**
   * An interpreter whose render of the template's own tree joins its top-level nodes' outputs in order, as jinjava's
   * does for a template without inheritance, blocks or includes (which {@link #plainRoot} rules out), but copying each
   * once into a text of the exact size, where jinjava's grows a buffer from sixteen chars a doubling at a time and
   * encodes each node's text to count its size: a whole history's text several times a turn. Where each output lies
   * in the text goes to the render's {@link MemoSession}. Every other render (a macro's body, another tree) is
   * jinjava's.
   */
  private static final class RootInterpreter extends JinjavaInterpreter {
    private final Node tree;

    RootInterpreter(Jinjava engine, Context context, Node tree) {
      super(engine, context, engine.getGlobalConfig());
      this.tree = tree;
    }

    @Override
    public String render(Node root) {
      return render(root, true);  // jinjava's goes to its three-argument render past the one below
    }

    @Override
    public String render(Node root, boolean processExtendRoots) {
      if (root != tree || getConfig().getMaxOutputSize() > 0 || getConfig().getExecutionMode().useEagerParser()) {
        return super.render(root, processExtendRoots);
      }
      // each node's output once into the text (String.join copies each part once into a result of the exact size)
      List<String> parts = new java.util.ArrayList<>(root.getChildren().size());
      MemoSession session = MemoSession.current();
      int offset = 0;
      for (Node node : root.getChildren()) {
        setLineNumber(node.getLineNumber());
        setPosition(node.getStartPosition());
        String image = node.getMaster().getImage();
        getContext().pushRenderStack(image);
        try {
          String value = node.render(this).getValue();
          if (value != null) {
            parts.add(value);
            if (session != null && value.length() > 0) {
              session.placed(value, offset);
            }
            offset += value.length();
          }
        } catch (com.hubspot.jinjava.interpret.CollectionTooBigException e) {
          addError(TemplateError.fromException(e, node.getLineNumber(), node.getStartPosition()));
          return String.join("", parts);  // as jinjava's: what was rendered, with the error the render fails on
        } finally {
          getContext().popRenderStack();
        }
      }
      return String.join("", parts);
    }
  }

  /**
   * A render's own context under its thread's engine's global one. jinjava records every expression, value and
   * function a render resolves in its context and in each context above it (for callers who ask which variables a
   * template used; jinjava itself never reads them): a hash and an insert per property access, up to the global
   * context, which every render of the thread shares. A render keeps none of it, and nothing goes up to the global
   * context.
   */
  private static final class RenderContext extends Context {
    /** The render's reuse of loop iterations: a read reaching this context from inside a loop is the loop's. */
    private MemoSession session;

    RenderContext(Context parent) {
      super(parent);
    }

    @Override
    public Object get(Object key) {
      Object value = super.get(key);
      MemoSession s = session;
      if (s != null && s.recording() != null && key instanceof String name) {
        s.recording().name(name, value);
      }
      return value;
    }

    @Override
    public boolean containsKey(Object key) {
      MemoSession s = session;
      if (s != null && s.recording() != null && key instanceof String name) {
        s.recording().name(name, super.get(key));
      }
      return super.containsKey(key);
    }

    @Override
    public void addResolvedExpression(String expression) {}

    @Override
    public void addResolvedValue(String value) {}

    @Override
    public void addResolvedFunction(String function) {}
  }
}
