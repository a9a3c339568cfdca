package dev.affinity.routing;

import dev.affinity.kv.BlockHasher;
import dev.affinity.kv.HashAlgorithm;

/**
 * Prefix-chained block keys of a prompt for routers that keep their own approximate index of what
 * they routed where (not the workers' KV events): from the token ids when the request has them (the
 * keys the request already caches for the v1 hash), else from the code points of its text. Key
 * {@code i} stands for blocks {@code 0..i}, so equal keys mean equal prefixes.
 */
final class PromptBlocks {
  private PromptBlocks() {}

  /** The keys of the prompt's blocks of {@code blockSize} tokens (or characters), a partial last block included. */
  static long[] keys(RoutingRequest request, int blockSize) {
    if (request.hasTokens()) {
      return request.blockKeys(HashAlgorithm.V1_BLOCK_KEY, blockSize);
    }
    if (request.text() != null) {
      return new BlockHasher(HashAlgorithm.V1_BLOCK_KEY, blockSize).keys(request.text().codePoints().toArray(), null);
    }
    return new long[0];
  }

  /** How many of those keys are whole blocks. */
  static int fullBlocks(RoutingRequest request, int blockSize) {
    int units = request.hasTokens() ? request.numTokens() : request.text() != null
        ? request.text().codePointCount(0, request.text().length()) : 0;
    return Math.max(0, units - 1) / blockSize;
  }
}
