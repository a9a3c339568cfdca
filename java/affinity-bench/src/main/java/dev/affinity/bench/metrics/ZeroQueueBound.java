package dev.affinity.bench.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;

/**
 * The zero-queue bound on a request's time to first token: what the fleet's timing model
 * (docs/timing-model.md) gives a request that meets no queue anywhere and finds in its context instance's cache
 * what one pooled LRU cache of the whole context fleet's capacity would hold (the pooled bound, {@code
 * PooledCache}). It is the sum of
 *
 * <ul>
 *   <li>the uncached prefill, alone on its rank: {@code ceil(uncached / max_num_tokens)} iterations, each its
 *       overhead plus {@code L c + Q ((p + c)^2 - p^2)} for its chunk of {@code c} tokens after {@code p};
 *   <li>the hand-off: the generation executor's KV transfer of the prompt ({@code latency + bytes / bandwidth});
 *   <li>the first decode step of the generation executor with that one sequence.
 * </ul>
 *
 * <p>This is exactly the path a request takes through the simulator when nothing else is running: no placement,
 * priority or retention can make a request's first token come sooner, so a policy's TTFT over this bound is what
 * queueing and misses beyond the pooled cache cost it.
 *
 * @param context        the context executors' timing
 * @param generation     the generation executors' timing
 * @param maxNumTokens   tokens a context rank computes per iteration (the prefill chunk)
 */
public record ZeroQueueBound(Timing context, Timing generation, int maxNumTokens) {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  public ZeroQueueBound {
    if (maxNumTokens < 1) {
      throw new IllegalArgumentException("maxNumTokens must be >= 1, got " + maxNumTokens);
    }
  }

  /** The timing parameters of one executor (the CPU executor's {@code timing} block, microseconds). */
  public record Timing(double iterationOverheadUs, double prefillUsPerToken, double prefillUsPerTokenSq,
      double decodeBaseUs, double decodeUsPerSeq, double decodeUsPerKvToken, double kvBytesPerToken,
      double transferBandwidthBytesPerS, double transferLatencyUs) {

    /** Reads the {@code timing} block of a CPU executor's configuration in effect ({@code describe()}). */
    static Timing of(JsonNode timing) {
      return new Timing(num(timing, "iteration_overhead_us"), num(timing, "prefill_us_per_token"),
          num(timing, "prefill_us_per_token_sq"), num(timing, "decode_base_us"), num(timing, "decode_us_per_seq"),
          num(timing, "decode_us_per_kv_token"), num(timing, "kv_bytes_per_token"),
          num(timing, "transfer_bandwidth_bytes_per_s"), num(timing, "transfer_latency_us"));
    }

    private static double num(JsonNode n, String field) {
      JsonNode v = n.get(field);
      if (v == null || !v.isNumber()) {
        throw new IllegalArgumentException("executor configuration: timing." + field + " is missing");
      }
      return v.doubleValue();
    }
  }

  /**
   * The bound from two CPU executors' configurations in effect ({@code Executor.describe()}): a context
   * instance's and a generation instance's.
   */
  public static ZeroQueueBound fromDescriptions(String contextJson, String generationJson) {
    try {
      JsonNode ctx = MAPPER.readTree(contextJson);
      JsonNode gen = MAPPER.readTree(generationJson);
      return new ZeroQueueBound(Timing.of(ctx.path("timing")), Timing.of(gen.path("timing")),
          ctx.path("max_num_tokens").asInt(0));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The bound for a prompt of {@code promptTokens} of which the pooled cache holds {@code pooledReusedTokens}, in
   * microseconds (at least one token is computed, as every executor computes the last one).
   */
  public double ttftUs(int promptTokens, int pooledReusedTokens) {
    long cached = Math.max(0, Math.min(pooledReusedTokens, promptTokens - 1L));
    return prefillUs(cached, promptTokens - cached) + handOffUs(promptTokens) + firstDecodeUs(promptTokens);
  }

  /** {@code n} uncached tokens after {@code cached}, in iterations of at most {@code maxNumTokens}. */
  double prefillUs(long cached, long n) {
    double us = 0;
    long done = cached;
    long left = n;
    while (left > 0) {
      long c = Math.min(left, maxNumTokens);
      double a = done;
      double b = done + c;
      us += context.iterationOverheadUs() + context.prefillUsPerToken() * c + context.prefillUsPerTokenSq() * (b * b - a * a);
      done += c;
      left -= c;
    }
    return us;
  }

  /** The generation executor's KV transfer of the prompt. */
  double handOffUs(long promptTokens) {
    return generation.transferLatencyUs() + generation.kvBytesPerToken() * promptTokens
        / generation.transferBandwidthBytesPerS() * 1e6;
  }

  /** One decode iteration with one sequence of the prompt and the context phase's first token. */
  double firstDecodeUs(long promptTokens) {
    return generation.iterationOverheadUs() + generation.decodeBaseUs() + generation.decodeUsPerSeq()
        + generation.decodeUsPerKvToken() * (promptTokens + 1);
  }
}
