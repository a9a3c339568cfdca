package dev.affinity.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The measured queues the queueing externality is priced from. */
class RankQueuesTest {
  private static final long S = 1_000_000_000L;
  /** A session too big to move: its wait is never capped. */
  private static final double BIG = 1e300;

  /** One completion of 1,000 units of work after 2 s busy: 0.002 s per unit. */
  private static RankQueues measured(double windowSeconds) {
    RankQueues q = new RankQueues(windowSeconds, 1000);
    q.arrived(9, null, BIG, 0);
    q.completed(9, 1000, 2 * S);
    return q;
  }

  @Test
  void secondsPerWorkIsBusyTimeOverCompletedWork() {
    RankQueues q = new RankQueues(1e9, 1000);  // no decay to speak of
    assertEquals(0, q.secondsPerWork(), "nothing measured yet");
    q.arrived(0, "a", BIG, 0);
    q.arrived(0, "b", BIG, S);  // the rank stays busy from 0
    q.completed(0, 1000, 3 * S);
    q.completed(0, 500, 4 * S);
    // busy 0..4 s for 1,500 units
    assertEquals(4.0 / 1500, q.secondsPerWork(), 1e-9);
  }

  @Test
  void anIdleGapIsNotBusyTime() {
    RankQueues q = new RankQueues(1e9, 1000);  // no decay to speak of
    q.arrived(0, null, BIG, 0);
    q.completed(0, 100, S);
    q.arrived(0, null, BIG, 10 * S);  // idle from 1 s to 10 s
    q.completed(0, 100, 11 * S);
    assertEquals(2.0 / 200, q.secondsPerWork(), 1e-9);
  }

  @Test
  void aSessionComesAtMostOnceWhateverTheWindow() {
    RankQueues q = measured(1e9);
    long now = 3 * S;
    q.arrived(0, "other", BIG, now);
    // one request in a window of 1e9 s: a rate of 1e-9 per second, 2e-12 per unit of work
    assertEquals(2e-12 * 1000, q.delayedWork(0, "me", 1000, 1, now), 1e-15);
    assertEquals(1.0, q.delayedWork(0, "me", 1e15, 1, now), 1e-12, "capped at one call in flight");
  }

  @Test
  void theRequestsOwnSessionIsNotCharged() {
    RankQueues q = measured(1e9);
    q.arrived(0, "me", BIG, 3 * S);
    q.arrived(0, "other", BIG, 3 * S);
    assertEquals(1.0, q.delayedWork(0, "me", 1e15, 1, 3 * S), 1e-12, "only the other session");
    assertEquals(2.0, q.delayedWork(0, null, 1e15, 1, 3 * S), 1e-12, "a keyless request waits for both");
  }

  @Test
  void requestsWithoutAKeyArriveAsAPoissonStream() {
    RankQueues q = measured(1e9);
    for (int i = 0; i < 5; i++) {
      q.arrived(0, null, BIG, 3 * S);
    }
    // 5 arrivals per 1e9 s x 0.002 s per unit: not capped, linear in the window
    assertEquals(5e-9 * 0.002 * 1e12, q.delayedWork(0, "me", 1e12, 1, 3 * S), 1e-9);
  }

  @Test
  void aSessionThatMovedCountsOnlyWhereItIsNow() {
    RankQueues q = measured(1e9);
    q.arrived(0, "k", BIG, 3 * S);
    q.arrived(1, "k", BIG, 4 * S);
    assertEquals(0, q.delayedWork(0, "me", 1e15, 1, 5 * S), 1e-12);
    assertEquals(1.0, q.delayedWork(1, "me", 1e15, 1, 5 * S), 1e-12);
  }

  @Test
  void ratesFadeOverTheWindow() {
    RankQueues q = measured(10);
    q.arrived(0, null, BIG, 3 * S);
    double fresh = q.delayedWork(0, "me", 1, 1, 3 * S);
    double later = q.delayedWork(0, "me", 1, 1, 13 * S);
    assertEquals(Math.exp(-1), later / fresh, 1e-9);
  }

  @Test
  void nothingIsChargedBeforeAnyCompletion() {
    RankQueues q = new RankQueues(60, 1000);
    q.arrived(0, "other", BIG, 0);
    assertEquals(0, q.delayedWork(0, "me", 1e12, 1, S));
    assertEquals(0, q.delayedWork(5, "me", 1e12, 1, S), "an unknown location");
  }

  @Test
  void theKeyBoundIsKept() {
    RankQueues q = new RankQueues(1e9, 2);
    q.arrived(9, null, BIG, 0);
    q.completed(9, 1000, 2 * S);
    q.arrived(0, "a", BIG, 3 * S);
    q.arrived(0, "b", BIG, 3 * S);
    assertEquals(1.0, q.delayedWork(0, "a", 1e15, 1, 3 * S), 1e-9, "a is known: only b is charged");
    q.arrived(0, "c", BIG, 3 * S);  // beyond two keys: "a", the least recently seen, is forgotten
    // b and c come at most once each; a's request is now one of unknown origin, a Poisson stream
    assertEquals(2 + 1e-9 * 0.002 * 1e15, q.delayedWork(0, "a", 1e15, 1, 3 * S), 1e-6);
  }

  @Test
  void aSessionWaitsNoLongerThanMovingWouldCostIt() {
    RankQueues q = measured(1e9);
    q.arrived(0, "small", 100, 3 * S);      // re-prefilling its context elsewhere costs 100 units
    q.arrived(0, "large", 50_000, 3 * S);
    // a delay of 10,000 units: the small session would rather move (100), the large one waits it out
    assertEquals(100 + 10_000, q.delayedWork(0, "me", 1e15, 10_000, 3 * S), 1e-6);
    assertEquals(2 * 10, q.delayedWork(0, "me", 1e15, 10, 3 * S), 1e-9, "a short delay: both wait");
  }

  @Test
  void aSiblingsSessionWaitsAtEachOfItsCallsUpToWhatMovingCostsIt() {
    RankQueues q = measured(1e9);
    q.arrived(0, "other", 50_000, 3 * S);
    // one request per 1e9 s, 2e-12 per unit of work: 2 calls in 1e12 units, each waiting 10 units
    assertEquals(2 * 10, q.delayedCalls(0, "me", 1e12, 10, 3 * S), 1e-9, "every call waits");
    assertEquals(10, q.delayedWork(0, "me", 1e12, 10, 3 * S), 1e-9, "the first call only");
    assertEquals(2e-12 * 1000 * 10, q.delayedCalls(0, "me", 1000, 10, 3 * S), 1e-15, "less than a call: as likely");
    assertEquals(50_000, q.delayedCalls(0, "me", 1e15, 100, 3 * S), 1e-6, "2,000 calls of 100: no more than moving");
    assertEquals(0, q.delayedCalls(0, "other", 1e12, 10, 3 * S), 1e-12, "not its own session");
  }

  @Test
  void aWindowMustBePositive() {
    assertThrows(IllegalArgumentException.class, () -> new RankQueues(0, 10));
  }

  // ---- several frontends: the peers' reports make the figures the fleet's ----

  @Test
  void aLocationIsBusyWhileAnyFrontendHasWorkThere() {
    RankQueues q = new RankQueues(1e9, 1000);  // no decay to speak of
    q.peers(0, 1, 0, 0, 0);                    // a peer's request there from 0 s
    q.arrived(0, null, BIG, S);
    q.completed(0, 1000, 3 * S);               // busy 0..3 s so far, the peer's still in flight
    q.peers(0, -1, 0, 1000, 4 * S);            // the peer's done at 4 s: it completed 1,000 units
    // busy 0..4 s for the 2,000 units both frontends completed
    assertEquals(4.0 / 2000, q.secondsPerWork(), 1e-9);
  }

  @Test
  void withoutPeersTheFiguresAreOnesOwn() {
    RankQueues q = new RankQueues(1e9, 1000);
    q.arrived(0, null, BIG, 0);
    q.completed(0, 1000, 2 * S);
    q.peers(0, 1, 0, 0, 3 * S);
    q.peers(0, -1, 0, 0, 5 * S);               // a peer came and went, reporting no work done: 2 s more busy
    assertEquals(4.0 / 1000, q.secondsPerWork(), 1e-9);
  }

  @Test
  void aSessionsRateIsScaledToTheFleetsArrivals() {
    RankQueues alone = measured(1e9);
    RankQueues half = measured(1e9);
    // the fleet: sessions a and b send 4 requests each to location 0; this frontend sees half of them
    for (int i = 0; i < 4; i++) {
      alone.arrived(0, "a", BIG, 3 * S);
      alone.arrived(0, "b", BIG, 3 * S);
    }
    for (int i = 0; i < 2; i++) {
      half.arrived(0, "a", BIG, 3 * S);
      half.arrived(0, "b", BIG, 3 * S);
    }
    // the peer's report: its 4 arrivals at location 0 and its 1,000 units completed at 9 over the same 2 s busy
    half.peers(0, 0, 4, 0, 3 * S);
    assertEquals(1.0, half.delayedWork(0, "me", 1e9, 1, 3 * S) / alone.delayedWork(0, "me", 1e9, 1, 3 * S), 1e-9);
    assertEquals(1.0, half.ownRatePerWork("a", 3 * S) / alone.ownRatePerWork("a", 3 * S), 1e-9);
  }

  @Test
  void keylessArrivalsOfPeersAreCharged() {
    RankQueues q = measured(1e9);
    q.peers(0, 0, 5, 0, 3 * S);                // 5 requests through another frontend; none here
    assertEquals(1.0, q.delayedWork(0, "me", 1e12, 1, 3 * S) / (5e-9 * 0.002 * 1e12), 1e-9);
    q.peers(0, 0, -5, 0, 3 * S);               // that frontend expired
    assertEquals(0, q.delayedWork(0, "me", 1e12, 1, 3 * S), 1e-12);
  }

  @Test
  void ownRatesAreWhatThisFrontendReports() {
    RankQueues q = new RankQueues(1e9, 1000);
    q.arrived(0, "a", BIG, 0);
    q.arrived(0, null, BIG, 0);
    q.completed(0, 700, S);
    double[] own = q.own(0, S);
    assertEquals(2, own[0], 1e-6);
    assertEquals(700, own[1], 1e-6);
    assertEquals(0, q.own(3, S)[0], "a location never seen");
  }
}
