// TensorRT-LLM-compatible KV block hashing: the v1 block key (tensorrt_llm/runtime/kv_cache_hash.py,
// bit-exact with BlockKeyHasher in cpp/include/tensorrt_llm/batch_manager/kvCacheManager.h, blockKey.h
// in newer releases) and SHA-256.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace affinity::sim {

/// hash_v1_block_key(tokens, parent_hash, lora_task_id, cache_salt_id). All arithmetic mod 2^64.
uint64_t hashV1BlockKey(const int32_t* tokens, size_t n, uint64_t parentHash,
                        std::optional<uint64_t> loraTaskId, std::optional<uint64_t> cacheSaltId);

/// The router's v1 chain over a prompt: the last token excluded, chunks of tokensPerBlock, the final
/// partial chunk hashed too when includePartial, each chained on the previous (parent 0 first; the
/// salt is mixed into the first block only).
std::vector<uint64_t> v1BlockHashChain(const std::vector<int32_t>& tokens, int32_t tokensPerBlock,
                                       std::optional<uint64_t> cacheSaltId, bool includePartial);

using Sha256Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
 public:
  Sha256();
  void update(const uint8_t* data, size_t n);
  Sha256Digest finish();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t bufLen_ = 0;
  uint64_t totalLen_ = 0;
};

Sha256Digest sha256(const uint8_t* data, size_t n);

/// cache_salt_id = u64 little-endian of the first 8 bytes of SHA-256(salt as UTF-8 bytes).
uint64_t cacheSaltId(const std::string& salt);

}  // namespace affinity::sim
