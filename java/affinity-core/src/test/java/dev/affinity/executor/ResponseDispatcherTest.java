package dev.affinity.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyInt;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The dispatcher against a Mockito mock of the Executor interface. */
class ResponseDispatcherTest {
  private final BlockingQueue<ExecutorResponse> ready = new LinkedBlockingQueue<>();
  private final AtomicLong nextId = new AtomicLong(1);
  private Executor executor;
  private ResponseDispatcher dispatcher;

  @BeforeEach
  void setUp() {
    executor = mock(Executor.class);
    when(executor.enqueue(any())).thenAnswer(inv -> nextId.getAndIncrement());
    when(executor.awaitResponses(anyInt(), any())).thenAnswer(inv -> {
      int max = inv.getArgument(0);
      Duration timeout = inv.getArgument(1);
      List<ExecutorResponse> out = new ArrayList<>();
      ExecutorResponse first = ready.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (first != null) {
        out.add(first);
        ready.drainTo(out, max - 1);
      }
      return out;
    });
    // The executor answers a cancel with a final response. Stubbed here, before the poller thread
    // starts: stubbing a mock that another thread is calling is not safe in Mockito.
    org.mockito.Mockito.doAnswer(inv -> {
      ready.add(response(inv.getArgument(0), true));
      return null;
    }).when(executor).cancel(org.mockito.ArgumentMatchers.anyLong());
    dispatcher = new ResponseDispatcher(executor, "test", 16, Duration.ofMillis(10));
  }

  @AfterEach
  void tearDown() {
    dispatcher.close();
  }

  private static ExecutorResponse response(long id, boolean fin, int... tokens) {
    return new ExecutorResponse(id, 0, tokens, fin ? FinishReason.LENGTH : FinishReason.NOT_FINISHED, fin, "",
        ExecutorErrorKind.NONE, null, new RequestMetrics(0, 0, 0, 0, 0, 0, 0, 0, 0));
  }

  private static ExecutorRequest request() {
    return ExecutorRequest.builder(new int[] {1, 2, 3}, 4).build();
  }

  @Test
  void routesResponsesToTheirHandlersInOrder() throws Exception {
    List<ExecutorResponse> a = new CopyOnWriteArrayList<>();
    List<ExecutorResponse> b = new CopyOnWriteArrayList<>();
    CountDownLatch finals = new CountDownLatch(2);
    long ia = dispatcher.submit(request(), r -> {
      a.add(r);
      if (r.isFinal()) finals.countDown();
    });
    long ib = dispatcher.submit(request(), r -> {
      b.add(r);
      if (r.isFinal()) finals.countDown();
    });
    ready.add(response(ia, false, 7));
    ready.add(response(ib, false, 9));
    ready.add(response(ia, false, 8));
    ready.add(response(ia, true));
    ready.add(response(ib, true, 10));
    assertTrue(finals.await(5, TimeUnit.SECONDS));
    assertEquals(List.of(7, 8), a.stream().filter(r -> !r.isFinal()).map(r -> r.tokens()[0]).toList());
    assertEquals(3, a.size());
    assertEquals(2, b.size());
    assertEquals(0, dispatcher.outstanding(), "a final response removes its handler");
  }

  @Test
  void aThrowingHandlerDoesNotStopDelivery() throws Exception {
    CountDownLatch second = new CountDownLatch(1);
    long bad = dispatcher.submit(request(), r -> {
      throw new IllegalStateException("boom");
    });
    long good = dispatcher.submit(request(), r -> second.countDown());
    ready.add(response(bad, true));
    ready.add(response(good, true));
    assertTrue(second.await(5, TimeUnit.SECONDS));
  }

  @Test
  void aDeadResponseThreadFailsItsRequestsAtOnceAndMarksTheDispatcherUnhealthy() throws Exception {
    CountDownLatch failed = new CountDownLatch(1);
    List<ExecutorResponse> seen = new CopyOnWriteArrayList<>();
    long oom = dispatcher.submit(request(), r -> {
      throw new OutOfMemoryError("Java heap space (test)");
    });
    long waiting = dispatcher.submit(request(), r -> {
      seen.add(r);
      failed.countDown();
    });
    assertTrue(dispatcher.isHealthy());
    ready.add(response(oom, false, 1));
    assertTrue(failed.await(5, TimeUnit.SECONDS), "the other request ended without waiting for its timeout");
    ExecutorResponse end = seen.get(0);
    assertEquals(waiting, end.requestId());
    assertTrue(end.isFinal());
    assertEquals(ExecutorErrorKind.BACKEND_FAILURE, end.errorKind());
    assertTrue(end.errorMessage().contains("OutOfMemoryError"), end.errorMessage());
    assertEquals(false, dispatcher.isHealthy());
    assertEquals(0, dispatcher.outstanding());
    IllegalStateException refused = assertThrows(IllegalStateException.class, () -> dispatcher.submit(request(), r -> { }));
    assertTrue(refused.getMessage().contains("response thread died"), refused.getMessage());
  }

  @Test
  void closeCancelsOutstandingRequestsAndRefusesNewOnes() {
    long id = dispatcher.submit(request(), r -> { });
    dispatcher.close();
    verify(executor).cancel(id);
    assertEquals(0, dispatcher.outstanding());
    assertThrows(IllegalStateException.class, () -> dispatcher.submit(request(), r -> { }));
  }

  @Test
  void responsesForUnknownRequestsAreIgnored() throws Exception {
    CountDownLatch seen = new CountDownLatch(1);
    ready.add(response(999, true));
    long id = dispatcher.submit(request(), r -> seen.countDown());
    ready.add(response(id, true));
    assertTrue(seen.await(5, TimeUnit.SECONDS));
  }
}
