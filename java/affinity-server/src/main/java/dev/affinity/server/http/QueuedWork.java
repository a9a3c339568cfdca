package dev.affinity.server.http;

import dev.affinity.admission.QueueLimit;

/**
 * The completion requests the frontend holds and has not answered yet, and their prompt tokens, against its
 * {@link QueueLimit}: a request is counted once its body is parsed (before it is tokenized: those waiting for the
 * tokenizing threads are work in flight too) and released when its exchange completes. As the heap budget, a request is always taken when nothing else is held, so one prompt larger than
 * the token bound is not refused forever. Thread-safe.
 */
final class QueuedWork {
  private final QueueLimit limit;
  private long requests; // guarded by this
  private long tokens; // guarded by this

  QueuedWork(QueueLimit limit) {
    this.limit = limit;
  }

  /** Null when the request is taken (release it with {@link #release}), else why it is refused. */
  synchronized String tryAcquire(long promptTokens) {
    if (requests > 0 && requests + 1 > limit.maxRequests()) {
      return "the frontend holds " + requests + " requests in flight, the most affinity.max_queued_requests allows ("
          + limit.maxRequests() + "); retry shortly";
    }
    if (requests > 0 && limit.maxTokens() > 0 && tokens + promptTokens > limit.maxTokens()) {
      return "the frontend holds " + tokens + " prompt tokens in flight; this request's " + promptTokens + " would pass the "
          + limit.maxTokens() + " allowed (" + limit.tokensSource() + "); retry shortly";
    }
    requests++;
    tokens += promptTokens;
    return null;
  }

  synchronized void release(long promptTokens) {
    requests--;
    tokens -= promptTokens;
  }

  synchronized long requests() {
    return requests;
  }

  synchronized long tokens() {
    return tokens;
  }
}
