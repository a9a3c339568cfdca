package dev.affinity.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.executor.KvRetention;
import org.junit.jupiter.api.Test;

/** The retention TTL: kept while the expected re-prefill saved exceeds the blocks' cost to others. */
class KvRetentionPolicyTest {
  private static final long S = 1_000_000_000L;
  private static final double[] PAUSES = {2, 4, 6, 8, 10, 20, 30, 40, 50, 60};

  @Test
  void withoutPressureLruKeepsEverythingAndNothingIsRaised() {
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.9, PAUSES, Double.POSITIVE_INFINITY, 0));
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.9, PAUSES, 100, 0), "every pause under T");
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.9, new double[0], 5, 0), "no pauses known");
  }

  @Test
  void freeSpaceTimeKeepsUntilTheLongestPause() {
    KvRetentionPolicy.Ttl t = KvRetentionPolicy.ttl(0.9, PAUSES, 9, 0);
    assertEquals(60, t.seconds());
    // pauses over 9 s: 6 of 10, each saved with probability 0.9
    assertEquals(0.9 * 6 / 10, t.net(), 1e-12);
  }

  @Test
  void theDurationMaximizesSavedMinusHeld() {
    // T = 9 s. At a price of 0.01 per token-second the longest pause still pays: its tenth of the saves (0.09) beats
    // holding a tenth of the samples 10 s longer (0.01)
    assertEquals(60, KvRetentionPolicy.ttl(0.9, PAUSES, 9, 0.01).seconds());
    // at 0.1, D = 10 s: saves 0.9 x 1/10 and holds the six pauses over T 1 s each (0.1 x 6 / 10); D = 20 s would save
    // 0.18 but hold 5.6 s per sample (0.56)
    KvRetentionPolicy.Ttl t = KvRetentionPolicy.ttl(0.9, PAUSES, 9, 0.1);
    assertEquals(10, t.seconds());
    assertEquals(0.09 - 0.1 * 0.6, t.net(), 1e-12);
    // at 0.2 even that costs more than it saves
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.9, PAUSES, 9, 0.2));
  }

  @Test
  void whenSpaceCostsMoreThanThePausesSaveNothingIsKept() {
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.9, PAUSES, 9, 10));
    assertSame(KvRetentionPolicy.Ttl.NONE, KvRetentionPolicy.ttl(0.0, PAUSES, 9, 0.001), "turns never call tools");
  }

  @Test
  void decisionsComeFromTheRanksMeasuredWritesAndMisses() {
    KvRetentionPolicy p = new KvRetentionPolicy(100);  // a 100 s window; everything below happens at time 0
    AgentSessions.History h = new AgentSessions.History(1.0, PAUSES);
    // nothing written yet: LRU keeps everything, the default priority goes out (resetting earlier raises)
    assertEquals(KvRetention.defaults(), p.decide(h, "a#0", 1_000_000, 0));
    assertEquals(KvRetention.defaults(), p.decide(h, "a#0", 0, 0), "unknown capacity");
    // 1.1e7 tokens written in 100 s: a 1e6-token cache turns over in 9.1 s
    for (int i = 0; i < 110; i++) {
      p.served(null, "a#0", 100_000, 0, 0);
    }
    KvRetention r = p.decide(h, "a#0", 1_000_000, 0);
    assertEquals(KvRetentionPolicy.KEEP_PRIORITY, r.ranges().get(0).priority());
    assertEquals(60_000, r.ranges().get(0).durationMs(), "no misses measured: space is free, keep to the longest");
    assertEquals(KvRetention.NONE, r.ranges().get(0).end());
    assertEquals(KvRetention.defaults(), p.decide(h, "b#0", 1_000_000, 0), "another rank: nothing written there");
    // a session that comes back to find its 100,000 tokens gone, 60 times: 6e4 tokens a second prefilled again, a
    // price of 0.06 per token-second; the cache now turns over in 5.9 s
    for (int i = 0; i < 61; i++) {
      p.served("s", "a#0", 100_000, 0, 0);
    }
    KvRetention costly = p.decide(h, "a#0", 1_000_000, 0);
    assertEquals(10_000, costly.ranges().get(0).durationMs(), costly.toString());
  }

  /** The definition, evaluated directly at every sampled pause (quadratic). */
  private static KvRetentionPolicy.Ttl bruteForce(double p, double[] g, double t, double price) {
    KvRetentionPolicy.Ttl best = KvRetentionPolicy.Ttl.NONE;
    for (double d : g) {
      if (d <= t) {
        continue;
      }
      int saved = 0;
      double held = 0;
      for (double x : g) {
        saved += x > t && x <= d ? 1 : 0;
        held += Math.max(0, Math.min(x, d) - t);
      }
      double net = p * saved / g.length - price * held / g.length;
      if (net > best.net()) {
        best = new KvRetentionPolicy.Ttl(d, net);
      }
    }
    return best;
  }

  @net.jqwik.api.Property
  void theFastTtlIsTheDefinitions(@net.jqwik.api.ForAll("pauses") double[] pauses,
      @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0, max = 1) double p,
      @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0, max = 100) double t,
      @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0, max = 0.5) double price) {
    KvRetentionPolicy.Ttl fast = KvRetentionPolicy.ttl(p, pauses, t, price);
    KvRetentionPolicy.Ttl slow = bruteForce(p, pauses, t, price);
    assertEquals(slow.net(), fast.net(), 1e-9, "the same best value");
    if (fast.net() > 0) {
      assertEquals(fast.net(), bruteForceAt(p, pauses, t, price, fast.seconds()), 1e-9, "at the duration it names");
    }
  }

  private static double bruteForceAt(double p, double[] g, double t, double price, double d) {
    int saved = 0;
    double held = 0;
    for (double x : g) {
      saved += x > t && x <= d ? 1 : 0;
      held += Math.max(0, Math.min(x, d) - t);
    }
    return p * saved / g.length - price * held / g.length;
  }

  @net.jqwik.api.Provide
  net.jqwik.api.Arbitrary<double[]> pauses() {
    return net.jqwik.api.Arbitraries.doubles().between(0, 200).ofScale(1).array(double[].class).ofMinSize(0).ofMaxSize(40);
  }
}
