package dev.affinity.bench.live;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@code affinity bench chat-hits} reports of a run: the markdown table (requests, prompt and reused tokens, hit
 * ratio against the ideal, the context workers' split), a summary CSV row and one CSV row per call.
 *
 * @param label the run's name in the table
 * @param exactTokens whether the ideal is in the model's KV blocks ({@code --tokenizer}), else in trace blocks
 * @param csv the summary CSV to append to, or null
 * @param requestsCsv the per-call CSV to append to, or null
 */
record HitRatioReport(String label, boolean exactTokens, Path csv, Path requestsCsv) {

  /** Prints the markdown table to {@code out}, failures to {@code err}, and appends the CSV rows. */
  void write(List<ChatHitRatio.Result> results, double wallS, PrintWriter out, PrintWriter err) throws IOException {
    long ok = 0;
    long failed = 0;
    long prompt = 0;
    long reused = 0;
    long ideal = 0;
    long mismatched = 0;
    Map<String, Integer> ctx = new TreeMap<>();
    for (ChatHitRatio.Result r : results) {
      if (r.status() != 200) {
        failed++;
        err.println("chat-hits " + label + ": " + r.session() + " turn " + r.turn() + ": " + r.error());
        continue;
      }
      ok++;
      prompt += Math.max(0, r.promptTokens());
      reused += Math.max(0, r.reused());
      ideal += r.ideal();
      if (r.localTokens() >= 0 && r.localTokens() != r.promptTokens()) {
        mismatched++;
      }
      ctx.merge(r.ctx() == null ? "?" : r.ctx(), 1, Integer::sum);
    }
    double hit = prompt == 0 ? 0 : (double) reused / prompt;
    double idealHit = prompt == 0 ? 0 : (double) ideal / prompt;
    double ofIdeal = ideal == 0 ? 0 : (double) reused / ideal;
    StringBuilder split = new StringBuilder();
    for (int n : ctx.values()) {
      split.append(split.length() == 0 ? "" : "/").append(n);
    }
    out.println("| variant | requests | failed | prompt tokens | reused tokens | hit ratio | ideal hit ratio | of ideal | ctx split | wall s |");
    out.println("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    out.printf(Locale.ROOT, "| %s | %d | %d | %d | %d | %.3f | %.3f | %.3f | %s | %.1f |%n", label, ok, failed, prompt, reused,
        hit, idealHit, ofIdeal, split, wallS);
    out.flush();
    if (exactTokens && mismatched > 0) {
      err.println("chat-hits " + label + ": " + mismatched + " answers counted other prompt tokens than the local "
          + "rendering (the ideal is in the local rendering's blocks)");
    }
    if (csv != null) {
      boolean fresh = !Files.exists(csv) || Files.size(csv) == 0;
      StringBuilder sb = new StringBuilder();
      if (fresh) {
        sb.append("variant,requests,failed,prompt_tokens,reused_tokens,hit_ratio,ideal_hit_ratio,of_ideal,ctx_split,wall_s,ideal_basis\n");
      }
      sb.append(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%.4f,%.4f,%.4f,%s,%.1f,%s%n", label.replace(',', ';'), ok, failed, prompt, reused,
          hit, idealHit, ofIdeal, split, wallS, exactTokens ? "kv_blocks" : "trace_blocks"));
      Files.writeString(csv, sb, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
    if (requestsCsv != null) {
      boolean fresh = !Files.exists(requestsCsv) || Files.size(requestsCsv) == 0;
      StringBuilder sb = new StringBuilder();
      if (fresh) {
        sb.append("variant,session,turn,status,prompt_tokens,local_tokens,reused_tokens,ideal_tokens,ctx,latency_ms\n");
      }
      for (ChatHitRatio.Result r : results) {
        sb.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%d,%d,%d,%s,%d%n", label.replace(',', ';'), r.session(), r.turn(), r.status(),
            r.promptTokens(), r.localTokens(), r.reused(), r.ideal(), r.ctx() == null ? "" : r.ctx(), r.latencyMs()));
      }
      Files.writeString(requestsCsv, sb, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
  }
}
