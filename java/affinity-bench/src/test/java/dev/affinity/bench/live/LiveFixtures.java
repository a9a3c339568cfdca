package dev.affinity.bench.live;

import dev.affinity.config.ConfigLoader;
import dev.affinity.config.DisaggConfig;

/** A frontend configuration for live tests: embedded workers whose timing model costs nothing. */
public final class LiveFixtures {
  private static final String ZERO = "{iteration_overhead_us: 0, prefill_us_per_token: 0, prefill_us_per_token_sq: 0, "
      + "decode_base_us: 0, decode_us_per_seq: 0, decode_us_per_kv_token: 0, transfer_latency_us: 0}";
  private static final String CONFIG = """
      hostname: 127.0.0.1
      port: 8000
      conversation_affinity_header_for_subagents: X-Dynamo-Parent-Session-ID
      subagent_affinity_scope: context
      context_servers: {num_instances: 2, router: {type: conversation}}
      generation_servers: {num_instances: 1, router: {type: load_balancing}}
      affinity:
        model: affinity-sim
        debug_headers: true
        workers:
          context: {instances: 2, ranks: 2, executor: {timing: %s}}
          generation: {instances: 1, ranks: 2, executor: {timing: %s}}
      """.formatted(ZERO, ZERO);

  private LiveFixtures() {}

  /** 2 context + 1 generation instance x 2 ranks, debug headers on, sub-agent header with scope context. */
  public static DisaggConfig zeroCostFleet() {
    return ConfigLoader.parse(CONFIG, "live-test.yaml").config();
  }
}
