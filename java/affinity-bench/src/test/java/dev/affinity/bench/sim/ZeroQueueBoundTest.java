package dev.affinity.bench.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.bench.compare.Policy;
import dev.affinity.bench.drive.Workload;
import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunResult;
import dev.affinity.bench.metrics.Slo;
import dev.affinity.bench.metrics.ZeroQueueBound;
import dev.affinity.bench.trace.TraceRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The zero-queue bound is the path a request takes through the simulator when nothing else runs: requests sent
 * far apart meet no queue and get exactly their bound, cold or with their prefix cached.
 */
class ZeroQueueBoundTest {
  private static List<Long> blocks(long base, int n) {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(base + i);
    }
    return ids;
  }

  @Test
  void aLoneRequestTakesExactlyItsBound() throws Exception {
    // 100 s apart: a 100-token prompt, a 20,000-token prompt cold, then the same session 20,512 tokens with the
    // 20,000 cached (the pooled cache holds them too)
    List<TraceRequest> trace = List.of(
        new TraceRequest(0, "s1", null, 100, 8, 32, blocks(0, 4)),
        new TraceRequest(100_000, "s2", null, 20_000, 8, 32, blocks(1000, 625)),
        new TraceRequest(200_000, "s2", null, 20_512, 8, 32, blocks(1000, 641)));
    Policy policy = Policy.named("conversation");
    RunResult r = new Simulation(SimFixtures.smallFleet().under(policy), Slo.defaults(), Duration.ofSeconds(10), false)
        .run(policy.name(), new Workload.Trace("lone", trace), 1, n -> { });
    ZeroQueueBound bound = r.bound();
    assertNotNull(bound);
    assertEquals(3, r.records().size());
    for (RequestRecord rec : r.records()) {
      assertTrue(rec.ok(), rec.toString());
      double expected = bound.ttftUs(rec.promptTokens(), rec.pooledReusedTokens());
      // each iteration's end is rounded up to the microsecond: a few microseconds at most
      assertEquals(expected, rec.ttftUs(), 5, rec.toString());
    }
    RequestRecord warm = r.records().get(2);
    assertTrue(warm.pooledReusedTokens() >= 19_968 && warm.reusedTokens() == warm.pooledReusedTokens(), warm.toString());
    assertTrue(r.records().get(1).ttftUs() > 2 * warm.ttftUs(), "the cold prompt prefills every token");
    double[] p = r.metrics().boundTtftMs();
    assertEquals(3, p.length);
    assertTrue(p[0] > 0 && p[0] <= p[1] && p[1] <= p[2]);
  }

  @Test
  void theBoundAddsPrefillHandOffAndFirstDecodeStep() {
    ZeroQueueBound.Timing ctx = new ZeroQueueBound.Timing(500, 30, 0.001, 0, 0, 0, 0, 1, 0);
    ZeroQueueBound.Timing gen = new ZeroQueueBound.Timing(400, 0, 0, 3000, 10, 0.5, 1000, 1e9, 1000);
    ZeroQueueBound b = new ZeroQueueBound(ctx, gen, 8192);
    // 10,000 uncached tokens after 2,000 cached: chunks of 8,192 and 1,808
    double prefill = (500 + 30 * 8192 + 0.001 * (10_192.0 * 10_192 - 2000.0 * 2000))
        + (500 + 30 * 1808 + 0.001 * (12_000.0 * 12_000 - 10_192.0 * 10_192));
    double handOff = 1000 + 1000.0 * 12_000 / 1e9 * 1e6;
    double decode = 400 + 3000 + 10 + 0.5 * 12_001;
    assertEquals(prefill + handOff + decode, b.ttftUs(12_000, 2_000), 1e-6);
    // the last token is always computed
    assertEquals(b.ttftUs(12_000, 11_999), b.ttftUs(12_000, 12_000), 1e-9);
  }
}
