package dev.affinity.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyInt;
import static org.mockito.ArgumentMatchers.anyLong;
import static org.mockito.Mockito.doAnswer;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** A dispatcher without a thread: responses arrive on the thread that pumps, in order, in batches. */
class PumpedDispatcherTest {
  private final Deque<ExecutorResponse> ready = new ArrayDeque<>();
  private final AtomicLong nextId = new AtomicLong(1);
  private final List<Integer> batchSizes = new ArrayList<>();
  private final Executor executor = mock(Executor.class);

  PumpedDispatcherTest() {
    when(executor.enqueue(any())).thenAnswer(inv -> nextId.getAndIncrement());
    when(executor.awaitResponses(anyInt(), any())).thenAnswer(inv -> {
      assertEquals(Duration.ZERO, inv.getArgument(1), "a pump never waits");
      int max = inv.getArgument(0);
      List<ExecutorResponse> out = new ArrayList<>();
      while (out.size() < max && !ready.isEmpty()) {
        out.add(ready.poll());
      }
      batchSizes.add(out.size());
      return out;
    });
    doAnswer(inv -> ready.add(response(inv.getArgument(0), true))).when(executor).cancel(anyLong());
  }

  private static ExecutorResponse response(long id, boolean fin) {
    return new ExecutorResponse(id, 0, new int[] {1}, fin ? FinishReason.LENGTH : FinishReason.NOT_FINISHED, fin, "",
        ExecutorErrorKind.NONE, null, new RequestMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0));
  }

  private static ExecutorRequest request() {
    return ExecutorRequest.builder(new int[] {1, 2, 3}, 4).build();
  }

  @Test
  void pumpDeliversEverythingReadyOnTheCallersThreadInBatches() {
    ResponseDispatcher d = ResponseDispatcher.pumped(executor, 2);
    List<String> seen = new ArrayList<>();
    Thread caller = Thread.currentThread();
    long a = d.submit(request(), r -> {
      assertSame(caller, Thread.currentThread());
      seen.add("a" + (r.isFinal() ? "!" : ""));
    });
    long b = d.submit(request(), r -> seen.add("b" + (r.isFinal() ? "!" : "")));
    assertEquals(0, d.pump(), "nothing ready yet");
    ready.add(response(a, false));
    ready.add(response(b, false));
    ready.add(response(a, true));
    assertEquals(3, d.pump());
    assertEquals(List.of("a", "b", "a!"), seen);
    assertEquals(List.of(0, 2, 1), batchSizes, "batches of at most 2 until one comes back short");
    assertEquals(1, d.outstanding());
    d.close();  // cancels b; the cancellation's final response is delivered before close returns
    assertEquals(List.of("a", "b", "a!", "b!"), seen);
    assertEquals(0, d.outstanding());
    assertThrows(IllegalStateException.class, () -> d.submit(request(), r -> { }));
  }

  @Test
  void aThreadedDispatcherCannotBePumped() {
    Executor idle = mock(Executor.class);
    when(idle.awaitResponses(anyInt(), any())).thenReturn(List.of());
    ResponseDispatcher d = new ResponseDispatcher(idle, "threaded", 4, Duration.ofMillis(5));
    try {
      assertThrows(IllegalStateException.class, d::pump);
    } finally {
      d.close();
    }
  }
}
