package dev.affinity.server.http;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A bound on the heap that completion requests in flight may hold, so that a burst of large prompts is
 * answered 503 (with {@code Retry-After}) instead of exhausting the heap. A request is charged when it is
 * dispatched and released when its exchange completes. The charge is four times its body: the body itself,
 * the parsed request (its strings), the prompt's token ids (4 bytes per token, about one token per 4 bytes of
 * text: another body's worth) and what the legs build from it. Thread-safe.
 */
final class PromptBudget {
  /** The charge per body byte (see the class comment). */
  static final int BYTES_PER_BODY_BYTE = 4;

  private final long limit;
  private final AtomicLong held = new AtomicLong();

  /** @param limit the most bytes charged at once; a single request larger than it is still admitted alone */
  PromptBudget(long limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be > 0, got " + limit);
    }
    this.limit = limit;
  }

  /** The system property that overrides the budget, in bytes. */
  static final String PROPERTY = "affinity.prompt_budget_bytes";

  /** A quarter of the JVM's maximum heap (at least 64 MiB), or the {@value #PROPERTY} system property. */
  static PromptBudget ofHeap() {
    return new PromptBudget(Long.getLong(PROPERTY, Math.max(64L << 20, Runtime.getRuntime().maxMemory() / 4)));
  }

  static long chargeOf(int bodyBytes) {
    return (long) bodyBytes * BYTES_PER_BODY_BYTE;
  }

  /**
   * Reserves {@code charge} bytes, or returns false when that would pass the limit (a request is always
   * admitted when nothing else is held, so that one prompt larger than the budget is not refused forever).
   */
  boolean tryReserve(long charge) {
    while (true) {
      long now = held.get();
      if (now > 0 && now + charge > limit) {
        return false;
      }
      if (held.compareAndSet(now, now + charge)) {
        return true;
      }
    }
  }

  void release(long charge) {
    held.addAndGet(-charge);
  }

  long held() {
    return held.get();
  }

  long limit() {
    return limit;
  }
}
