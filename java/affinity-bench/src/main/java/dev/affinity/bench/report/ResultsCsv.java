package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RunMetrics;
import dev.affinity.bench.metrics.RunResult;
import java.util.ArrayList;
import java.util.List;

/** Renders {@code results.csv}: one row per run, every metric (RFC 4180 quoting, {@code \n} line ends). */
final class ResultsCsv {
  static final List<String> HEADER = List.of("policy", "workload", "seed", "requests", "errors",
      "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p95_ms", "itl_p99_ms",
      "e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms", "hit_ratio", "ideal_hit_ratio", "pooled_hit_ratio",
      "ctx_queue_p50_ms", "ctx_queue_p95_ms", "ctx_queue_p99_ms", "gen_queue_p50_ms", "gen_queue_p95_ms",
      "gen_queue_p99_ms", "ctx_imbalance", "gen_imbalance", "ctx_rank_imbalance", "gen_rank_imbalance",
      "agents", "agents_within_slo", "duration_s", "output_tokens_per_s", "wall_s", "simulated_s",
      "bound_ttft_p50_ms", "bound_ttft_p95_ms", "session_time_mean_s");

  private ResultsCsv() {}

  static String render(List<RunResult> runs) {
    StringBuilder out = new StringBuilder();
    line(out, HEADER);
    for (RunResult r : runs) {
      line(out, row(r));
    }
    return out.toString();
  }

  private static List<String> row(RunResult r) {
    RunMetrics m = r.metrics();
    List<String> f = new ArrayList<>(List.of(r.policy(), r.workload(), Long.toString(r.seed()),
        Integer.toString(m.requests()), Integer.toString(m.errors())));
    latencies(f, m.ttftMs());
    latencies(f, m.itlMs());
    latencies(f, m.e2eMs());
    f.add(ratio(m.hitRatio()));
    f.add(ratio(m.idealHitRatio()));
    f.add(ratio(m.pooledHitRatio()));
    latencies(f, m.ctxQueueMs());
    latencies(f, m.genQueueMs());
    f.add(ratio(m.ctxImbalance()));
    f.add(ratio(m.genImbalance()));
    f.add(ratio(m.ctxRankImbalance()));
    f.add(ratio(m.genRankImbalance()));
    f.add(Integer.toString(m.agents()));
    f.add(Integer.toString(m.agentsWithinSlo()));
    f.add(Text.fixed(m.durationS(), 3));
    f.add(Text.fixed(m.outputTokensPerS(), 3));
    f.add(Text.fixed(r.wallSeconds(), 3));
    f.add(Text.fixed(r.simulatedSeconds(), 3));
    f.add(m.boundTtftMs() == null ? "" : Text.fixed(m.boundTtftMs()[0], 3));
    f.add(m.boundTtftMs() == null ? "" : Text.fixed(m.boundTtftMs()[1], 3));
    f.add(Text.fixed(m.sessionTimeMeanS(), 3));
    return f;
  }

  /** p50, p95, p99 in ms, or three empty fields when unknown. */
  private static void latencies(List<String> fields, double[] ms) {
    for (int i = 0; i < RunMetrics.PERCENTILES.length; i++) {
      fields.add(ms == null ? "" : Text.fixed(ms[i], 3));
    }
  }

  /** A ratio with 6 decimals; empty when unknown (NaN: imbalance of a live run). */
  static String ratio(double v) {
    return Double.isNaN(v) ? "" : Text.fixed(v, 6);
  }

  private static void line(StringBuilder out, List<String> fields) {
    for (int i = 0; i < fields.size(); i++) {
      out.append(i == 0 ? "" : ",").append(quote(fields.get(i)));
    }
    out.append('\n');
  }

  /** A field, quoted when it holds a comma, quote or line break, with quotes doubled. */
  static String quote(String field) {
    boolean plain = field.chars().noneMatch(c -> c == ',' || c == '"' || c == '\n' || c == '\r');
    return plain ? field : '"' + field.replace("\"", "\"\"") + '"';
  }
}
