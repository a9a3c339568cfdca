package dev.affinity.server.http;

import dev.affinity.admission.QueueLimit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The completion requests the frontend holds and has not answered yet, and their prompt tokens, against its
 * {@link QueueLimit}: a request is counted once its body is parsed (before it is tokenized: those waiting for the
 * tokenizing threads are work in flight too) and released when its exchange completes. As the heap budget, a request is always taken when nothing else is held, so one prompt larger than
 * the token bound is not refused forever. Thread-safe.
 */
final class QueuedWork {
  private final QueueLimit limit;
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong tokens = new AtomicLong();

  QueuedWork(QueueLimit limit) {
    this.limit = limit;
  }

  /** Null when the request is taken (release it with {@link #release}), else why it is refused. */
  synchronized String tryAcquire(long promptTokens) {
    long r = requests.get();
    long t = tokens.get();
    if (r > 0 && r + 1 > limit.maxRequests()) {
      return "the frontend holds " + r + " requests in flight, the most affinity.max_queued_requests allows ("
          + limit.maxRequests() + "); retry shortly";
    }
    if (r > 0 && limit.maxTokens() > 0 && t + promptTokens > limit.maxTokens()) {
      return "the frontend holds " + t + " prompt tokens in flight; this request's " + promptTokens + " would pass the "
          + limit.maxTokens() + " allowed (" + limit.tokensSource() + "); retry shortly";
    }
    requests.incrementAndGet();
    tokens.addAndGet(promptTokens);
    return null;
  }

  synchronized void release(long promptTokens) {
    requests.decrementAndGet();
    tokens.addAndGet(-promptTokens);
  }

  long requests() {
    return requests.get();
  }

  long tokens() {
    return tokens.get();
  }
}
