package dev.affinity.bench.report;

import dev.affinity.bench.metrics.RequestRecord;
import dev.affinity.bench.metrics.RunResult;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes {@code records.csv}: one row per request of every run (the per-request records the comparisons in
 * docs/benchmarks.md are read from), with the request's zero-queue bound on TTFT where the run knew it.
 */
public final class RecordsCsv {
  static final List<String> HEADER = List.of("policy", "workload", "seed", "index", "session", "parent", "agent",
      "send_us", "ttft_us", "e2e_us", "output_tokens", "prompt_tokens", "reused_tokens", "ideal_reused_tokens",
      "pooled_reused_tokens", "bound_ttft_us", "ctx_worker", "ctx_rank", "gen_worker", "gen_rank", "status");

  private RecordsCsv() {}

  /** Writes every run's records into {@code file}. */
  public static void write(Path file, List<RunResult> runs) throws IOException {
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write(String.join(",", HEADER));
      w.write('\n');
      for (RunResult run : runs) {
        for (RequestRecord r : run.records()) {
          String bound = run.bound() == null || r.pooledReusedTokens() < 0 ? ""
              : Long.toString(Math.round(run.bound().ttftUs(r.promptTokens(), r.pooledReusedTokens())));
          List<String> f = List.of(run.policy(), run.workload(), Long.toString(run.seed()), Long.toString(r.index()),
              text(r.sessionId()), text(r.parentSessionId()), text(r.agentId()), Long.toString(r.sendUs()),
              Long.toString(r.ttftUs()), Long.toString(r.e2eUs()), Integer.toString(r.outputTokens()),
              Integer.toString(r.promptTokens()), Integer.toString(r.reusedTokens()), Integer.toString(r.idealReusedTokens()),
              Integer.toString(r.pooledReusedTokens()), bound, text(r.ctxWorker()), Integer.toString(r.ctxRank()),
              text(r.genWorker()), Integer.toString(r.genRank()), Integer.toString(r.status()));
          for (int i = 0; i < f.size(); i++) {
            if (i > 0) {
              w.write(',');
            }
            w.write(ResultsCsv.quote(f.get(i)));
          }
          w.write('\n');
        }
      }
    }
  }

  private static String text(String s) {
    return s == null ? "" : s;
  }
}
