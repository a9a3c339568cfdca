// Block hashing against TensorRT-LLM's golden vectors (every case of both files).
#include <nlohmann/json.hpp>

#include "check.h"
#include "sim/hash.h"

using namespace affinity::sim;
using nlohmann::json;

static uint64_t u64(const json& j) { return std::stoull(j.get<std::string>()); }

static std::string hex(const Sha256Digest& d) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

TEST(v1_chains_match_golden) {
  int cases = 0;
  for (const auto& line : check::readLines(std::string(AFFINITY_GOLDEN_DIR) + "/kv_block_hash_chains.jsonl")) {
    const json j = json::parse(line);
    const auto tokens = j["tokens"].get<std::vector<int32_t>>();
    std::optional<uint64_t> salt;
    if (!j["cache_salt"].is_null()) {
      salt = cacheSaltId(j["cache_salt"].get<std::string>());
      CHECK_EQ(*salt, u64(j["cache_salt_id"]));
    }
    const auto got = v1BlockHashChain(tokens, j["tokens_per_block"].get<int32_t>(), salt, true);
    CHECK_EQ(got.size(), j["v1"].size());
    for (size_t i = 0; i < got.size(); ++i) CHECK_EQ(got[i], u64(j["v1"][i]));
    ++cases;
  }
  CHECK_EQ(cases, 240);
}

TEST(v2_sha256_chains_match_golden) {
  // The v2 keys are SHA-256 chains; reproducing them checks the SHA-256 used for salt ids.
  for (const auto& line : check::readLines(std::string(AFFINITY_GOLDEN_DIR) + "/kv_block_hash_chains.jsonl")) {
    const json j = json::parse(line);
    const auto tokens = j["tokens"].get<std::vector<int32_t>>();
    const size_t tpb = j["tokens_per_block"].get<size_t>();
    std::vector<uint8_t> scope;
    if (j["cache_salt"].is_null()) {
      scope.push_back(0);
    } else {
      scope.push_back(2);
      const uint64_t salt = u64(j["cache_salt_id"]);
      for (int b = 0; b < 8; ++b) scope.push_back(static_cast<uint8_t>(salt >> (8 * b)));
    }
    Sha256Digest key = sha256(scope.data(), scope.size());
    const size_t usable = tokens.empty() ? 0 : tokens.size() - 1;
    size_t i = 0;
    for (size_t start = 0; start < usable; start += tpb, ++i) {
      Sha256 h;
      h.update(key.data(), key.size());
      for (size_t t = start; t < std::min(usable, start + tpb); ++t) {
        const uint32_t v = static_cast<uint32_t>(tokens[t]);
        const uint8_t le[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
                               static_cast<uint8_t>(v >> 24)};
        h.update(le, 4);
      }
      key = h.finish();
      CHECK_EQ(hex(key), j["v2_sha256"][i].get<std::string>());
      uint64_t first8 = 0;
      for (int b = 0; b < 8; ++b) first8 = (first8 << 8) | key[static_cast<size_t>(b)];
      CHECK_EQ(first8, u64(j["v2_sha256_64"][i]));
    }
    CHECK_EQ(i, j["v2_sha256"].size());
  }
}

TEST(v1_single_block_keys_match_golden) {
  int cases = 0;
  for (const auto& line : check::readLines(std::string(AFFINITY_GOLDEN_DIR) + "/kv_block_key_v1.jsonl")) {
    const json j = json::parse(line);
    const auto tokens = j["tokens"].get<std::vector<int32_t>>();
    std::optional<uint64_t> lora, salt;
    if (!j["lora_task_id"].is_null()) lora = u64(j["lora_task_id"]);
    if (!j["cache_salt_id"].is_null()) salt = u64(j["cache_salt_id"]);
    CHECK_EQ(hashV1BlockKey(tokens.data(), tokens.size(), u64(j["parent_hash"]), lora, salt), u64(j["hash"]));
    ++cases;
  }
  CHECK_EQ(cases, 120);
}

TEST(chain_excludes_last_token_and_can_skip_partial) {
  const std::vector<int32_t> t = {1, 2, 3, 4, 5};
  CHECK_EQ(v1BlockHashChain(t, 2, std::nullopt, true).size(), 2u);   // [1,2] [3,4]; 5 excluded
  CHECK_EQ(v1BlockHashChain(t, 3, std::nullopt, true).size(), 2u);   // [1,2,3] [4]
  CHECK_EQ(v1BlockHashChain(t, 3, std::nullopt, false).size(), 1u);  // full blocks only
  CHECK(v1BlockHashChain({7}, 4, std::nullopt, true).empty());
}

TEST(empty_salt_is_a_salt) {
  const std::vector<int32_t> t = {1, 2, 3, 4, 5};
  CHECK(v1BlockHashChain(t, 2, cacheSaltId(""), true)[0] != v1BlockHashChain(t, 2, std::nullopt, true)[0]);
}
