package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.compare.FleetConfigs;
import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The fleet simulator over the real CPU executors: determinism, equivalences and a known ordering. */
class SimulationTest {
  private static FleetConfigs fleet;
  private static Workload.Agents workload;

  @BeforeAll
  static void setUp() throws Exception {
    fleet = SimFixtures.smallFleet();
    workload = SimFixtures.smallWorkload(7);
  }

  private static RunResult run(Policy policy, boolean stream, long seed) {
    return new Simulation(fleet.under(policy), Slo.defaults(), Duration.ofMillis(500), stream).run(policy.name(), workload, seed,
        n -> { });
  }

  @Test
  void everyRequestIsAnsweredAndRecorded() {
    RunResult r = run(Policy.named("conversation+header"), false, 1);
    assertEquals(workload.requests(), r.records().size());
    assertEquals(0, r.metrics().errors());
    for (RequestRecord rec : r.records()) {
      assertTrue(rec.ok(), rec.toString());
      assertTrue(rec.ttftUs() > 0 && rec.e2eUs() >= rec.ttftUs(), rec.toString());
      assertNotNull(rec.ctxWorker(), "context instance known");
      assertNotNull(rec.genWorker(), "generation instance known");
      assertTrue(rec.reusedTokens() >= 0 && rec.reusedTokens() < rec.promptTokens());
      assertTrue(rec.idealReusedTokens() >= 0 && rec.idealReusedTokens() < rec.promptTokens());
      assertTrue(rec.outputTokens() > 0);
    }
    assertTrue(r.simulatedSeconds() > 1, "virtual time passed");
    assertTrue(r.load().timesUs().length > 1, "load sampled over time");
    assertTrue(r.metrics().hitRatio() <= r.metrics().idealHitRatio() + 1e-9, "no policy beats the infinite cache");
  }

  /**
   * Load samples count every request once: at any sample the fleet holds at most the client
   * requests in flight then (a context-first request is on one executor at a time).
   */
  @Test
  void loadSamplesNeverExceedTheRequestsInFlight() {
    RunResult r = run(Policy.named("round_robin"), false, 1);
    var load = r.load();
    int busy = 0;
    for (int s = 0; s < load.timesUs().length; s++) {
      long t = load.timesUs()[s];
      long inFlight = r.records().stream().filter(x -> x.sendUs() <= t && t < x.sendUs() + x.e2eUs()).count();
      int total = 0;
      for (int i = 0; i < load.instances().size(); i++) {
        total += load.instanceLoad(s, i);
      }
      assertTrue(total <= inFlight, "sample at " + t + " µs: " + total + " on executors, " + inFlight + " in flight");
      busy += total > 0 ? 1 : 0;
    }
    assertTrue(busy > 0, "some samples saw work");
  }

  @Test
  void sameSeedSameResult() {
    Policy p = Policy.named("affinity");
    RunResult a = run(p, false, 3);
    RunResult b = run(p, false, 3);
    assertEquals(a.records(), b.records());
    assertEquals(a.simulatedSeconds(), b.simulatedSeconds());
    RunResult salted = run(p, false, 4);
    assertEquals(a.metrics().hitRatio(), salted.metrics().hitRatio(), "the token salt changes ids, not what is shared");
    Workload.Agents other = SimFixtures.smallWorkload(8);
    RunResult c = new Simulation(fleet.under(p), Slo.defaults(), Duration.ofMillis(500), false).run(p.name(), other, 3, n -> { });
    assertTrue(!a.records().equals(c.records()), "another workload seed: a different run");
  }

  @Test
  void streamingAndWholeResponsesMeasureTheSameTimes() {
    Policy p = Policy.named("conversation+header");
    List<RequestRecord> whole = run(p, false, 1).records();
    List<RequestRecord> streamed = run(p, true, 1).records();
    assertEquals(whole.size(), streamed.size());
    for (int i = 0; i < whole.size(); i++) {
      RequestRecord w = whole.get(i);
      RequestRecord s = streamed.get(i);
      assertEquals(w.ttftUs(), s.ttftUs(), "TTFT of request " + i);
      assertEquals(w.e2eUs(), s.e2eUs(), "end-to-end latency of request " + i);
      assertEquals(w.outputTokens(), s.outputTokens());
      assertEquals(w.ctxWorker(), s.ctxWorker());
      assertEquals(w.reusedTokens(), s.reusedTokens());
    }
  }

  @Test
  void roundRobinReusesLessThanConversationAffinity() {
    double rr = run(Policy.named("round_robin"), false, 1).metrics().hitRatio();
    double conv = run(Policy.named("conversation+header"), false, 1).metrics().hitRatio();
    double affinity = run(Policy.named("affinity"), false, 1).metrics().hitRatio();
    assertTrue(rr < conv, "round robin " + rr + " < conversation with header " + conv);
    assertTrue(rr < affinity, "round robin " + rr + " < affinity " + affinity);
  }

  @Test
  void subAgentsFollowTheirParentWithTheHeaderButNotWithout() {
    double withHeader = parentInstanceShare(run(Policy.named("conversation+header"), false, 1));
    double without = parentInstanceShare(run(Policy.named("conversation"), false, 1));
    assertEquals(1.0, withHeader, 1e-9, "scope context pins every sub-agent call to its parent's context instance");
    assertTrue(without < 1.0, "without the header sub-agents are placed on their own: " + without);
  }

  /** The share of sub-agent calls served by the context instance of their parent's latest call. */
  private static double parentInstanceShare(RunResult r) {
    java.util.Map<String, String> lastCtx = new java.util.HashMap<>();
    int sub = 0;
    int same = 0;
    for (RequestRecord rec : r.records()) {
      if (rec.parentSessionId() == null) {
        lastCtx.put(rec.sessionId(), rec.ctxWorker());
      } else {
        sub++;
        if (rec.ctxWorker().equals(lastCtx.get(rec.parentSessionId()))) {
          same++;
        }
      }
    }
    assertTrue(sub > 0, "the workload has sub-agent calls");
    return (double) same / sub;
  }
}
