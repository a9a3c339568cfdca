package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.drive.IdealCache;
import dev.affinity.bench.drive.PooledCache;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.drive.WorkloadDriver;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.trace.BlockTokens;
import dev.affinity.config.DisaggConfig;
import dev.affinity.routing.CandidateLoad;
import dev.affinity.routing.Fleet;
import dev.affinity.routing.LoadShare;
import dev.affinity.routing.Router;
import dev.affinity.routing.RouterStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several frontends in the simulator: one is the simulator as it was; unshared frontends each index only their turn of
 * the KV events and see only their own load; shared ones index every event and see each other's in-flight work.
 */
class SeveralFrontendsTest {
  private static FleetConfigs fleet;
  private static Workload.Agents workload;
  private static DisaggConfig affinity;

  @BeforeAll
  static void setUp() throws Exception {
    fleet = SimFixtures.smallFleet();
    workload = SimFixtures.smallWorkload(7);
    affinity = fleet.under(Policy.named("affinity"));
  }

  private static RunResult run(Frontends frontends, List<SimFleet> seen) {
    return new Simulation(affinity, Slo.defaults(), Duration.ofMillis(500), false, frontends).run("affinity", workload, 1,
        n -> { }, f -> {
          // what the test reads of the fleet after the run, before it closes
          List<RouterStats.KvIngest> ingest = new ArrayList<>();
          for (SimFleet.Frontend fe : f.frontends()) {
            ingest.add(fe.orchestration().router(Fleet.CONTEXT).stats().kvEvents());
          }
          kvIngest = ingest;
          seen.add(f);
        });
  }

  private static List<RouterStats.KvIngest> kvIngest;

  @Test
  void oneFrontendIsTheSimulatorAsItWas() {
    RunResult before = new Simulation(affinity, Slo.defaults(), Duration.ofMillis(500), false).run("affinity", workload, 1,
        n -> { });
    RunResult one = run(new Frontends(1, false, Duration.ofMillis(7)), new ArrayList<>());
    assertEquals(before.records(), one.records(), "sharing settings change nothing with one frontend");
    assertEquals(before.load().timesUs().length, one.load().timesUs().length);
    assertEquals("affinity", Frontends.ONE.label("affinity"));
    assertEquals("affinity x4 unshared", new Frontends(4, false, Duration.ofMillis(20)).label("affinity"));
    assertEquals("affinity x4 shared every 100ms", new Frontends(4, true, Duration.ofMillis(100)).label("affinity"));
  }

  @Test
  void unsharedFrontendsEachIndexTheirTurnOfTheEventsAndSharedOnesIndexThemAll() {
    RunResult unshared = run(new Frontends(4, false, Duration.ofMillis(20)), new ArrayList<>());
    assertEquals(workload.requests(), unshared.records().size());
    List<RouterStats.KvIngest> split = kvIngest;
    long batches = split.stream().mapToLong(RouterStats.KvIngest::batches).sum();
    long events = split.stream().mapToLong(RouterStats.KvIngest::applied).sum();
    assertTrue(batches > 8, "events were drained: " + split);
    int workers = 2;  // context instances of the small fleet: each one's batches go round the frontends
    for (RouterStats.KvIngest k : split) {
      assertTrue(Math.abs(k.batches() - batches / 4.0) <= workers, "a quarter of the batches each: " + split);
      assertTrue(k.applied() > 0 && k.applied() < events, "a fraction of the events each: " + split);
      // and each sees the others' batches as gaps in the event ids, after which its index forgets the worker's blocks
      assertTrue(k.gaps() > 0, "gaps seen: " + split);
    }

    RunResult shared = run(new Frontends(4, true, Duration.ofMillis(20)), new ArrayList<>());
    assertEquals(workload.requests(), shared.records().size());
    List<RouterStats.KvIngest> all = kvIngest;
    for (RouterStats.KvIngest k : all) {
      assertEquals(all.get(0).batches(), k.batches(), "every frontend indexed every batch: " + all);
      assertEquals(all.get(0).applied(), k.applied(), "every frontend indexed every event: " + all);
      assertEquals(0, k.gaps(), "no gaps: " + all);
    }
    assertEquals(0, shared.metrics().errors());
  }

  @Test
  void sameSettingsSameResult() {
    Frontends f = new Frontends(3, true, Duration.ofMillis(20));
    assertEquals(run(f, new ArrayList<>()).records(), run(f, new ArrayList<>()).records());
  }

  /** Steps a fleet of two frontends until the second has requests in flight at the context fleet. */
  private static void untilSecondFrontendBusy(SimFleet simFleet) {
    SimTransport[] transport = new SimTransport[1];
    transport[0] = new SimTransport(simFleet, new BlockTokens(32000, 1), affinity.affinity().modelOrDefault(), "x-session-id",
        Simulation.DEFAULT_PARENT_HEADER, false);
    int kvBlock = simFleet.workers().get(0).info().tokensPerBlock();
    WorkloadDriver driver = new WorkloadDriver(transport[0], simFleet.clock(), new IdealCache(kvBlock),
        new PooledCache(Simulation.contextCapacityTokens(simFleet), kvBlock), rec -> { });
    workload.start(driver);
    Router second = simFleet.frontends().get(1).orchestration().router(Fleet.CONTEXT);
    while (requests(second.ownLoads()) < 2) {
      assertTrue(simFleet.step(), "the second frontend never had two requests in flight");
    }
  }

  private static int requests(List<LoadShare> shares) {
    return shares.stream().mapToInt(LoadShare::requests).sum();
  }

  private static int routedOn(Router r) {
    return r.loads().stream().mapToInt(CandidateLoad::requests).sum();
  }

  @Test
  void sharedFrontendsSeeEachOthersInFlightWork() {
    try (SimFleet f = new SimFleet(affinity, new Frontends(2, true, Duration.ofMillis(20)), (ex, r) -> { })) {
      untilSecondFrontendBusy(f);
      Router first = f.frontends().get(0).orchestration().router(Fleet.CONTEXT);
      Router second = f.frontends().get(1).orchestration().router(Fleet.CONTEXT);
      int own = requests(first.ownLoads());
      int peer = requests(second.ownLoads());
      assertEquals(own, routedOn(first), "before an exchange, a frontend routes on its own load");
      f.shareLoads();
      assertEquals(own + peer, routedOn(first), "after it, on its own and its peer's");
      assertEquals(own + peer, routedOn(second));
      assertEquals(own, requests(first.ownLoads()), "what it reports is still its own work");
    }
    try (SimFleet f = new SimFleet(affinity, new Frontends(2, false, Duration.ofMillis(20)), (ex, r) -> { })) {
      untilSecondFrontendBusy(f);
      Router first = f.frontends().get(0).orchestration().router(Fleet.CONTEXT);
      int own = requests(first.ownLoads());
      f.shareLoads();
      assertEquals(own, routedOn(first), "unshared: only its own load");
    }
  }

  @Test
  void badSettingsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new Frontends(0, true, Duration.ofMillis(20)));
    assertThrows(IllegalArgumentException.class, () -> new Frontends(65, true, Duration.ofMillis(20)));
    assertThrows(IllegalArgumentException.class, () -> new Frontends(2, true, Duration.ZERO));
    assertFalse(new Frontends(1, true, Duration.ofMillis(20)).sharing(), "one frontend has nobody to share with");
  }
}
