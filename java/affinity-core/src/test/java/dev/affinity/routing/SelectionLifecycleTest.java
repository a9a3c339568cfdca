package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.Mockito.when;

import dev.affinity.routing.RouterTestSupport.FakeClock;
import dev.affinity.worker.Worker;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SelectionLifecycleTest {
  final FakeClock clock = new FakeClock();
  final RoundRobinRouter router = new RoundRobinRouter(context(Fleet.CONTEXT, clock));

  @Test
  void everySelectionIsReleasedExactlyOnce() {
    router.addWorker(worker("a"));
    Selection s = router.select(req(1, null), Set.of());
    assertEquals(1, router.stats().outstandingSelections());
    assertTrue(s.release(Outcome.SUCCESS));
    assertFalse(s.release(Outcome.FAILURE), "a second release is a no-op");
    assertEquals(0, router.stats().outstandingSelections());
    assertEquals(1, router.stats().doubleReleases());
  }

  @Test
  void selectionsNeverReleasedExpireAfterTheTtlAndAreCounted() {
    router.addWorker(worker("a"));
    Selection forgotten = router.select(req(1, null), Set.of());
    clock.advance(Duration.ofSeconds(179));
    router.select(req(2, null), Set.of()).release(Outcome.SUCCESS);
    assertEquals(1, router.stats().outstandingSelections(), "not yet expired");
    clock.advance(Duration.ofSeconds(2));
    router.select(req(3, null), Set.of()).release(Outcome.SUCCESS);
    assertEquals(0, router.stats().outstandingSelections());
    assertEquals(1, router.stats().expiredSelections());
    assertFalse(forgotten.release(Outcome.SUCCESS), "releasing an expired selection does nothing");
  }

  @Test
  void noWorkerLeftIsAClearError() {
    Worker a = worker("a");
    Worker b = worker("b");
    router.addWorker(a);
    router.addWorker(b);
    when(b.isAlive()).thenReturn(false);
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class, () -> router.select(req(1, null), Set.of("a")));
    assertTrue(e.getMessage().contains("no context worker available"), e.getMessage());
    assertEquals("a", router.select(req(2, null), Set.of()).worker().id());
  }

  @Test
  void eachWayOfHavingNoWorkerHasItsReasonWordingAndCount() {
    NoWorkerAvailableException none = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(req(1, null), Set.of()));
    assertEquals(NoWorkerAvailableException.Reason.NONE_KNOWN, none.reason());
    assertTrue(none.getMessage().contains("the context fleet has no worker"), none.getMessage());

    Worker a = worker("a");
    Worker b = worker("b");
    router.addWorker(a);
    router.addWorker(b);
    when(a.isAlive()).thenReturn(false);
    when(b.isAlive()).thenReturn(false);
    NoWorkerAvailableException dead = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(req(2, null), Set.of()));
    assertEquals(NoWorkerAvailableException.Reason.ALL_DEAD, dead.reason());
    assertTrue(dead.getMessage().contains("all 2 context workers are down"), dead.getMessage());

    when(b.isAlive()).thenReturn(true);
    NoWorkerAvailableException excluded = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(req(3, null), Set.of("b")));
    assertEquals(NoWorkerAvailableException.Reason.ALL_EXCLUDED, excluded.reason());
    assertTrue(excluded.getMessage().contains("every live context worker (1 of 2) already failed this request"),
        excluded.getMessage());

    Map<NoWorkerAvailableException.Reason, Long> counted = router.stats().unavailable();
    assertEquals(1L, counted.get(NoWorkerAvailableException.Reason.NONE_KNOWN));
    assertEquals(1L, counted.get(NoWorkerAvailableException.Reason.ALL_DEAD));
    assertEquals(1L, counted.get(NoWorkerAvailableException.Reason.ALL_EXCLUDED));
    assertEquals(0L, counted.get(NoWorkerAvailableException.Reason.LEFT_WHILE_ROUTING));
  }

  @Test
  void workersComeAndGoAtRunTime() {
    router.addWorker(worker("a"));
    router.addWorker(worker("a"));  // idempotent
    assertEquals(1, router.workers().size());
    router.addWorker(worker("b"));
    Selection s = router.select(req(1, null), Set.of());
    Selection other = router.select(req(9, null), Set.of());
    assertEquals(2, router.stats().outstandingSelections());
    router.removeWorker(s.worker().id());
    assertEquals(1, router.workers().size());
    assertEquals(1, router.stats().outstandingSelections(), "the removed worker's selection is released with it");
    assertTrue(s.isReleased());
    assertFalse(s.release(Outcome.SUCCESS), "its owner's release is then a no-op");
    assertEquals(0, router.stats().doubleReleases(), "and not counted as a double release");
    assertTrue(other.release(Outcome.SUCCESS));
    for (int i = 0; i < 4; i++) {
      assertEquals(router.workers().get(0).id(), router.select(req(2 + i, null), Set.of()).worker().id());
    }
  }
}
