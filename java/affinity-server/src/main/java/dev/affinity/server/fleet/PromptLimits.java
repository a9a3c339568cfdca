package dev.affinity.server.fleet;

import dev.affinity.admission.PromptLimit;
import dev.affinity.admission.QueueLimit;
import dev.affinity.config.AffinitySettings;
import dev.affinity.config.DisaggConfig;
import dev.affinity.config.ServerSection;
import dev.affinity.executor.KvCacheStats;
import dev.affinity.nativebridge.worker.NativeWorker;
import dev.affinity.routing.Fleet;
import java.util.List;
import java.util.Map;

/**
 * The longest prompt a configuration accepts: {@code affinity.max_prompt_tokens} when set; otherwise the
 * tightest of each fleet's own bound: an embedded pool's {@code max_seq_len}, or what one rank's KV cache
 * of its executors holds; a remote fleet's {@code max_seq_len} (the TensorRT-LLM LLM-API key its section
 * may carry, as in upstream's disaggregated configs). A fleet with neither adds no bound.
 */
final class PromptLimits {
  private PromptLimits() {
  }

  /**
   * The most work in flight: {@code affinity.max_queued_requests} (default
   * {@value AffinitySettings#DEFAULT_MAX_QUEUED_REQUESTS}) requests, and {@code affinity.max_queued_tokens} prompt
   * tokens, by default {@value QueueLimit#KV_CACHES_IN_FLIGHT} times the embedded context fleet's KV cache (every
   * rank of every instance): a request beyond that would wait for several turnovers of the whole cache. Remote
   * context workers do not report their cache, so without the setting only the request bound holds.
   */
  static QueueLimit queueLimit(DisaggConfig config, Map<Fleet, List<NativeWorker>> embedded) {
    AffinitySettings a = config.affinity();
    long requests = a.maxQueuedRequests() > 0 ? a.maxQueuedRequests() : AffinitySettings.DEFAULT_MAX_QUEUED_REQUESTS;
    if (a.maxQueuedTokens() > 0) {
      return new QueueLimit(requests, a.maxQueuedTokens(), "affinity.max_queued_tokens");
    }
    long kv = 0;
    for (NativeWorker w : embedded.getOrDefault(Fleet.CONTEXT, List.of())) {
      for (int rank = 0; rank < w.executor().numRanks(); rank++) {
        KvCacheStats s = w.executor().kvCacheStats(rank);
        kv += s.maxNumBlocks() * s.tokensPerBlock();
      }
    }
    return kv > 0
        ? new QueueLimit(requests, QueueLimit.KV_CACHES_IN_FLIGHT * kv, QueueLimit.KV_CACHES_IN_FLIGHT
            + " x the context fleet's KV cache of " + kv + " tokens; affinity.max_queued_tokens sets another bound")
        : new QueueLimit(requests, 0, "none");
  }

  static PromptLimit of(DisaggConfig config, Map<Fleet, List<NativeWorker>> embedded) {
    long configured = config.affinity().maxPromptTokens();
    if (configured > 0) {
      return new PromptLimit(configured, "affinity.max_prompt_tokens");
    }
    PromptLimit limit = PromptLimit.NONE;
    for (Fleet fleet : Fleet.values()) {
      ServerSection section = fleet == Fleet.CONTEXT ? config.context() : config.generation();
      if (section.isEmbedded()) {
        long maxSeqLen = section.embedded().get().maxSeqLen();
        String pool = "affinity.workers." + (fleet == Fleet.CONTEXT ? "context" : "generation");
        if (maxSeqLen > 0) {
          limit = limit.min(new PromptLimit(maxSeqLen, pool + ".max_seq_len"));
          continue;
        }
        for (NativeWorker w : embedded.getOrDefault(fleet, List.of())) {
          KvCacheStats s = w.executor().kvCacheStats(0);
          long capacity = s.maxNumBlocks() * s.tokensPerBlock();
          if (capacity > 0) {
            limit = limit.min(new PromptLimit(capacity, "one rank's KV cache of " + w.id() + ": " + s.maxNumBlocks()
                + " blocks of " + s.tokensPerBlock() + " tokens; " + pool + ".max_seq_len sets another bound"));
          }
        }
      } else if (section.workerArg("max_seq_len").orElse(null) instanceof Number n && n.longValue() > 0) {
        limit = limit.min(new PromptLimit(n.longValue(), section.name() + ".max_seq_len"));
      }
    }
    return limit;
  }
}
