package dev.affinity.tokenizer;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.NullValue;
import com.hubspot.jinjava.lib.tag.ForTag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
import com.hubspot.jinjava.tree.output.OutputNode;
import com.hubspot.jinjava.util.ForLoop;
import com.hubspot.jinjava.util.ObjectIterator;
import java.util.ArrayList;
import java.util.List;

/**
 * jinjava's {@code for}, which in a render with a {@link MemoSession} reuses the iterations of a top-level loop over a
 * list that the conversation's last render rendered with the same reads ({@link RenderMemo}), and records the ones it
 * renders. Everything else (nested loops, loops inside a macro, a call or a set block, several loop variables, loops
 * over maps, renders without a session) is jinjava's own loop. An iteration renders as jinjava's does: the item and
 * {@code loop} in the loop's scope, the children in order, {@code continue} ending the iteration.
 */
final class MemoForTag extends ForTag {
  /**
   * The loop's output as jinjava's own node holds it, but sized without encoding it: jinjava adds every node's UTF-8
   * size to the render's total (a copy of a whole history's text a turn) and reads it only against an output limit,
   * which the chat templates' engine does not set; with one, the size is the UTF-8 length, counted.
   */
  @Override
  public OutputNode interpretOutput(TagNode tagNode, JinjavaInterpreter interpreter) {
    String out = interpret(tagNode, interpreter);
    boolean limited = interpreter.getConfig().getMaxOutputSize() > 0;
    return new OutputNode() {
      @Override
      public String getValue() {
        return out;
      }

      @Override
      public long getSize() {
        return out == null ? 0 : limited ? utf8Length(out) : out.length();
      }

      @Override
      public String toString() {
        return out;
      }
    };
  }

  /** How many bytes {@code s} takes in UTF-8 (an unpaired surrogate as the encoder's one-byte replacement). */
  static long utf8Length(String s) {
    long n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n++;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        n += 4;
        i++;
      } else {
        n += Character.isSurrogate(c) ? 1 : 3;
      }
    }
    return n;
  }

  @Override
  public String renderForCollection(TagNode tagNode, JinjavaInterpreter interpreter, List<String> loopVars,
      Object collection) {
    MemoSession s = MemoSession.current();
    if (s == null) {
      return super.renderForCollection(tagNode, interpreter, loopVars, collection);
    }
    int depth = s.enterLoop();
    try {
      // only a loop of the template's own level: inside a macro, a call block or a set block, its scope's parent
      // holds arguments and variables whose reads the render's context never sees
      if (depth > 0 || interpreter.getContext() != s.outsideContext() || loopVars.size() != 1
          || !(collection instanceof List<?> items)
          || interpreter.isValidationMode() || interpreter.getConfig().getMaxOutputSize() > 0
          || interpreter.getConfig().getExecutionMode().useEagerParser()) {
        return super.renderForCollection(tagNode, interpreter, loopVars, collection);
      }
      return memoized(s, tagNode, interpreter, loopVars, items);
    } finally {
      s.exitLoop();
    }
  }

  private static String memoized(MemoSession s, TagNode tagNode, JinjavaInterpreter interpreter, List<String> loopVars,
      List<?> items) {
    String itemName = loopVars.get(0);
    int run = s.nextRun(tagNode);
    RenderMemo.Iteration[] before = s.previousRun(tagNode, run);
    List<RenderMemo.Iteration> after = new ArrayList<>(items.size());
    ForLoop loop = ObjectIterator.getLoop(items);
    boolean keepNulls = interpreter.getConfig().getLegacyOverrides().isKeepNullableLoopValues();
    interpreter.getContext().addNonMetaContextVariables(loopVars);
    try (JinjavaInterpreter.InterpreterScopeClosable c = interpreter.enterScope()) {
      Context scope = interpreter.getContext();
      scope.put(LOOP, loop);
      // not grown a doubling at a time: the last run's output and room for what this turn adds
      int expected = RenderMemo.outputLength(before);
      StringBuilder buff = new StringBuilder(expected + expected / 16 + 256);
      int[] starts = new int[items.size()];  // where each iteration's output starts in the run's
      boolean recording = true;
      // a loop over the messages reversed meets the last render's messages after the new ones: the candidate for an
      // iteration is the last render's iteration as far from the end (each is reused only where all its reads hold)
      boolean fromEnd = items instanceof MemoSession.ReversedMessages && before != null;
      int shift = fromEnd ? items.size() - before.length : 0;
      int i = 0;
      while (loop.hasNext()) {
        Object raw = loop.next();
        if (!fromEnd && i == 0 && before != null && before.length > 0 && before[0] != null
            && !RenderMemo.same(before[0].item(), raw)) {
          // Not the last run's items from the start (a loop over a list the template reversed or cut): nothing to
          // reuse by position, now or next time, so this run records nothing but its first item.
          recording = false;
          after.add(RenderMemo.Iteration.firstItemOnly(raw));
        }
        int j = i - shift;
        RenderMemo.Iteration prev = recording && before != null && j >= 0 && j < before.length ? before[j] : null;
        starts[i] = buff.length();
        Object source = recording ? s.sourceOf(items, i, raw) : null;
        if (recording && prev != null && prev.holds(raw, source, itemName, scope, s, loop)) {
          // the item is not put in the scope: nothing of the iteration runs, and the next one puts its own
          prev.appendOutput(buff);
          prev.replay(scope, s);
          after.add(prev);
          s.countReused();
        } else if (!recording) {
          putItem(interpreter, scope, itemName, raw, keepNulls);
          renderBody(tagNode, interpreter, loop, buff);
          s.countRendered();
        } else {
          putItem(interpreter, scope, itemName, raw, keepNulls);
          MemoSession.Recording r = s.record(loop, scope, itemName);
          int errors = interpreter.getErrors().size();
          try {
            if (renderBody(tagNode, interpreter, loop, buff)) {
              r.opaque();
            }
          } finally {
            s.stopRecording();
          }
          after.add(interpreter.getErrors().size() == errors ? r.finish(raw, source, buff.substring(starts[i])) : null);
          s.countRendered();
        }
        i++;
      }
      String output = buff.toString();
      s.keepRun(tagNode, after, output, starts, before);
      return output;
    } finally {
      interpreter.getContext().removeNonMetaContextVariables(loopVars);
    }
  }

  /**
   * The item in the loop's scope, as jinjava's loop puts it: wrapped, and with {@code keepNullableLoopValues} a null
   * item as a null value where its name would otherwise read something (an earlier item, or a variable outside: a
   * replayed iteration leaves an earlier item in the scope, which is not null where jinjava's would not be either).
   */
  private static void putItem(JinjavaInterpreter interpreter, Context scope, String itemName, Object raw,
      boolean keepNulls) {
    Object val = interpreter.wrap(raw);
    scope.put(itemName, val == null && keepNulls && scope.get(itemName) != null ? NullValue.INSTANCE : val);
  }

  /** One iteration's children, in order, into {@code out}, as jinjava's loop renders them; true if it continued. */
  private static boolean renderBody(TagNode tagNode, JinjavaInterpreter interpreter, ForLoop loop, StringBuilder out) {
    for (Node node : tagNode.getChildren()) {
      out.append(String.valueOf(node.render(interpreter)));
      if (loop.isContinued()) {
        return true;
      }
    }
    return false;
  }
}
