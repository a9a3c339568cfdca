package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.mockito.Mockito.when;

import dev.affinity.routing.RouterTestSupport.FakeClock;
import dev.affinity.worker.Worker;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link PinKeeping#adoptPin}, which several frontends use to agree on a key's place: an adopted pin replaces
 * the router's own and the key's next request goes there as a pinned one; the router's rules still apply to it
 * (a dead adopted worker re-pins).
 */
class PinKeepingTest {
  final FakeClock clock = new FakeClock();

  private Router router(String type, List<Worker> workers) {
    Router r = create(type, Map.of(), context(Fleet.CONTEXT, clock));
    workers.forEach(r::addWorker);
    return r;
  }

  @ParameterizedTest
  @ValueSource(strings = {"conversation", "affinity"})
  void anAdoptedPinReplacesTheRoutersOwn(String type) {
    List<Worker> workers = List.of(worker("a"), worker("b"), worker("c"));
    Router r = router(type, workers);
    Selection own = r.select(req(1, "k"), Set.of());
    own.release(Outcome.SUCCESS);
    Worker other = workers.stream().filter(w -> w != own.worker()).findFirst().orElseThrow();
    ((PinKeeping) r).adoptPin("k", new Candidate(other, -1));
    Selection next = r.select(req(2, "k"), Set.of());
    assertEquals(other, next.worker(), "the adopted pin");
    assertEquals(DecisionReason.PINNED, next.reason());
    next.release(Outcome.SUCCESS);
    ((PinKeeping) r).adoptPin("new-key", new Candidate(own.worker(), -1));
    assertEquals(own.worker(), r.select(req(3, "new-key"), Set.of()).worker(), "a key the router never saw");
  }

  @ParameterizedTest
  @ValueSource(strings = {"conversation", "affinity"})
  void anAdoptedPinToADeadWorkerRePins(String type) {
    List<Worker> workers = List.of(worker("a"), worker("b"));
    Router r = router(type, workers);
    ((PinKeeping) r).adoptPin("k", new Candidate(workers.get(0), -1));
    when(workers.get(0).isAlive()).thenReturn(false);
    Selection s = r.select(req(1, "k"), Set.of());
    assertNotEquals(workers.get(0), s.worker());
    assertEquals(DecisionReason.RE_PINNED, s.reason());
  }

  @ParameterizedTest
  @ValueSource(strings = {"conversation", "affinity"})
  void aReleasedPinIsForgottenAndPlacedAgain(String type) {
    List<Worker> workers = List.of(worker("a"), worker("b"));
    Router r = router(type, workers);
    PinKeeping p = (PinKeeping) r;
    r.select(req(1, "k"), Set.of()).release(Outcome.SUCCESS);
    r.select(req(2, "other"), Set.of()).release(Outcome.SUCCESS);
    assertEquals(2, p.pinCount());
    assertEquals(DecisionReason.PINNED, r.select(req(3, "k"), Set.of()).reason());
    assertEquals(true, p.releasePin("k"));
    assertEquals(false, p.releasePin("k"));
    assertEquals(1, p.pinCount());
    assertNotEquals(DecisionReason.PINNED, r.select(req(4, "k"), Set.of()).reason(), "placed again, not pinned");
  }
}
