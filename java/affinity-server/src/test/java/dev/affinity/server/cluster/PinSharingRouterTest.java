package dev.affinity.server.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.kv.HashAlgorithm;
import dev.affinity.routing.Candidate;
import dev.affinity.routing.ConversationRouter;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.Outcome;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Shared conversation pins against a real etcd, frontends in one JVM: each "frontend" is its own etcd client,
 * {@link SharedPins} and {@code conversation} router over the same three workers (two visible ranks each).
 * A frontend whose pin cache is not started knows only what it wrote, so the paths where etcd's answer differs
 * from the router's choice are taken deterministically.
 */
class PinSharingRouterTest {
  static final WorkerInfo INFO = new WorkerInfo(16, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64);
  static final AtomicLong IDS = new AtomicLong();

  /** A worker for routing only. */
  record RoutingWorker(String id, WorkerInfo info) implements Worker {
    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public WorkerCall send(WorkerRequest request, WorkerListener listener) {
      throw new UnsupportedOperationException("routing-only test worker");
    }
  }

  /** One frontend: its etcd client, pins and routers. */
  final class Frontend implements AutoCloseable {
    final EtcdClusterStorage storage;
    final SharedPins pins;
    final ConversationRouter local;
    final PinSharingRouter router;

    Frontend(String etcdEndpoint, boolean watch, Predicate<String> registered) {
      storage = new EtcdClusterStorage(List.of(etcdEndpoint));
      pins = new SharedPins(storage, "pins-test", Fleet.CONTEXT);
      if (watch) {
        pins.start();
      }
      local = new ConversationRouter(RouterContext.of(Fleet.CONTEXT), 0.75, 16, 0, 10_000);
      for (Worker w : workers) {
        local.addWorker(w);
      }
      router = new PinSharingRouter(local, pins, registered);
    }

    /** Routes one turn of a conversation and releases it; returns where it went. */
    Candidate turn(String conversation) {
      Selection s = router.select(RoutingRequest.builder(IDS.incrementAndGet(), Fleet.CONTEXT)
          .conversationId(conversation).routingKey(conversation).textLength(500).build(), Set.of());
      Candidate c = s.candidate();
      s.release(Outcome.SUCCESS);
      return c;
    }

    /** Binds a conversation in this frontend's router only (what it would choose on its own). */
    void ownChoice(String conversation, Worker worker, int rank) {
      local.adoptPin(conversation, new Candidate(worker, rank));
    }

    @Override
    public void close() {
      pins.close();
      storage.close();
    }
  }

  EtcdProcess etcd;
  final List<Worker> workers = List.of(new RoutingWorker("10.0.0.1:8001", INFO),
      new RoutingWorker("10.0.0.2:8001", INFO), new RoutingWorker("10.0.0.3:8001", INFO));
  final List<Frontend> open = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    etcd = EtcdProcess.start();
  }

  @AfterEach
  void stop() throws Exception {
    open.forEach(Frontend::close);
    etcd.close();
  }

  Frontend frontend(boolean watch) {
    return frontend(watch, id -> false);
  }

  Frontend frontend(boolean watch, Predicate<String> registered) {
    Frontend f = new Frontend(etcd.endpoint(), watch, registered);
    open.add(f);
    return f;
  }

  static void await(String what, Supplier<Boolean> condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.get()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("never: " + what);
      }
      Thread.sleep(20);
    }
  }

  @Test
  void theFirstPlacementWinsAndTheOtherFrontendAdoptsIt() {
    Frontend a = frontend(false);
    Frontend b = frontend(false);
    a.ownChoice("conv-1", workers.get(0), 1);
    b.ownChoice("conv-1", workers.get(2), 0);
    assertEquals(new Candidate(workers.get(0), 1), a.turn("conv-1"), "a places the first turn: its own choice");
    Candidate atB = b.turn("conv-1");
    assertEquals(new Candidate(workers.get(0), 1), atB, "b lost the put-if-absent and adopted a's choice");
    assertEquals(new Candidate(workers.get(0), 1), b.local.boundTo("conv-1"), "b's router now pins it there too");
    assertEquals(0, b.local.stats().outstandingSelections(), "b's own first selection was released");
    assertEquals(new Candidate(workers.get(0), 1), b.turn("conv-1"));
    assertEquals(new Candidate(workers.get(0), 1), a.turn("conv-1"));
  }

  @Test
  void aMoveIsSharedAndAMoveFromAStaleRevisionLoses() throws Exception {
    Frontend a = frontend(true);
    Frontend b = frontend(false);
    Frontend c = frontend(true);
    a.ownChoice("conv-2", workers.get(0), 0);
    assertEquals(new Candidate(workers.get(0), 0), a.turn("conv-2"));
    assertEquals(new Candidate(workers.get(0), 0), b.turn("conv-2"), "b knows the pin at its first revision");

    // the worker leaves a's router: a re-pins the conversation and moves the shared pin (compare-and-swap)
    a.router.removeWorker(workers.get(0).id());
    Candidate moved = a.turn("conv-2");
    assertNotEquals(workers.get(0), moved.worker());
    await("c sees the move", () -> c.pins.get("conv-2") != null
        && c.pins.get("conv-2").worker().equals(moved.workerId()));
    assertEquals(moved, c.turn("conv-2"), "a frontend that saw the move follows it");

    // b still holds the first revision; when the worker leaves b too, its move loses to a's
    b.router.removeWorker(workers.get(0).id());
    b.ownChoice("conv-2", workers.get(moved.worker() == workers.get(1) ? 2 : 1), 1);
    assertEquals(moved, b.turn("conv-2"), "b's compare-and-swap from a stale revision lost; it adopted a's move");
  }

  @Test
  void aFrontendStartedLaterKnowsEveryPin() throws Exception {
    Frontend a = frontend(true);
    List<Candidate> placed = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      placed.add(a.turn("conv-" + i));
    }
    assertTrue(placed.stream().map(Candidate::worker).distinct().count() > 1, "the conversations are spread");
    Frontend late = frontend(true);
    await("the late frontend loads the pins", () -> late.pins.size() == 30);
    for (int i = 0; i < 30; i++) {
      late.ownChoice("conv-" + i, workers.get((placed.get(i).worker() == workers.get(0)) ? 1 : 0), 0);
      assertEquals(placed.get(i), late.turn("conv-" + i), "conv-" + i);
    }
  }

  @Test
  void aFrontendThatHasNotPreparedThePinnedWorkerYetDoesNotMoveThePin() throws Exception {
    Frontend a = frontend(true);
    a.ownChoice("conv-3", workers.get(0), 1);
    assertEquals(new Candidate(workers.get(0), 1), a.turn("conv-3"));
    Frontend behind = frontend(true, id -> id.equals(workers.get(0).id()));
    behind.router.removeWorker(workers.get(0).id()); // registered in the cluster, not yet prepared here
    await("the pin is loaded", () -> behind.pins.get("conv-3") != null);
    Candidate elsewhere = behind.turn("conv-3");
    assertNotEquals(workers.get(0), elsewhere.worker(), "this turn goes where the frontend can route");
    assertEquals(workers.get(0).id(), behind.pins.get("conv-3").worker(), "the shared pin stayed");
    assertEquals(new Candidate(workers.get(0), 1), a.turn("conv-3"), "the other frontends keep it");
    behind.router.addWorker(workers.get(0)); // now prepared
    assertEquals(new Candidate(workers.get(0), 1), behind.turn("conv-3"), "back on its pinned worker");
  }

  @Test
  void withoutEtcdAFrontendRoutesOnItsOwnChoices() throws Exception {
    int nothingThere;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      nothingThere = s.getLocalPort();
    }
    Frontend alone = new Frontend("127.0.0.1:" + nothingThere, false, id -> false);
    open.add(alone);
    alone.ownChoice("conv-4", workers.get(2), 1);
    assertEquals(new Candidate(workers.get(2), 1), alone.turn("conv-4"));
    assertEquals(new Candidate(workers.get(2), 1), alone.turn("conv-4"), "still its own choice");
    assertEquals(0, alone.pins.size());
  }

  @Test
  void onlyPinKeepingRoutersShareTheirPins() {
    assertTrue(PinSharingRouter.supports(new ConversationRouter(RouterContext.of(Fleet.CONTEXT), 0.75, 16, 0, 10)));
    Router roundRobin = new dev.affinity.routing.RouterFactory().create(new dev.affinity.config.RouterConfig(
        "round_robin", dev.affinity.config.Location.unknown("t"), java.util.Map.of(), java.util.Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    assertFalse(PinSharingRouter.supports(roundRobin));
  }

  @Test
  void aReleasedPinIsDeletedInEtcdAndForgottenByEveryFrontend() throws Exception {
    Frontend a = frontend(true);
    Frontend b = frontend(true);
    a.ownChoice("conv-r", workers.get(1), 1);
    assertEquals(new Candidate(workers.get(1), 1), a.turn("conv-r"));
    assertEquals(new Candidate(workers.get(1), 1), b.turn("conv-r"), "b adopts the shared pin");
    assertEquals(new Candidate(workers.get(1), 1), b.local.boundTo("conv-r"));
    assertTrue(a.router.releasePin("conv-r"), "released on a (the session ended there)");
    assertEquals(null, a.local.boundTo("conv-r"));
    assertEquals(java.util.Optional.empty(), a.storage.get(a.pins.prefix() + "conv-r"), "deleted in etcd");
    await("b's router forgets the pin", () -> b.local.boundTo("conv-r") == null && b.pins.get("conv-r") == null);
    assertEquals(0, b.router.pinCount());
  }
}
