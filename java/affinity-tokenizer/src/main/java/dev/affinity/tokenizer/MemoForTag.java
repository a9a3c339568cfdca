package dev.affinity.tokenizer;

import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.NullValue;
import com.hubspot.jinjava.lib.tag.ForTag;
import com.hubspot.jinjava.tree.Node;
import com.hubspot.jinjava.tree.TagNode;
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
      StringBuilder buff = new StringBuilder(RenderMemo.outputLength(before) + 256);  // not grown a doubling at a time
      int[] starts = new int[items.size()];  // where each iteration's output starts in the run's
      boolean recording = true;
      // a loop over the messages reversed meets the last render's messages after the new ones: the candidate for an
      // iteration is the last render's iteration as far from the end (each is reused only where all its reads hold)
      boolean fromEnd = items instanceof MemoSession.ReversedMessages && before != null;
      int shift = fromEnd ? items.size() - before.length : 0;
      int i = 0;
      while (loop.hasNext()) {
        Object raw = loop.next();
        Object val = interpreter.wrap(raw);
        if (val == null && keepNulls && scope.get(itemName) != null) {
          scope.put(itemName, NullValue.INSTANCE);
        } else {
          scope.put(itemName, val);
        }
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
        if (!recording) {
          renderBody(tagNode, interpreter, loop, buff);
          s.countRendered();
        } else if (prev != null && prev.holds(raw, itemName, scope, s, loop)) {
          prev.appendOutput(buff);
          prev.replay(scope, s);
          after.add(prev);
          s.countReused();
        } else {
          MemoSession.Recording r = s.record(loop, scope, itemName);
          int errors = interpreter.getErrors().size();
          try {
            if (renderBody(tagNode, interpreter, loop, buff)) {
              r.opaque();
            }
          } finally {
            s.stopRecording();
          }
          after.add(interpreter.getErrors().size() == errors ? r.finish(raw, buff.substring(starts[i])) : null);
          s.countRendered();
        }
        i++;
      }
      String output = buff.toString();
      s.keepRun(tagNode, after, output, starts);
      return output;
    } finally {
      interpreter.getContext().removeNonMetaContextVariables(loopVars);
    }
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
