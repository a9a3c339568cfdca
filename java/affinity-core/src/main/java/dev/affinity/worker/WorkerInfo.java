package dev.affinity.worker;

import dev.affinity.kv.HashAlgorithm;
import java.util.Objects;

/**
 * What routing needs to know about a worker: how it hashes KV blocks ({@code /server_info}'s
 * {@code tokens_per_block} and {@code kv_cache_hash_algo}), its attention-DP ranks and whether
 * Affinity can choose among them (in-process and Affinity worker processes: yes; stock trtllm-serve:
 * no, the worker picks the rank), and its batch capacity: sequences per rank ({@code max_batch_size}) and tokens
 * one rank computes per iteration ({@code max_num_tokens}).
 */
public record WorkerInfo(int tokensPerBlock, HashAlgorithm hashAlgorithm, int numRanks, boolean ranksVisible,
    int maxBatchSize, int maxNumTokens) {

  /** TensorRT-LLM's default {@code max_num_tokens}. */
  public static final int DEFAULT_MAX_NUM_TOKENS = 8192;

  public WorkerInfo {
    Objects.requireNonNull(hashAlgorithm, "hashAlgorithm");
    if (tokensPerBlock <= 0 || numRanks <= 0 || maxBatchSize <= 0 || maxNumTokens <= 0) {
      throw new IllegalArgumentException("tokensPerBlock, numRanks, maxBatchSize and maxNumTokens must be > 0: "
          + tokensPerBlock + ", " + numRanks + ", " + maxBatchSize + ", " + maxNumTokens);
    }
  }

  /** A worker with upstream's default {@code max_num_tokens}. */
  public WorkerInfo(int tokensPerBlock, HashAlgorithm hashAlgorithm, int numRanks, boolean ranksVisible,
      int maxBatchSize) {
    this(tokensPerBlock, hashAlgorithm, numRanks, ranksVisible, maxBatchSize, DEFAULT_MAX_NUM_TOKENS);
  }

  /** A trtllm-serve worker before its /server_info is known: upstream defaults. */
  public static WorkerInfo defaults() {
    return new WorkerInfo(32, HashAlgorithm.V1_BLOCK_KEY, 1, false, 64);
  }

  /** Ranks a router can choose among: numRanks when visible, else one (the worker decides). */
  public int routableRanks() {
    return ranksVisible ? numRanks : 1;
  }
}
