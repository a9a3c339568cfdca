package dev.affinity.server.cli;

import dev.affinity.executor.ExecutorRequest;
import dev.affinity.executor.ExecutorResponse;
import dev.affinity.executor.IterationStats;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.nativebridge.NativeExecutor;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Drives one CPU executor in virtual time with a synthetic shared-prefix workload (Poisson arrivals,
 * prompts made of one of several shared prefixes plus a unique suffix) and reports latency, prefix
 * reuse and how fast the simulation ran. A quick way to see the executor's cache and timing model.
 */
@Command(
    name = "sim",
    mixinStandardHelpOptions = true,
    description = "Run a synthetic shared-prefix workload through one CPU executor in virtual time.")
final class SimCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--config", description = "Executor configuration: JSON text or @FILE (clock forced to virtual).")
  String config;

  @Option(names = "--requests", defaultValue = "500", description = "Requests to send (default: ${DEFAULT-VALUE}).")
  int requests;

  @Option(names = "--prompt-tokens", defaultValue = "4096", description = "Prompt length (default: ${DEFAULT-VALUE}).")
  int promptTokens;

  @Option(names = "--shared-prefix-tokens", defaultValue = "3072",
      description = "Leading prompt tokens shared within a prefix group (default: ${DEFAULT-VALUE}).")
  int sharedPrefixTokens;

  @Option(names = "--prefix-groups", defaultValue = "8", description = "Distinct shared prefixes (default: ${DEFAULT-VALUE}).")
  int prefixGroups;

  @Option(names = "--max-new-tokens", defaultValue = "128", description = "Output length (default: ${DEFAULT-VALUE}).")
  int maxNewTokens;

  @Option(names = "--rate", defaultValue = "4", description = "Mean arrival rate, requests per simulated second (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(names = "--seed", defaultValue = "1", description = "Random seed (default: ${DEFAULT-VALUE}).")
  long seed;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    validate();
    String cfg = ExecutorConfigs.withVirtualClock(ExecutorConfigs.read(config));
    SplittableRandom rnd = new SplittableRandom(seed);
    Histogram ttft = new Histogram(3);
    Histogram e2e = new Histogram(3);
    long promptTotal = 0;
    long generated = 0;
    long errors = 0;
    long wallStart = System.nanoTime();
    try (NativeExecutor ex = NativeExecutor.create("sim", cfg)) {
      int sent = 0;
      int finished = 0;
      double arrivalUs = 0;
      while (finished < requests) {
        long iterEnd = ex.nextIterationEndMicros();
        if (sent < requests && (iterEnd < 0 || (long) arrivalUs <= iterEnd)) {
          ex.advanceTo(Math.max((long) arrivalUs, ex.nowMicros()));
          ex.enqueue(request(sent, rnd));
          sent++;
          arrivalUs += -Math.log(1.0 - rnd.nextDouble()) / rate * 1e6;
        } else if (iterEnd >= 0) {
          ex.advanceTo(iterEnd);
        } else if (sent >= requests) {
          break;
        }
        for (ExecutorResponse r : ex.awaitResponses(4096, Duration.ZERO)) {
          if (!r.isFinal()) {
            continue;
          }
          finished++;
          if (r.isError()) {
            errors++;
            spec.commandLine().getErr().println("request " + r.clientRequestId() + ": " + r.errorMessage());
            continue;
          }
          ttft.recordValue(Math.max(0, r.metrics().ttftUs()));
          e2e.recordValue(Math.max(0, r.metrics().finishUs() - r.metrics().arrivalUs()));
          promptTotal += r.metrics().promptTokens();
          generated += r.metrics().outputTokens();
        }
      }
      double wallS = (System.nanoTime() - wallStart) / 1e9;
      IterationStats st = ex.iterationStats();
      double simS = ex.nowMicros() / 1e6;
      out.printf(Locale.ROOT, "requests           %d (%d errors)%n", requests, errors);
      out.printf(Locale.ROOT, "simulated time     %.1f s over %d iterations (busy %.0f%%)%n", simS, st.iterations(),
          simS > 0 ? 100.0 * st.busyUs() / 1e6 / simS : 0.0);
      out.printf(Locale.ROOT, "TTFT ms            p50 %.1f  p95 %.1f  p99 %.1f%n", ms(ttft, 50), ms(ttft, 95), ms(ttft, 99));
      out.printf(Locale.ROOT, "end-to-end ms      p50 %.1f  p95 %.1f  p99 %.1f%n", ms(e2e, 50), ms(e2e, 95), ms(e2e, 99));
      out.printf(Locale.ROOT, "prefix hit ratio   %.3f (reused / prompt tokens)%n", st.prefixHitRatio());
      for (int rank = 0; rank < ex.numRanks(); rank++) {
        KvCacheStats k = ex.kvCacheStats(rank);
        out.printf(Locale.ROOT, "KV rank %-2d         blocks %d: used %d, cached %d, free %d; hit rate %.3f, evicted %d%n",
            rank, k.maxNumBlocks(), k.usedNumBlocks(), k.cachedNumBlocks(), k.freeNumBlocks(), k.cacheHitRate(),
            k.evictedBlocks());
      }
      out.printf(Locale.ROOT, "wall time          %.2f s: %.0f simulated requests/s, %.0f simulated tokens/s%n", wallS,
          requests / wallS, (promptTotal + generated) / wallS);
    }
    return errors == 0 ? 0 : 1;
  }

  private void validate() {
    if (requests <= 0 || promptTokens < 2 || maxNewTokens <= 0 || prefixGroups <= 0 || rate <= 0) {
      throw ExecutorConfigs.bad(spec.commandLine(),
          "--requests, --max-new-tokens, --prefix-groups and --rate must be > 0 and --prompt-tokens >= 2");
    }
    if (sharedPrefixTokens < 0 || sharedPrefixTokens > promptTokens) {
      throw ExecutorConfigs.bad(spec.commandLine(), "--shared-prefix-tokens must be in [0, --prompt-tokens]");
    }
  }

  private ExecutorRequest request(int i, SplittableRandom rnd) {
    int group = rnd.nextInt(prefixGroups);
    int[] prompt = new int[promptTokens];
    for (int t = 0; t < promptTokens; t++) {
      // Shared prefix: the same ids for every request of a group; suffix: unique per request.
      prompt[t] = t < sharedPrefixTokens ? 1 + (group * 7919 + t * 31) % 30000 : 1 + (i * 104729 + t * 17) % 30000;
    }
    return ExecutorRequest.builder(prompt, maxNewTokens).clientRequestId(i).seed(seed)
        .conversationId("group-" + group).build();
  }

  private static double ms(Histogram h, double percentile) {
    return h.getTotalCount() == 0 ? 0.0 : h.getValueAtPercentile(percentile) / 1000.0;
  }
}
