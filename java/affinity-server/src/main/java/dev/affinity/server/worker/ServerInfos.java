package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.worker.WorkerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What routing adopts from a trtllm-serve worker's {@code GET /server_info}: {@code tokens_per_block},
 * {@code kv_cache_hash_algo} (missing → v1 with a warning, unknown → the worker is unusable) and
 * {@code max_batch_size}; missing numbers keep upstream's defaults (32, 64). A trtllm-serve worker picks
 * its attention-DP rank itself, so ranks are not visible (one routable rank).
 */
final class ServerInfos {
  private static final Logger LOG = LoggerFactory.getLogger(ServerInfos.class);

  private ServerInfos() {}

  static WorkerInfo parse(String workerId, JsonNode info) throws WorkerSetupException {
    if (info == null || !info.isObject()) {
      throw new WorkerSetupException(workerId, "/server_info is not a JSON object", null);
    }
    WorkerInfo defaults = WorkerInfo.defaults();
    int tokensPerBlock = positiveInt(workerId, info, "tokens_per_block", defaults.tokensPerBlock());
    int maxBatchSize = positiveInt(workerId, info, "max_batch_size", defaults.maxBatchSize());
    JsonNode algo = info.get("kv_cache_hash_algo");
    HashAlgorithm hash;
    if (algo == null || algo.isNull()) {
      LOG.warn("worker {}: /server_info has no kv_cache_hash_algo; assuming {}", workerId,
          HashAlgorithm.V1_BLOCK_KEY.wireName());
      hash = HashAlgorithm.V1_BLOCK_KEY;
    } else if (!algo.isTextual()) {
      throw new WorkerSetupException(workerId, "/server_info kv_cache_hash_algo must be a string, got " + algo, null);
    } else {
      try {
        hash = HashAlgorithm.fromWireName(algo.textValue());
      } catch (IllegalArgumentException e) {
        throw new WorkerSetupException(workerId, e.getMessage(), e);
      }
    }
    return new WorkerInfo(tokensPerBlock, hash, 1, false, maxBatchSize);
  }

  private static int positiveInt(String workerId, JsonNode info, String field, int fallback)
      throws WorkerSetupException {
    JsonNode n = info.get(field);
    if (n == null || n.isNull()) {
      return fallback;
    }
    if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() <= 0) {
      throw new WorkerSetupException(workerId, "/server_info " + field + " must be a positive integer, got " + n,
          null);
    }
    return n.intValue();
  }
}
