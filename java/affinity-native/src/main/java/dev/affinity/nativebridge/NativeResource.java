package dev.affinity.nativebridge;

import dev.affinity.executor.ExecutorException;
import java.util.function.Supplier;

/**
 * The lifecycle of an object that owns a native resource, safe to close while other threads call
 * it: every call runs inside {@link #call} / {@link #run}, which count it in flight; {@link #close()}
 * refuses new calls, {@linkplain #interrupt() wakes} blocked ones, waits until none is in flight and
 * only then {@linkplain #free() frees} the native object, once (the usage counting of ONNX Runtime's
 * {@code NativeObject}). Later calls get {@link IllegalStateException}. Exceptions of native calls
 * (JavaCPP turns C++ exceptions into {@link RuntimeException}s) arrive as {@link ExecutorException}
 * with the native message.
 */
abstract class NativeResource implements AutoCloseable {
  private final Object usage = new Object();
  private int inFlight;
  private boolean closing;
  private boolean closed;

  /** What the resource is, for messages ("sim executor"). */
  protected abstract String describeResource();

  /** Called once when close starts, before it waits for the calls in flight: wakes blocked calls. */
  protected void interrupt() {}

  /** Frees the native object; runs once, when no call is in flight and none can start. */
  protected abstract void free();

  /** Runs fn as one call: refused once closing, counted in flight until it returns. */
  protected final <T> T call(Supplier<T> fn) {
    synchronized (usage) {
      if (closing) {
        throw new IllegalStateException(describeResource() + " is closed");
      }
      inFlight++;
    }
    try {
      return fn.get();
    } catch (IllegalStateException | IllegalArgumentException | ExecutorException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new ExecutorException(e.getMessage(), e);
    } finally {
      synchronized (usage) {
        if (--inFlight == 0) {
          usage.notifyAll();
        }
      }
    }
  }

  protected final void run(Runnable fn) {
    call(() -> {
      fn.run();
      return null;
    });
  }

  /** True once {@link #close()} has started. */
  public boolean isClosed() {
    synchronized (usage) {
      return closing;
    }
  }

  /**
   * Refuses new calls, wakes blocked ones, waits for the calls in flight and frees the native
   * object. Idempotent; a second caller waits until the first has freed it.
   */
  @Override
  public final void close() {
    synchronized (usage) {
      if (closing) {
        while (!closed) {
          try {
            usage.wait();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
        return;
      }
      closing = true;
    }
    interrupt();
    boolean interrupted = false;
    synchronized (usage) {
      while (inFlight > 0) {
        try {
          usage.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    try {
      free();
    } finally {
      synchronized (usage) {
        closed = true;
        usage.notifyAll();
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
