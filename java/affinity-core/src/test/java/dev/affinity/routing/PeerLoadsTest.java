package dev.affinity.routing;

import static dev.affinity.routing.RouterTestSupport.context;
import static dev.affinity.routing.RouterTestSupport.create;
import static dev.affinity.routing.RouterTestSupport.plainWorker;
import static dev.affinity.routing.RouterTestSupport.req;
import static dev.affinity.routing.RouterTestSupport.tokens;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.affinity.routing.RouterTestSupport.FakeClock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Several frontends route as one on load (issue 44 item 2): each router routes on its own in-flight work plus what its
 * peers last reported ({@link Router#peerLoads}), reports only its own ({@link Router#ownLoads}), and a peer that
 * stops reporting stops counting ({@link Router#forgetPeer}).
 */
class PeerLoadsTest {
  final FakeClock clock = new FakeClock();

  Router frontend(String type) {
    Router r = create(type, Map.of(), context(Fleet.CONTEXT, clock));
    r.addWorker(plainWorker("a", 4, true, 2, 64));
    r.addWorker(plainWorker("b", 4, true, 2, 64));
    return r;
  }

  static Map<String, Integer> perWorker(List<LoadShare> shares) {
    Map<String, Integer> m = new HashMap<>();
    shares.forEach(s -> m.merge(s.workerId(), s.requests(), Integer::sum));
    return m;
  }

  @Test
  void aFrontendThatSeesItsPeersLoadSpreadsWhereTheyDidNot() {
    Router one = frontend("load_balancing");
    Router two = frontend("load_balancing");
    List<Selection> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      held.add(one.select(req(i, null), Set.of()));  // a, b, then a or b: both ranks of a worker count
    }
    Map<String, Integer> ones = perWorker(one.ownLoads());
    two.peerLoads("one", one.ownLoads());
    String lighter = ones.getOrDefault("a", 0) < ones.getOrDefault("b", 0) ? "a" : "b";
    assertEquals(lighter, two.select(req(10, null), Set.of()).worker().id(), "two sends its first request to the"
        + " worker one loaded less, as one frontend would");
    assertEquals(1, two.ownLoads().stream().mapToInt(LoadShare::requests).sum(), "two reports only its own request");
    assertEquals(3, one.ownLoads().stream().mapToInt(LoadShare::requests).sum());
  }

  @Test
  void aNewReportReplacesTheLastAndAForgottenPeerStopsCounting() {
    Router r = frontend("load_balancing");
    List<LoadShare> busyA = List.of(new LoadShare("a", 0, 5, 500, 0, 0), new LoadShare("a", 1, 5, 500, 0, 0));
    r.peerLoads("p", busyA);
    assertEquals("b", r.select(req(1, null), Set.of()).worker().id());
    r.peerLoads("p", List.of(new LoadShare("b", 0, 5, 500, 0, 0), new LoadShare("b", 1, 5, 500, 0, 0)));
    assertEquals("a", r.select(req(2, null), Set.of()).worker().id(), "the report replaced, not added");
    r.forgetPeer("p");
    int total = r.loads().stream().mapToInt(CandidateLoad::requests).sum();
    assertEquals(2, total, "only its own two requests count once the peer is forgotten");
    assertEquals(2, r.ownLoads().stream().mapToInt(LoadShare::requests).sum());
  }

  @Test
  void sharesOfUnknownWorkersOrRanksAreIgnoredAndAWorkerThatLeavesTakesItsSharesWithIt() {
    Router r = frontend("load_balancing");
    r.peerLoads("p", List.of(new LoadShare("zzz", 0, 9, 9, 0, 0), new LoadShare("a", 7, 9, 9, 0, 0),
        new LoadShare("a", -1, 9, 9, 0, 0), new LoadShare("a", 1, 2, 20, 0, 0)));
    assertEquals(2, r.loads().stream().mapToInt(CandidateLoad::requests).sum(), "only a's rank 1 is a candidate");
    assertEquals(List.of(), r.ownLoads(), "none of it is this router's own");
    r.removeWorker("a");
    r.addWorker(plainWorker("a", 4, true, 2, 64));
    assertEquals(0, r.loads().stream().mapToInt(CandidateLoad::requests).sum(), "a came back with no stale share");
    r.forgetPeer("p");
    assertEquals(0, r.loads().stream().mapToInt(CandidateLoad::requests).sum(), "nothing taken back twice");
  }

  @Test
  void affinityCountsItsPeersQueuedPrefillWork() {
    // affinity's cost is the prefill work queued at a rank; a peer's long prefill there is work this frontend waits on
    Router one = frontend("affinity");
    Router two = frontend("affinity");
    Selection longPrefill = one.select(req(1, "k1", tokens(4000, 0)), Set.of());
    two.peerLoads("one", one.ownLoads());
    Selection next = two.select(req(2, "k2", tokens(400, 50_000)), Set.of());
    assertEquals(false, next.worker().id().equals(longPrefill.worker().id()) && next.rank() == longPrefill.rank(),
        "not behind the peer's long prefill");
    LoadShare reported = one.ownLoads().stream().filter(s -> s.requests() > 0).findFirst().orElseThrow();
    assertEquals(true, reported.work() > 0 && reported.uncached() > 0, reported.toString());
  }

  @Test
  void affinityReportsItsMeasuredRatesAndTakesItsPeers() {
    Router one = frontend("affinity");
    Selection s = one.select(req(1, "k1", tokens(1000, 0)), Set.of());
    LoadShare share = one.ownLoads().stream().filter(x -> x.workerId().equals(s.worker().id()) && x.rank() == s.rank())
        .findFirst().orElseThrow();
    assertEquals(1.0, share.arrivals(), 1e-3, "its own request there, counted over the rate window");
    assertEquals(0.0, share.doneWork(), 1e-9);
    clock.advance(java.time.Duration.ofSeconds(1));
    s.release(Outcome.SUCCESS);
    LoadShare after = one.ownLoads().stream().filter(x -> x.workerId().equals(s.worker().id()) && x.rank() == s.rank())
        .findFirst().orElseThrow();
    assertEquals(0, after.requests());
    assertEquals(true, after.doneWork() > 0 && after.arrivals() > 0.9, "still reported for its rates: " + after);

    // A peer's rates are taken and given back like its load; the other routers report none.
    Router two = frontend("affinity");
    two.peerLoads("one", one.ownLoads());
    assertEquals(true, two.ownLoads().stream().allMatch(x -> x.arrivals() == 0 && x.doneWork() == 0),
        "two reports only its own (none)");
    two.forgetPeer("one");
    Router lb = frontend("load_balancing");
    lb.select(req(3, null), Set.of());
    assertEquals(true, lb.ownLoads().stream().allMatch(x -> x.arrivals() == 0 && x.doneWork() == 0));
  }
}
