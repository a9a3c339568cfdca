package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.inOrder;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import dev.affinity.routing.Fleet;
import dev.affinity.executor.ClockMode;
import dev.affinity.executor.Executor;
import dev.affinity.executor.ExecutorRequest;
import org.junit.jupiter.api.Test;
import org.mockito.InOrder;

/** How the simulator keeps a fleet's executors on one timeline. */
class VirtualExecutorTest {
  private final VirtualScheduler clock = new VirtualScheduler();
  private final VirtualExecutor.Timeline timeline = new VirtualExecutor.Timeline();

  private static Executor virtualMock() {
    Executor e = mock(Executor.class);
    when(e.clockMode()).thenReturn(ClockMode.VIRTUAL);
    return e;
  }

  @Test
  void aRequestBringsEveryExecutorOfTheFleetToNowFirstAndInvalidatesTheirIterationEnds() {
    Executor ctx = virtualMock();
    Executor gen = virtualMock();
    when(ctx.nextIterationEndMicros()).thenReturn(-1L);
    VirtualExecutor c = new VirtualExecutor("ctx-0", Fleet.CONTEXT, ctx, clock, timeline, (e, r) -> { });
    VirtualExecutor g = new VirtualExecutor("gen-0", Fleet.GENERATION, gen, clock, timeline, (e, r) -> { });
    assertEquals(-1, c.nextIterationEndMicros());
    assertEquals(-1, c.nextIterationEndMicros(), "cached");
    verify(ctx, times(1)).nextIterationEndMicros();

    clock.advanceTo(500);
    ExecutorRequest request = ExecutorRequest.builder(new int[] {1, 2}, 1).build();
    g.enqueue(request);
    // The idle context executor is moved to 500 before the generation request (which may free KV it
    // holds) enters: whatever that frees starts at 500, not at its stale clock.
    InOrder order = inOrder(ctx, gen);
    order.verify(ctx).advanceTo(500);
    order.verify(gen).advanceTo(500);
    order.verify(gen).enqueue(request);
    c.nextIterationEndMicros();
    verify(ctx, times(2)).nextIterationEndMicros();  // re-read after another executor's change

    g.enqueue(request);  // same time again: nobody is moved twice
    verify(ctx, times(1)).advanceTo(500);
    verify(ctx, never()).enqueue(any());
    g.cancel(7);
    verify(gen).cancel(7);
    assertEquals(true, c.takeTouched(), "an executor moved in time may have responses ready");
    assertEquals(false, c.takeTouched());
  }
}
