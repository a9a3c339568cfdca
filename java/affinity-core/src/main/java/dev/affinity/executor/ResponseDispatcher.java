package dev.affinity.executor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers an executor's responses to per-request handlers in batches (never one upcall per token):
 * from its own poller thread (real-clock executors), or, when {@linkplain #pumped pumped}, on the
 * caller's thread each time it calls {@link #pump()} (the fleet simulator's single event loop drives
 * virtual-clock executors that way, deterministically).
 */
public final class ResponseDispatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ResponseDispatcher.class);

  private final Executor executor;
  private final int batchSize;
  private final Duration pollTimeout;
  private final Object lock = new Object();
  private final Map<Long, ResponseHandler> handlers = new HashMap<>();
  private final Thread poller;  // null when pumped
  private boolean accepting = true;
  private volatile boolean stopped;
  /** Why the poller died (an Error such as OutOfMemoryError, or a failing executor), or null. */
  private volatile Throwable fatal;

  public ResponseDispatcher(Executor executor, String name) {
    this(executor, name, 256, Duration.ofMillis(50));
  }

  public ResponseDispatcher(Executor executor, String name, int batchSize, Duration pollTimeout) {
    this(executor, name, batchSize, pollTimeout, true);
  }

  private ResponseDispatcher(Executor executor, String name, int batchSize, Duration pollTimeout, boolean threaded) {
    this.executor = Objects.requireNonNull(executor, "executor");
    if (batchSize <= 0) {
      throw new IllegalArgumentException("batchSize must be > 0, got " + batchSize);
    }
    this.batchSize = batchSize;
    this.pollTimeout = Objects.requireNonNull(pollTimeout, "pollTimeout");
    if (threaded) {
      this.poller = new Thread(this::pollLoop, "affinity-responses-" + name);
      this.poller.setDaemon(true);
      this.poller.start();
    } else {
      this.poller = null;
    }
  }

  /** A dispatcher without a thread: responses are delivered on the thread that calls {@link #pump()}. */
  public static ResponseDispatcher pumped(Executor executor, int batchSize) {
    return new ResponseDispatcher(executor, "pumped", batchSize, Duration.ZERO, false);
  }

  /**
   * Pumped dispatchers only: delivers every response that is ready now, on this thread; returns how
   * many were delivered.
   */
  public int pump() {
    if (poller != null) {
      throw new IllegalStateException("this dispatcher has its own poller thread");
    }
    int delivered = 0;
    while (true) {
      List<ExecutorResponse> batch;
      try {
        batch = executor.awaitResponses(batchSize, Duration.ZERO);
      } catch (IllegalStateException closed) {
        return delivered;
      }
      for (ExecutorResponse r : batch) {
        deliver(r);
      }
      delivered += batch.size();
      if (batch.size() < batchSize) {
        return delivered;
      }
    }
  }

  /** Enqueues the request and routes its responses to {@code handler}; returns the request id. */
  public long submit(ExecutorRequest request, ResponseHandler handler) {
    Objects.requireNonNull(handler, "handler");
    synchronized (lock) {
      if (fatal != null) {
        throw new IllegalStateException("the executor's response thread died (" + describe(fatal) + ")");
      }
      if (!accepting) {
        throw new IllegalStateException("response dispatcher is closed");
      }
      // Registering under the lock that the poller takes to look handlers up means a response can
      // never arrive before its handler is known.
      long id = executor.enqueue(request);
      handlers.put(id, handler);
      return id;
    }
  }

  /**
   * False once the poller thread has died of an error: no response of this executor will be delivered
   * again, so its worker must not be chosen (a worker's {@code isAlive} reads this).
   */
  public boolean isHealthy() {
    return fatal == null;
  }

  /** Why the poller died, or null while it is healthy. */
  public Throwable failure() {
    return fatal;
  }

  /** Requests whose final response has not been delivered yet. */
  public int outstanding() {
    synchronized (lock) {
      return handlers.size();
    }
  }

  private void pollLoop() {
    try {
      while (!stopped) {
        List<ExecutorResponse> batch;
        try {
          batch = executor.awaitResponses(batchSize, pollTimeout);
        } catch (IllegalStateException closed) {
          if (stopped || executor.isClosed()) {
            return;  // closing, or the executor was closed under us: not a failure
          }
          throw closed;
        }
        for (ExecutorResponse r : batch) {
          deliver(r);
        }
      }
    } catch (Throwable t) {  // an Error (OutOfMemoryError) or a failing executor: fail fast, not silently
      die(t);
    }
  }

  /**
   * The poller is gone: marks the dispatcher unhealthy and ends every outstanding request with a
   * backend failure (its caller may retry elsewhere) instead of leaving it to its timeout.
   */
  private void die(Throwable t) {
    List<Map.Entry<Long, ResponseHandler>> orphans;
    synchronized (lock) {
      fatal = t;
      accepting = false;
      orphans = new ArrayList<>(handlers.entrySet());
      handlers.clear();
      lock.notifyAll();
    }
    log.error("the response thread of executor '{}' died; its {} outstanding requests fail and it takes no more",
        poller == null ? "pumped" : poller.getName(), orphans.size(), t);
    String message = "the executor's response thread died (" + describe(t) + ")";
    for (Map.Entry<Long, ResponseHandler> e : orphans) {
      try {
        e.getValue().onResponse(new ExecutorResponse(e.getKey(), 0, new int[0], FinishReason.ERROR, true, message,
            ExecutorErrorKind.BACKEND_FAILURE, null, new RequestMetrics(-1, -1, -1, -1, 0, 0, -1, 0, 0)));
      } catch (Throwable handlerFailure) {
        log.error("failing request {} after the response thread died threw", e.getKey(), handlerFailure);
      }
    }
  }

  private static String describe(Throwable t) {
    return t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
  }

  private void deliver(ExecutorResponse r) {
    ResponseHandler h;
    synchronized (lock) {
      h = r.isFinal() ? handlers.remove(r.requestId()) : handlers.get(r.requestId());
      if (r.isFinal() && handlers.isEmpty()) {
        lock.notifyAll();
      }
    }
    if (h == null) {
      log.debug("response for request {} has no handler (submitted elsewhere?)", r.requestId());
      return;
    }
    try {
      h.onResponse(r);
    } catch (RuntimeException e) {
      log.error("response handler of request {} threw", r.requestId(), e);
    }
  }

  /**
   * Stops accepting requests, cancels those still outstanding, waits (bounded) for their final
   * responses to be delivered, then stops the poller. Does not close the executor.
   */
  @Override
  public void close() {
    List<Long> live;
    synchronized (lock) {
      if (!accepting) {
        return;
      }
      accepting = false;
      live = new ArrayList<>(handlers.keySet());
    }
    for (long id : live) {
      try {
        executor.cancel(id);
      } catch (RuntimeException e) {
        log.debug("cancel of request {} during close failed", id, e);
      }
    }
    if (poller == null) {
      pump();  // cancellation answers at once; deliver those answers before giving up on the rest
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    synchronized (lock) {
      while (!handlers.isEmpty() && System.nanoTime() < deadline && poller != null && poller.isAlive()) {
        try {
          lock.wait(50);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      if (!handlers.isEmpty()) {
        log.warn("{} requests had no final response when the dispatcher closed", handlers.size());
      }
    }
    stopped = true;
    if (poller == null) {
      return;
    }
    try {
      poller.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
