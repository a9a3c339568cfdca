package dev.affinity.tokenizer;

import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.util.ForLoop;
import jinjava.javax.el.ELContext;

/**
 * The lookups a chat template makes on every message, answered before jinjava's bean resolver, with the values that
 * resolver gives:
 *
 * <ul>
 *   <li>Before it calls a method ({@code content.startswith(...)}, a filter's {@code filter}, a test's
 *       {@code evaluate}), jinjava looks the method's name up as a property ({@code JinjavaInterpreterResolver.invoke}).
 *       The bean resolver finds no such property and throws (a shared {@code PropertyNotFoundException}), and unwinding
 *       that throw in compiled code cost more than the rest of the render together: {@code messages|length} and
 *       {@code is defined} on every message took a 400-message history's Qwen3 render to milliseconds
 *       (docs/benchmarks.md, "Agent turns against the history"). Here such a name is undefined (null, resolved) and the
 *       call goes on as before.
 *   <li>{@code loop.index0}, {@code loop.first}, {@code loop.last}, ...: the for loop's getters, called directly
 *       instead of by reflection after the bean resolver's restricted-class check; in a render that reuses the last
 *       one's loop iterations ({@link MemoSession}), each is a read of the iteration being recorded.
 * </ul>
 *
 * Every other lookup goes on to the resolvers after this one. Thread-safe.
 */
final class CallLookups extends LookupResolver {

  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    if (base == null || !(property instanceof String name)) {
      return null;
    }
    if (base instanceof String && PythonStrings.METHODS.contains(name)
        || base instanceof Filter && name.equals("filter")
        || base instanceof ExpTest && (name.equals("evaluate") || name.equals("evaluateNegated"))) {
      context.setPropertyResolved(true);  // a method, not a property: undefined, as the bean resolver found
      return null;
    }
    if (base instanceof MemoSession.MessageList messages) {
      return message(context, messages, name);
    }
    if (base instanceof ForLoop loop) {
      Object value = RenderMemo.loopAttribute(loop, name);
      MemoSession session = MemoSession.current();
      if (session != null && session.recording() != null) {
        session.recording().loopAttribute(loop, name, value);  // a read of the memoized loop's iteration
      }
      if (value != null) {
        context.setPropertyResolved(true);
      }
      return value;
    }
    return null;
  }

  /**
   * Calls a filter directly. Resolves no other call. In a render that reuses the last one's loop iterations, a call
   * that may change what it is called on ({@code list.append}, {@code ns.update}, {@code loop.cycle}) makes the
   * iteration being recorded one that is never reused: reusing its output would not redo the change.
   */
  @Override
  @SuppressWarnings("unchecked")
  public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
    if (base instanceof Filter filter && "filter".equals(method) && params != null && params.length == 4
        && params[1] instanceof com.hubspot.jinjava.interpret.JinjavaInterpreter interpreter
        && params[2] instanceof Object[] args && params[3] instanceof java.util.Map<?, ?> kwargs) {
      // x|f(args, k=v), as jinjava hands it over (JinjavaInterpreterResolver.generateMethodParams): the filter's
      // four-argument method, which the bean resolver would find by reflection on every call
      Object value = filter.filter(params[0], interpreter, args, (java.util.Map<String, Object>) kwargs);
      context.setPropertyResolved(true);
      return value;
    }
    MemoSession session = MemoSession.current();
    if (session != null && !pure(base, method)) {
      session.impureCall(base);
    }
    return null;
  }

  private static boolean pure(Object base, Object method) {
    if (base instanceof String || base instanceof Filter || base instanceof ExpTest) {
      return true;
    }
    String name = String.valueOf(method);
    if (base instanceof java.util.Map<?, ?> && !(base instanceof MemoSession.MemoNamespace)) {
      return name.equals("items") || name.equals("keys") || name.equals("values") || name.equals("get");
    }
    return base instanceof java.util.List<?> && !(base instanceof MemoSession.MessageList)
        && (name.equals("index") || name.equals("count"));
  }

  /**
   * {@code messages[i]} in a render that reuses the last one's loop iterations, as jinjava's list resolver answers it
   * (a negative index from the end, out of range undefined): the message at {@code i} is the read, not the number of
   * messages its range check reads, so that {@code messages[loop.index0 + 1]} gives the same answer whatever follows.
   */
  private static Object message(ELContext context, MemoSession.MessageList messages, String property) {
    MemoSession session = MemoSession.current();
    MemoSession.Recording r = session == null ? null : session.recording();
    int index;
    try {
      index = Integer.parseInt(property);
    } catch (NumberFormatException e) {
      return null;  // not an index: the resolvers after this one
    }
    if (r == null) {
      return null;
    }
    java.util.List<?> raw = messages.raw();
    if (index < 0) {
      r.messageCount(raw.size());
      index += raw.size();
    }
    context.setPropertyResolved(true);
    if (index < 0 || index >= raw.size()) {
      r.messageCount(raw.size());
      return null;
    }
    Object message = raw.get(index);
    r.message(index, message);
    return message;
  }
}
