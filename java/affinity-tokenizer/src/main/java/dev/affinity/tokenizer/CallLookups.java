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
 *       instead of by reflection after the bean resolver's restricted-class check.
 * </ul>
 *
 * Every other lookup goes on to the resolvers after this one. Stateless and thread-safe.
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
    if (base instanceof ForLoop loop) {
      Object value = switch (name) {
        case "index" -> loop.getIndex();
        case "index0" -> loop.getIndex0();
        case "first" -> loop.isFirst();
        case "last" -> loop.isLast();
        case "length" -> loop.getLength();
        default -> null;
      };
      if (value != null) {
        context.setPropertyResolved(true);
      }
      return value;
    }
    return null;
  }
}
