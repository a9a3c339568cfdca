package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.worker;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.affinity.worker.Worker;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Dynamic membership: a worker that leaves (its key deleted or expired) is removed from its router while
 * requests are in flight there. Its selections are released at once (its load no longer counts, nothing
 * expires later, no double release when the requests end) and the conversations pinned to it move to the
 * remaining workers on their next turn, where they stay.
 */
class WorkerRemovalTest {

  @ParameterizedTest
  @ValueSource(strings = {"round_robin", "load_balancing", "kv_cache_aware", "conversation", "affinity"})
  void aRemovedWorkersSelectionsAreReleasedAndItsConversationsRePinned(String type) {
    Router r = create(type, Map.of(), context(Fleet.CONTEXT, new RouterTestSupport.FakeClock()));
    Worker a = worker("a");
    Worker b = worker("b");
    r.addWorker(a);
    r.addWorker(b);
    List<Selection> onA = new ArrayList<>();
    List<String> keysOnA = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      Selection s = r.select(req(i, "conv-" + i), Set.of());
      if (s.worker().id().equals("a")) {
        onA.add(s);
        keysOnA.add("conv-" + i);
      } else {
        s.release(Outcome.SUCCESS);
      }
    }
    assertNotEquals(0, onA.size(), "a took some conversations");
    assertEquals(onA.size(), r.stats().outstandingSelections());

    r.removeWorker("a");
    assertEquals(0, r.stats().outstandingSelections(), "released with the worker");
    for (Selection s : onA) {
      assertFalse(s.release(Outcome.FAILURE), "the in-flight request's own release is a no-op");
    }
    assertEquals(0, r.stats().doubleReleases());

    int id = 100;
    for (String key : keysOnA) {
      Selection moved = r.select(req(id++, key), Set.of());
      assertEquals("b", moved.worker().id());
      moved.release(Outcome.SUCCESS);
      Selection again = r.select(req(id++, key), Set.of());
      assertEquals("b", again.worker().id(), "the new pin holds");
      if (type.equals("conversation") || type.equals("affinity")) {
        assertEquals(DecisionReason.PINNED, again.reason(), key);
      }
      again.release(Outcome.SUCCESS);
    }
    assertEquals(0, r.stats().outstandingSelections());
  }
}
