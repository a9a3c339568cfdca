package dev.affinity.server.worker;

import com.fasterxml.jackson.databind.JsonNode;
import dev.affinity.kv.HashAlgorithm;
import dev.affinity.protocol.ProtocolCodec;
import dev.affinity.protocol.ProtocolException;
import dev.affinity.worker.WorkerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What routing adopts from a worker's {@code GET /server_info}: {@code tokens_per_block},
 * {@code kv_cache_hash_algo} (missing → v1 with a warning, unknown → the worker is unusable),
 * {@code max_batch_size} and {@code max_num_tokens}; missing numbers keep upstream's defaults (32, 64, 8192).
 * A trtllm-serve worker picks
 * its attention-DP rank itself, so ranks are not visible (one routable rank); an Affinity worker process
 * says {@code "affinity": {"ranks_visible": true, "num_ranks": N}} ({@link WorkerExtensions}) and then
 * has N visible ranks.
 */
final class ServerInfos {
  private static final Logger LOG = LoggerFactory.getLogger(ServerInfos.class);

  private ServerInfos() {}

  /** The JSON of worker {@code workerId}'s answer to {@code GET /server_info}. */
  static JsonNode body(String workerId, ControlExchange.Answer response, ProtocolCodec codec)
      throws WorkerSetupException {
    if (response.status() != 200) {
      throw new WorkerSetupException(workerId, "/server_info answered HTTP " + response.status() + ": "
          + Failures.errorMessage(response.status(), response.body(), codec), null);
    }
    try {
      return codec.readTree(response.body());
    } catch (ProtocolException e) {
      throw new WorkerSetupException(workerId, "/server_info is not JSON: " + e.getMessage(), e);
    }
  }

  static WorkerInfo parse(String workerId, JsonNode info) throws WorkerSetupException {
    if (info == null || !info.isObject()) {
      throw new WorkerSetupException(workerId, "/server_info is not a JSON object", null);
    }
    WorkerInfo defaults = WorkerInfo.defaults();
    int tokensPerBlock = positiveInt(workerId, info, "tokens_per_block", defaults.tokensPerBlock());
    int maxBatchSize = positiveInt(workerId, info, "max_batch_size", defaults.maxBatchSize());
    int maxNumTokens = positiveInt(workerId, info, "max_num_tokens", defaults.maxNumTokens());
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
    Ranks ranks = ranks(workerId, info);
    return new WorkerInfo(tokensPerBlock, hash, ranks.count(), ranks.visible(), maxBatchSize, maxNumTokens);
  }

  /** The ranks a router may choose among. */
  private record Ranks(int count, boolean visible) {
    static final Ranks HIDDEN = new Ranks(1, false);
  }

  /** One hidden rank, unless Affinity's extension says {@code ranks_visible: true} with {@code num_ranks}. */
  private static Ranks ranks(String workerId, JsonNode info) throws WorkerSetupException {
    JsonNode ext = info.get(WorkerExtensions.SERVER_INFO_KEY);
    if (ext == null || ext.isNull()) {
      return Ranks.HIDDEN;
    }
    if (!ext.isObject()) {
      throw new WorkerSetupException(workerId, "/server_info " + WorkerExtensions.SERVER_INFO_KEY
          + " must be an object, got " + ext, null);
    }
    JsonNode visible = ext.get(WorkerExtensions.RANKS_VISIBLE);
    if (visible != null && !visible.isNull() && !visible.isBoolean()) {
      throw new WorkerSetupException(workerId, "/server_info " + path(WorkerExtensions.RANKS_VISIBLE)
          + " must be a boolean, got " + visible, null);
    }
    if (visible == null || !visible.booleanValue()) {
      return Ranks.HIDDEN;
    }
    int count = positiveInt(workerId, ext, WorkerExtensions.NUM_RANKS, -1, path(WorkerExtensions.NUM_RANKS));
    if (count < 0) {
      throw new WorkerSetupException(workerId, "/server_info " + path(WorkerExtensions.NUM_RANKS)
          + " is required with " + WorkerExtensions.RANKS_VISIBLE + ": true", null);
    }
    return new Ranks(count, true);
  }

  private static String path(String field) {
    return WorkerExtensions.SERVER_INFO_KEY + "." + field;
  }

  private static int positiveInt(String workerId, JsonNode info, String field, int fallback)
      throws WorkerSetupException {
    return positiveInt(workerId, info, field, fallback, field);
  }

  private static int positiveInt(String workerId, JsonNode info, String field, int fallback, String name)
      throws WorkerSetupException {
    JsonNode n = info.get(field);
    if (n == null || n.isNull()) {
      return fallback;
    }
    if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() <= 0) {
      throw new WorkerSetupException(workerId, "/server_info " + name + " must be a positive integer, got " + n,
          null);
    }
    return n.intValue();
  }
}
