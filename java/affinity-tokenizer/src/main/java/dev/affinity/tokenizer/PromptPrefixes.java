package dev.affinity.tokenizer;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * What each conversation's last prompt rendered to and its ids, so that its next turn, which re-sends the whole
 * history with a little more, encodes only what changed (as TensorRT-LLM's prefix tokenizer cache does, #15040, and
 * its boundary-aware incremental tokenization, #17462).
 *
 * <p>Why the reuse is exact: the ids of a rendered prompt are the ids of its pieces between split tokens, in order
 * ({@link SegmentCache}). A new turn's text agrees with the last turn's up to their first difference, at char
 * {@code m}; every scan decision the tokenizer's added-token matching makes before a split token that starts at
 * {@code p} reads chars below {@code p - 1 + L} ({@code L} the longest split token), and the match at {@code p}
 * reads {@code [p, p + L)}. So for the last split token of the previous turn with {@code p + L <= m}, the ids before
 * it are the new text's ids before it too, and the new text is encoded from {@code p} on. A template that rewrites
 * earlier text (Qwen3 dropping an earlier turn's reasoning) moves {@code m} back, and only the ids from there on are
 * encoded again; a tokenizer whose pre-tokenizer treats the first piece apart ({@link SegmentCache#whole()}) never
 * reuses anything.
 *
 * <p>Bounded by bytes (the text counted at two bytes a char, an upper bound; the ids and split-token offsets), least
 * recently used first out; a conversation larger than the whole budget is not kept. Thread-safe.
 */
public final class PromptPrefixes {
  /** The default budget: 256 MiB, about 200 conversations of 150k tokens. */
  public static final long DEFAULT_BUDGET_BYTES = 256L << 20;
  private static final int ENTRY_OVERHEAD = 96;

  private final long budget;
  private final LinkedHashMap<String, State> states = new LinkedHashMap<>(64, 0.75f, true);
  private long bytes;
  private final AtomicLong reusedTurns = new AtomicLong();
  private final AtomicLong wholeTurns = new AtomicLong();
  private final AtomicLong reusedTokens = new AtomicLong();
  private final AtomicLong encodedTokens = new AtomicLong();
  private final AtomicLong evictions = new AtomicLong();
  private final AtomicLong reusedIterations = new AtomicLong();
  private final AtomicLong renderedIterations = new AtomicLong();

  /** {@code budgetBytes}: the most the kept states may take; 0 keeps none. */
  public PromptPrefixes(long budgetBytes) {
    if (budgetBytes < 0) {
      throw new IllegalArgumentException("budgetBytes must be >= 0: " + budgetBytes);
    }
    this.budget = budgetBytes;
  }

  /**
   * One conversation's last prompt: its rendered text, its ids, where its split tokens start, and what its render
   * did in the template's loops (null: nothing kept, {@link RenderMemo}).
   */
  private record State(String text, int[] ids, SegmentCache.Boundaries starts, RenderMemo memo, long bytes) {}

  /**
   * What the prefixes did so far.
   *
   * @param reusedTurns prompts that reused a kept prefix of ids
   * @param wholeTurns prompts encoded whole (no state, or nothing reusable)
   * @param reusedTokens ids taken from kept prefixes
   * @param encodedTokens ids encoded
   * @param entries conversations kept
   * @param bytes what they take
   * @param evictions conversations dropped for room
   * @param reusedIterations iterations of the chat template's loops taken from the conversation's last render
   * @param renderedIterations iterations of those loops rendered
   */
  public record Stats(long reusedTurns, long wholeTurns, long reusedTokens, long encodedTokens, int entries, long bytes,
      long evictions, long reusedIterations, long renderedIterations) {}

  public Stats stats() {
    synchronized (states) {
      return new Stats(reusedTurns.get(), wholeTurns.get(), reusedTokens.get(), encodedTokens.get(), states.size(),
          bytes, evictions.get(), reusedIterations.get(), renderedIterations.get());
    }
  }

  /** Whether anything is kept (a budget above 0). */
  boolean keeps() {
    return budget > 0;
  }

  /** What conversation {@code key}'s last render did in its template's loops, else its parent's; null: nothing. */
  RenderMemo renderMemo(String key, String parentKey) {
    if (key == null || budget == 0) {
      return null;
    }
    State s = lookup(key);
    if (s == null && parentKey != null) {
      s = lookup(parentKey);
    }
    return s == null ? null : s.memo;
  }

  /** A render's reuse of the last one's loop iterations, for {@link #stats}. */
  void countIterations(long reused, long rendered) {
    reusedIterations.addAndGet(reused);
    renderedIterations.addAndGet(rendered);
  }

  public long budgetBytes() {
    return budget;
  }

  /**
   * The ids of {@code text}, the rendered prompt of conversation {@code key}, reusing what its last prompt (else,
   * for a first turn, {@code parentKey}'s: a sub-agent's parent) shares with it; the text and its ids are kept as the
   * conversation's last prompt. Null keys: nothing kept or reused.
   */
  int[] encode(String key, String parentKey, String text, SegmentCache segments, Function<String, int[]> encoder) {
    return encode(key, parentKey, text, null, segments, encoder);
  }

  /** {@link #encode}, keeping {@code memo} (what the render of {@code text} did in its loops) with the prompt. */
  int[] encode(String key, String parentKey, String text, RenderMemo memo, SegmentCache segments,
      Function<String, int[]> encoder) {
    if (key == null || budget == 0 || segments.whole()) {
      return segments.encode(text, encoder);
    }
    State prev = lookup(key);
    if (prev == null && parentKey != null) {
      prev = lookup(parentKey);
    }
    int[] ids = null;
    SegmentCache.Boundaries starts = null;
    if (prev != null) {
      // what the render replayed of the last one at the same offsets is that text: compared from its end
      int m = mismatch(prev.text, text, memo == null ? 0 : memo.sameAs(prev.text), Integer.MAX_VALUE);
      if (m == text.length() && m == prev.text.length()) {
        reusedTurns.incrementAndGet();
        reusedTokens.addAndGet(prev.ids.length);
        return prev.ids.clone();  // the same prompt again (a retry): the state stays
      }
      int k = prev.starts.lastAtOrBefore(m - segments.maxSplitChars());
      if (k >= 0) {
        int from = prev.starts.charAt(k);
        int kept = prev.starts.idAt(k);
        SegmentCache.Boundaries rest = new SegmentCache.Boundaries();
        int[] tail = segments.encodeFrom(text, from, encoder, rest);
        ids = Arrays.copyOf(prev.ids, kept + tail.length);
        System.arraycopy(tail, 0, ids, kept, tail.length);
        starts = SegmentCache.Boundaries.join(prev.starts, k, rest, kept);
        reusedTurns.incrementAndGet();
        reusedTokens.addAndGet(kept);
        encodedTokens.addAndGet(tail.length);
      }
    }
    if (ids == null) {
      starts = new SegmentCache.Boundaries();
      ids = segments.encodeFrom(text, 0, encoder, starts);
      wholeTurns.incrementAndGet();
      encodedTokens.addAndGet(ids.length);
    }
    keep(key, new State(text, ids, starts.trimmed(), memo, 2L * text.length() + 4L * ids.length + starts.bytes()
        + (memo == null ? 0 : memo.bytes()) + ENTRY_OVERHEAD + 2L * key.length()));
    return ids.clone();
  }

  /** Forgets a conversation's kept prompt (its session ended). */
  public void forget(String key) {
    synchronized (states) {
      State s = states.remove(key);
      if (s != null) {
        bytes -= s.bytes;
      }
    }
  }

  private State lookup(String key) {
    synchronized (states) {
      return states.get(key);
    }
  }

  private void keep(String key, State state) {
    synchronized (states) {
      State old = states.remove(key);
      if (old != null) {
        bytes -= old.bytes;
      }
      if (state.bytes > budget) {
        return;
      }
      states.put(key, state);
      bytes += state.bytes;
      // the new state is the youngest and fits the budget alone: the loop stops before reaching it
      var it = states.entrySet().iterator();
      while (bytes > budget && it.hasNext()) {
        Map.Entry<String, State> eldest = it.next();
        bytes -= eldest.getValue().bytes;
        it.remove();
        evictions.incrementAndGet();
      }
    }
  }

  /** The index of the first char where {@code a} and {@code b} differ (the shorter's length when one starts the other). */
  static int mismatch(String a, String b) {
    return mismatch(a, b, 0, Integer.MAX_VALUE);
  }

  /**
   * {@link #mismatch(String, String)} for chars {@code from} (known equal before it) to {@code to}: the first index
   * in {@code [from, min(to, a.length(), b.length()))} where they differ, else that end.
   */
  static int mismatch(String a, String b, int from, int to) {
    // String.regionMatches compares a char at a time (a quarter of the tokenizing thread's time at a 163k-token
    // history); copied a chunk at a time (getChars: a vectorized copy), the chunks compare vectorized (Arrays.mismatch)
    int n = Math.min(to, Math.min(a.length(), b.length()));
    char[] x = new char[MISMATCH_CHUNK];
    char[] y = new char[MISMATCH_CHUNK];
    for (int i = Math.min(from, n); i < n; i += MISMATCH_CHUNK) {
      int len = Math.min(MISMATCH_CHUNK, n - i);
      a.getChars(i, i + len, x, 0);
      b.getChars(i, i + len, y, 0);
      int at = Arrays.mismatch(x, 0, len, y, 0, len);
      if (at >= 0) {
        return i + at;
      }
    }
    return n;
  }

  private static final int MISMATCH_CHUNK = 4096;
}
