package dev.affinity.server.shared;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.config.Location;
import dev.affinity.config.RouterConfig;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.protocol.InternalAuth;
import dev.affinity.routing.CandidateLoad;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.LoadShare;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterContext;
import dev.affinity.routing.RouterFactory;
import dev.affinity.routing.RoutingRequest;
import dev.affinity.routing.Selection;
import dev.affinity.worker.Worker;
import dev.affinity.worker.WorkerCall;
import dev.affinity.worker.WorkerInfo;
import dev.affinity.worker.WorkerListener;
import dev.affinity.worker.WorkerRequest;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One load view over a real nats-server: two frontends' routers (same workers) each route on the other's in-flight
 * work within a report period or two, a frontend that stops reporting stops counting after the expiry, and a forged
 * report (no valid HMAC) changes nothing. States are awaited with generous bounds; nothing is timed.
 */
class SharedLoadsTest {
  static final String PREFIX = "affinity.test.load.";
  static final Optional<InternalAuth> AUTH = InternalAuth.ofNullable("load-secret");

  record Plain(String id, WorkerInfo info) implements Worker {
    @Override
    public boolean isAlive() {
      return true;
    }

    @Override
    public WorkerCall send(WorkerRequest request, WorkerListener listener) {
      throw new UnsupportedOperationException("routing only");
    }
  }

  final List<AutoCloseable> closing = new ArrayList<>();
  NatsProcess nats;

  @AfterEach
  void close() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
    if (nats != null) {
      nats.close();
    }
  }

  static Router router() {
    return router("load_balancing");
  }

  static Router router(String type) {
    Router r = new RouterFactory().create(new RouterConfig(type, Location.unknown("t"), Map.of(), Map.of()),
        "context_servers", RouterContext.of(Fleet.CONTEXT));
    for (String id : List.of("a", "b")) {
      r.addWorker(new Plain(id, new WorkerInfo(16, HashAlgorithm.V1_BLOCK_KEY, 2, true, 64)));
    }
    return r;
  }

  SharedLoads frontend(String id, Router router, Duration expiry) throws Exception {
    Connection c = Nats.connect(nats.url());
    closing.add(c::close);
    SharedLoads s = new SharedLoads(c, PREFIX, id, AUTH, Map.of(Fleet.CONTEXT, router), Duration.ofMillis(20), expiry);
    closing.add(s);
    return s;
  }

  static int seen(Router r) {
    return r.loads().stream().mapToInt(CandidateLoad::requests).sum();
  }

  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(5);
    }
  }

  static RoutingRequest request(long id) {
    return RoutingRequest.builder(id, Fleet.CONTEXT).tokens(new int[] {1, 2, 3}).build();
  }

  @Test
  void eachFrontendRoutesOnTheFleetWideLoadAndASilentOneStopsCounting() throws Exception {
    nats = NatsProcess.start();
    Router one = router();
    Router two = router();
    SharedLoads sharedOne = frontend("one", one, Duration.ofMillis(500));
    frontend("two", two, Duration.ofMillis(500));
    List<Selection> held = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      held.add(one.select(request(i), Set.of()));
    }
    await(() -> seen(two) == 3, "two to see one's 3 requests");
    int onA = (int) held.stream().filter(s -> s.worker().id().equals("a")).count();
    String lighter = onA < 3 - onA ? "a" : "b";
    assertEquals(lighter, two.select(request(10), Set.of()).worker().id(), "two fills where one left room");
    await(() -> seen(one) == 4, "one to see two's request beside its own");
    assertEquals(3, one.ownLoads().stream().mapToInt(LoadShare::requests).sum(), "one reports only its own");

    held.forEach(s -> s.release(dev.affinity.routing.Outcome.SUCCESS));
    await(() -> seen(two) == 1, "one's released requests to leave two's view");
    held.clear();
    held.add(one.select(request(20), Set.of()));
    await(() -> seen(two) == 2, "one's new request in two's view");
    sharedOne.close();  // one stops reporting (as if it died): two forgets it after the expiry
    await(() -> seen(two) == 1, "the silent frontend's load to expire");
  }

  @Test
  void aPrefixOneFrontendRoutedIsPredictedCachedByTheOthers() throws Exception {
    nats = NatsProcess.start();
    Router one = router("affinity");
    Router two = router("affinity");
    SharedLoads sharedOne = frontend("one", one, Duration.ofSeconds(30));
    frontend("two", two, Duration.ofSeconds(30));
    await(() -> sharedOne.published() > 0, "one's first report (its router keeps routed prefixes from then on)");
    int[] ids = java.util.stream.IntStream.range(0, 1024).map(i -> 500 + i).toArray();  // 64 blocks of 16
    Selection routed = one.select(RoutingRequest.builder(1, Fleet.CONTEXT).tokens(ids).routingKey("k").build(), Set.of());
    // the report that carries one's request in flight carries the prefix it routed: once two counts the one, it has both
    await(() -> seen(two) == 1, "two to see one's request");
    routed.release(dev.affinity.routing.Outcome.SUCCESS);
    await(() -> seen(two) == 0, "one's request to leave two's view");
    // two never routed anything and no KV event said anything: it predicts the prefix where one sent it
    Selection probe = two.select(RoutingRequest.builder(2, Fleet.CONTEXT).tokens(ids).build(), Set.of());
    assertEquals(routed.worker().id() + "/" + routed.rank(), probe.worker().id() + "/" + probe.rank());
    assertEquals(true, probe.matchedBlocks() >= 56, "matched " + probe.matchedBlocks());
    probe.release(dev.affinity.routing.Outcome.CANCELLED);
  }

  @Test
  void aForgedReportChangesNothing() throws Exception {
    nats = NatsProcess.start();
    Router two = router();
    SharedLoads sharedTwo = frontend("two", two, Duration.ofSeconds(30));
    Connection rogue = Nats.connect(nats.url());
    closing.add(rogue::close);
    byte[] body = "{\"frontend\": \"rogue\", \"fleets\": {\"context\": [[\"a\", 0, 1000, 1, 0, 0]]}}"
        .getBytes(StandardCharsets.UTF_8);
    await(() -> {
      rogue.publish(NatsMessage.builder().subject(PREFIX + "rogue").data(body).build());
      return sharedTwo.rejected() > 0;
    }, "the unsigned report to be rejected");
    assertEquals(0, seen(two), "nothing of it counted");
    assertTrue(sharedTwo.received() == 0);
  }
}
