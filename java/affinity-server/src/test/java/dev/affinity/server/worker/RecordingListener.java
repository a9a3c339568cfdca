package dev.affinity.server.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.affinity.protocol.OpenAiResponse;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerReport;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Records what a call delivers and checks the listener contract as it goes: calls never overlap, nothing
 * arrives after the terminal call, exactly one terminal call ({@link #assertContract()}). Shared by the
 * worker-mode tests.
 */
public final class RecordingListener implements WorkerListener {
  private static final long WAIT_SECONDS = 10; // a bound for a broken build, not a timing assertion

  private final List<OpenAiStreamChunk> chunks = new ArrayList<>(); // guarded by this
  private final List<String> violations = new ArrayList<>(); // guarded by this
  private final AtomicBoolean inside = new AtomicBoolean();
  private final AtomicInteger terminals = new AtomicInteger();
  private final CompletableFuture<Object> terminal = new CompletableFuture<>();
  private volatile OpenAiResponse response;
  private final Runnable onFirstChunk;

  public RecordingListener() {
    this(() -> { });
  }

  /** {@code onFirstChunk} runs inside the first {@code onChunk} (e.g. to cancel the call). */
  public RecordingListener(Runnable onFirstChunk) {
    this.onFirstChunk = onFirstChunk;
  }

  private void enter(String what) {
    if (!inside.compareAndSet(false, true)) {
      violation("overlapping listener calls at " + what);
    }
    if (terminals.get() > 0) {
      violation(what + " after the terminal call");
    }
  }

  private void exit() {
    inside.set(false);
  }

  private synchronized void violation(String v) {
    violations.add(v);
  }

  @Override
  public void onEncodedChunk(dev.affinity.worker.EncodedChunk encodedChunk) {
    OpenAiStreamChunk chunk = encodedChunk.parsed();
    enter("onChunk");
    boolean first;
    synchronized (this) {
      chunks.add(chunk);
      first = chunks.size() == 1;
    }
    try {
      if (first) {
        onFirstChunk.run(); // still inside onChunk: a nested listener call would be flagged
      }
    } finally {
      exit();
    }
  }

  @Override
  public void onEncodedResponse(dev.affinity.worker.EncodedResponse encodedR) {
    OpenAiResponse r = encodedR.parsed();
    enter("onResponse");
    if (response != null) {
      violation("a second onResponse");
    }
    response = r;
    exit();
  }

  @Override
  public void onComplete(WorkerReport report) {
    enter("onComplete");
    terminals.incrementAndGet();
    terminal.complete(report);
    exit();
  }

  @Override
  public void onError(WorkerFailure failure) {
    enter("onError");
    terminals.incrementAndGet();
    terminal.complete(failure);
    exit();
  }

  public Object awaitTerminal() {
    try {
      return terminal.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the call did not end", e);
    }
  }

  public WorkerReport awaitReport() {
    Object t = awaitTerminal();
    if (t instanceof WorkerReport r) {
      return r;
    }
    return fail("expected onComplete, got onError(" + t + ")");
  }

  public WorkerFailure awaitFailure() {
    Object t = awaitTerminal();
    if (t instanceof WorkerFailure f) {
      return f;
    }
    return fail("expected onError, got onComplete(" + t + ")");
  }

  public synchronized List<OpenAiStreamChunk> chunks() {
    return List.copyOf(chunks);
  }

  public OpenAiResponse response() {
    return response;
  }

  public int terminals() {
    return terminals.get();
  }

  /** Exactly one terminal call and no contract violation. */
  public synchronized void assertContract() {
    assertTrue(violations.isEmpty(), violations::toString);
    assertEquals(1, terminals.get(), "exactly one onComplete/onError");
  }
}
