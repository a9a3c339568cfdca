package dev.affinity.bench.metrics;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * What one run measured, summarized: latency percentiles (milliseconds), prefix reuse next to the
 * infinite-cache ideal, queue waits, load imbalance and agents within the SLO.
 *
 * @param requests            requests sent
 * @param errors              requests that failed
 * @param ttftMs              p50, p95, p99 of time to first token
 * @param itlMs               p50, p95, p99 of per-request mean inter-token latency
 * @param e2eMs               p50, p95, p99 of end-to-end latency
 * @param hitRatio            prompt tokens reused from the context instances' caches / prompt tokens
 * @param idealHitRatio       the same with an infinite cache shared by every instance
 * @param pooledHitRatio      the same with one LRU cache of the fleet's whole context KV capacity (the
 *                            pooled bound), over the run's requests in its arrival order; NaN when unknown
 * @param ctxQueueMs          p50, p95, p99 of the context legs' wait for admission into their executor's batch
 * @param genQueueMs          p50, p95, p99 of the generation legs' wait for admission (a slot and KV)
 * @param ctxImbalance        mean max/mean load across context instances
 * @param genImbalance        mean max/mean load across generation instances
 * @param ctxRankImbalance    mean max/mean load across the ranks of a context instance
 * @param genRankImbalance    mean max/mean load across the ranks of a generation instance
 * @param agents              agents (main agents with their sub-agents) that sent requests
 * @param agentsWithinSlo     of those, how many met the SLO
 * @param durationS           time from the first send to the last answer (virtual for simulations)
 * @param outputTokensPerS    generated tokens per second of {@code durationS}
 * @param boundTtftMs         p50, p95, p99 of the zero-queue bound on TTFT ({@link ZeroQueueBound}) over the
 *                            answered requests, or null when unknown (live runs)
 * @param sessionTimeMeanS    mean over agents (a main agent with its sub-agents) of the time from its first call's
 *                            send to its last answer, seconds
 */
public record RunMetrics(int requests, int errors, double[] ttftMs, double[] itlMs, double[] e2eMs, double hitRatio,
    double idealHitRatio, double pooledHitRatio, double[] ctxQueueMs, double[] genQueueMs, double ctxImbalance, double genImbalance,
    double ctxRankImbalance, double genRankImbalance, int agents, int agentsWithinSlo, double durationS,
    double outputTokensPerS, double[] boundTtftMs, double sessionTimeMeanS) {

  /** The percentiles every latency is reported at. */
  public static final double[] PERCENTILES = {50, 95, 99};

  /** Summarizes a run whose zero-queue bound is unknown (live runs). */
  public static RunMetrics of(List<RequestRecord> records, LoadSeries load, Histogram ctxQueue, Histogram genQueue, Slo slo) {
    return of(records, load, ctxQueue, genQueue, slo, null);
  }

  /**
   * Summarizes a run.
   *
   * @param ctxQueue context legs' queue waits (µs), or null when unknown (live runs)
   * @param genQueue generation legs' queue waits (µs), or null when unknown
   * @param bound    the fleet's zero-queue bound, or null when unknown (live runs)
   */
  public static RunMetrics of(List<RequestRecord> records, LoadSeries load, Histogram ctxQueue, Histogram genQueue, Slo slo,
      ZeroQueueBound bound) {
    Histogram ttft = histogram();
    Histogram boundTtft = histogram();
    Histogram itl = histogram();
    Histogram e2e = histogram();
    long prompt = 0;
    long reused = 0;
    long ideal = 0;
    long pooled = 0;
    boolean pooledKnown = true;
    long output = 0;
    int errors = 0;
    long first = Long.MAX_VALUE;
    long last = 0;
    Map<String, List<RequestRecord>> byAgent = new LinkedHashMap<>();
    for (RequestRecord r : records) {
      byAgent.computeIfAbsent(r.agentId(), k -> new ArrayList<>()).add(r);
      first = Math.min(first, r.sendUs());
      if (!r.ok()) {
        errors++;
        continue;
      }
      last = Math.max(last, r.sendUs() + r.e2eUs());
      record(ttft, r.ttftUs());
      record(e2e, r.e2eUs());
      if (r.itlUs() >= 0) {
        record(itl, Math.round(r.itlUs()));
      }
      prompt += r.promptTokens();
      reused += Math.max(0, r.reusedTokens());
      ideal += r.idealReusedTokens();
      pooled += Math.max(0, r.pooledReusedTokens());
      pooledKnown &= r.pooledReusedTokens() >= 0;
      output += r.outputTokens();
      if (bound != null && r.pooledReusedTokens() >= 0) {
        record(boundTtft, Math.round(bound.ttftUs(r.promptTokens(), r.pooledReusedTokens())));
      }
    }
    int within = 0;
    double sessionSum = 0;
    for (List<RequestRecord> agent : byAgent.values()) {
      if (withinSlo(agent, slo)) {
        within++;
      }
      sessionSum += sessionSeconds(agent);
    }
    double duration = records.isEmpty() || last <= first ? 0 : (last - first) / 1e6;
    return new RunMetrics(records.size(), errors, ms(ttft), ms(itl), ms(e2e), prompt == 0 ? 0 : (double) reused / prompt,
        prompt == 0 ? 0 : (double) ideal / prompt, !pooledKnown ? Double.NaN : prompt == 0 ? 0 : (double) pooled / prompt,
        ctxQueue == null ? null : ms(ctxQueue), genQueue == null ? null : ms(genQueue),
        load.instanceImbalance(true), load.instanceImbalance(false), load.rankImbalance(true), load.rankImbalance(false),
        byAgent.size(), within, duration, duration == 0 ? 0 : output / duration,
        bound == null || boundTtft.getTotalCount() == 0 ? null : ms(boundTtft),
        byAgent.isEmpty() ? 0 : sessionSum / byAgent.size());
  }

  /** From an agent's first send to its last answer (or last failure), seconds. */
  static double sessionSeconds(List<RequestRecord> agent) {
    long first = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    for (RequestRecord r : agent) {
      first = Math.min(first, r.sendUs());
      last = Math.max(last, r.sendUs() + Math.max(0, r.e2eUs()));
    }
    return agent.isEmpty() ? 0 : (last - first) / 1e6;
  }

  /** Whether an agent's requests all succeeded with P95 TTFT and P25 output speed within the SLO. */
  public static boolean withinSlo(List<RequestRecord> agent, Slo slo) {
    if (agent.isEmpty()) {
      return false;
    }
    double[] ttft = new double[agent.size()];
    double[] speeds = new double[agent.size()];
    int nSpeeds = 0;
    for (int i = 0; i < ttft.length; i++) {
      RequestRecord r = agent.get(i);
      if (!r.ok()) {
        return false;
      }
      ttft[i] = r.ttftUs() / 1000.0;
      if (r.outputSpeed() >= 0) {
        speeds[nSpeeds++] = r.outputSpeed();
      }
    }
    boolean fast = percentile(ttft, ttft.length, 95) <= slo.ttftP95Ms();
    return nSpeeds == 0 ? fast : fast && percentile(speeds, nSpeeds, 25) >= slo.outputTokensPerSecondP25();
  }

  /** The nearest-rank percentile of the first {@code n} values (sorts them). */
  static double percentile(double[] values, int n, double p) {
    Arrays.sort(values, 0, n);
    int rank = (int) Math.ceil(p / 100.0 * n);
    return values[Math.max(0, Math.min(n - 1, rank - 1))];
  }

  /** A histogram of microseconds, up to an hour, 3 significant digits. */
  public static Histogram histogram() {
    return new Histogram(3_600_000_000L, 3);
  }

  private static void record(Histogram h, long us) {
    h.recordValue(Math.max(0, Math.min(us, h.getHighestTrackableValue())));
  }

  private static double[] ms(Histogram h) {
    double[] out = new double[PERCENTILES.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(PERCENTILES[i]) / 1000.0;
    }
    return out;
  }
}
