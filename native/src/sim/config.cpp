#include "config.h"

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "../core/json_reader.h"

namespace affinity::sim {
namespace {

using nlohmann::json;

// Presets: every value is derived in docs/timing-model.md from published figures (Mooncake's prefill
// cost model, SGLang's DeepSeek-V3 throughput on H100 and GB200, memory-bandwidth rooflines); each
// has an anchor test in native/tests/test_timing.cpp.
std::map<std::string, TimingParams> buildPresets() {
  std::map<std::string, TimingParams> m;
  {
    // Llama-3-70B BF16 on 8xH100 (TP8 = one rank). Prefill: Mooncake eq. 1 (l=80, d=8192, a=4,
    // b=22) at 3.6 PFLOP/s effective (MFU 0.45) -> 8k prompt ~0.32 s. Decode: roofline, 8.75 GB
    // FP8 weights + 40 KiB KV/token/GPU at 80% of 3.35 TB/s -> 64 x 8k context ~11 ms.
    TimingParams t;
    t.preset = "llama3-70b-h100-tp8";
    t.iterationOverheadUs = 500;
    t.prefillUsPerToken = 80.0 * 22 * 8192.0 * 8192.0 / 3.6e15 * 1e6;
    t.prefillUsPerTokenSq = 80.0 * 4 * 8192.0 / 3.6e15 * 1e6;
    t.decodeBaseUs = 8.75e9 / (0.8 * 3.35e12) * 1e6;
    t.decodeUsPerSeq = 10;
    t.decodeUsPerKvToken = 40960.0 / (0.8 * 3.35e12) * 1e6;
    t.kvBytesPerToken = 327680;
    t.transferBandwidthBytesPerS = 50e9;
    t.transferLatencyUs = 1000;
    m[t.preset] = t;
  }
  {
    // DeepSeek-V3 on H100 with attention DP (one rank = one GPU). Prefill fitted to SGLang EP32:
    // 57,674 / 50,302 tok/s per 8-GPU node at 1K / 4K prompts. Decode fitted to SGLang EP72:
    // 22,282 tok/s per node at batch 256 per GPU and KV length 2,000 (step ~92 ms).
    TimingParams t;
    t.preset = "deepseek-v3-h100-dp";
    t.iterationOverheadUs = 500;
    const double us1k = 1e6 / (57674.0 / 8), us4k = 1e6 / (50302.0 / 8);
    t.prefillUsPerTokenSq = (us4k - us1k) / 3072.0;
    t.prefillUsPerToken = us1k - 1024 * t.prefillUsPerTokenSq;
    t.decodeBaseUs = 3500;
    t.decodeUsPerKvToken = 70272.0 / (0.8 * 3.35e12) * 1e6;
    const double stepUs = 256.0 / (22282.0 / 8) * 1e6;
    t.decodeUsPerSeq =
        (stepUs - t.iterationOverheadUs - t.decodeBaseUs - 256 * 2000 * t.decodeUsPerKvToken) / 256;
    t.kvBytesPerToken = 70272;
    t.transferBandwidthBytesPerS = 50e9;
    t.transferLatencyUs = 1000;
    m[t.preset] = t;
  }
  {
    // DeepSeek-V3 on GB200 NVL72 (FP8 attention + NVFP4 MoE), one rank = one GPU. Prefill: SGLang
    // 26,156 input tok/s/GPU at 2k input (attention share as on H100). Decode: 13,386 tok/s/GPU at
    // batch 1,408 per rank (2k ISL), step ~105 ms; FP8 KV ~35 KiB/token at 80% of 8 TB/s.
    TimingParams t;
    t.preset = "deepseek-v3-gb200-dp";
    t.iterationOverheadUs = 500;
    const double us2k = 1e6 / 26156.0;
    const double attnShare = 0.093;
    t.prefillUsPerTokenSq = us2k * attnShare / 2048.0;
    t.prefillUsPerToken = us2k - 2048 * t.prefillUsPerTokenSq;
    t.decodeBaseUs = 2000;
    t.decodeUsPerKvToken = 35136.0 / (0.8 * 8e12) * 1e6;
    const double stepUs = 1408.0 / 13386.0 * 1e6;
    t.decodeUsPerSeq =
        (stepUs - t.iterationOverheadUs - t.decodeBaseUs - 1408 * 2048 * t.decodeUsPerKvToken) /
        1408;
    t.kvBytesPerToken = 35136;
    t.transferBandwidthBytesPerS = 400e9;
    t.transferLatencyUs = 500;
    m[t.preset] = t;
  }
  return m;
}

const std::map<std::string, TimingParams>& presets() {
  static const std::map<std::string, TimingParams> m = buildPresets();
  return m;
}

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw std::invalid_argument("sim config: '" + path + "': " + msg);
}

/// Reads the keys of one JSON object of the sim configuration, rejecting unknown ones.
class ObjectReader : public JsonObjectReader {
 public:
  ObjectReader(const json& obj, std::string path) : JsonObjectReader(obj, std::move(path), "sim config") {}
};

const std::map<std::string, ReusePolicy> kPolicies = {{"all_reusable", ReusePolicy::kAllReusable},
                                                      {"per_request", ReusePolicy::kPerRequest},
                                                      {"per_conversation", ReusePolicy::kPerConversation}};
const std::map<std::string, WaitingQueuePolicy> kWaitingQueuePolicies = {{"fcfs", WaitingQueuePolicy::kFcfs},
                                                                         {"priority", WaitingQueuePolicy::kPriority}};
const std::map<std::string, AdpRouterType> kRouters = {{"default", AdpRouterType::kDefault},
                                                       {"kv_aware", AdpRouterType::kKvAware},
                                                       {"conversation", AdpRouterType::kConversation}};

template <typename E>
std::string nameOf(const std::map<std::string, E>& m, E v) {
  for (const auto& [n, e] : m) {
    if (e == v) return n;
  }
  return "?";
}

}  // namespace

TimingParams timingPreset(const std::string& name) {
  auto it = presets().find(name);
  if (it == presets().end()) {
    throw std::invalid_argument("sim config: 'preset': unknown timing preset \"" + name +
                                "\" (known: " + timingPresetNames() + ")");
  }
  return it->second;
}

std::string timingPresetNames() {
  std::string names;
  for (const auto& [n, _] : presets()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

SimConfig parseSimConfig(const std::string& text) {
  SimConfig c;
  c.timing = timingPreset("llama3-70b-h100-tp8");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    c.maxNumActiveRequests = c.maxBatchSize;
    return c;
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(std::string("sim config: malformed JSON: ") + e.what());
  }
  {
    ObjectReader r(root, "");
    r.string("instance_name", c.instanceName);
    r.integer("num_ranks", c.numRanks, 1, 1024);
    r.integer("tokens_per_block", c.tokensPerBlock, 1, 4096);
    r.integer("kv_blocks_per_rank", c.kvBlocksPerRank, 1, INT32_MAX);  // block ids are int32
    r.integer("max_batch_size", c.maxBatchSize, 1, 1 << 20);
    r.integer("max_num_tokens", c.maxNumTokens, 1, 1 << 30);
    r.integer("max_num_active_requests", c.maxNumActiveRequests, 0, 1 << 20);
    r.boolean("enable_chunked_prefill", c.enableChunkedPrefill);
    r.integer("vocab_size", c.vocabSize, 2, INT32_MAX);
    if (const json* sc = r.find("scheduler_config")) {
      ObjectReader q(*sc, "scheduler_config");
      q.choice("waiting_queue_policy", c.waitingQueuePolicy, kWaitingQueuePolicies);
    }
    if (const json* br = r.find("block_reuse")) {
      ObjectReader b(*br, "block_reuse");
      b.boolean("enabled", c.enableBlockReuse);
      b.choice("policy", c.reusePolicy, kPolicies);
      b.integer("max_num_turns", c.maxNumTurns, 1, 1 << 20);
    }
    if (const json* ar = r.find("adp_router")) {
      ObjectReader a(*ar, "adp_router");
      a.choice("type", c.adpRouter.type, kRouters);
      a.number("load_balance_weight", c.adpRouter.loadBalanceWeight, 0);
      a.number("match_rate_threshold", c.adpRouter.matchRateThreshold, 0);
      a.number("fair_share_multiplier", c.adpRouter.fairShareMultiplier, 1);
      a.integer("max_sessions", c.adpRouter.maxSessions, 1, int64_t{1} << 40);
    }
    std::string preset = c.timing.preset;
    r.string("preset", preset);
    c.timing = timingPreset(preset);
    if (const json* tm = r.find("timing")) {
      ObjectReader t(*tm, "timing");
      t.number("iteration_overhead_us", c.timing.iterationOverheadUs, 0);
      t.number("prefill_us_per_token", c.timing.prefillUsPerToken, 0);
      t.number("prefill_us_per_token_sq", c.timing.prefillUsPerTokenSq, 0);
      t.number("decode_base_us", c.timing.decodeBaseUs, 0);
      t.number("decode_us_per_seq", c.timing.decodeUsPerSeq, 0);
      t.number("decode_us_per_kv_token", c.timing.decodeUsPerKvToken, 0);
      t.number("kv_bytes_per_token", c.timing.kvBytesPerToken, 0);
      t.number("transfer_bandwidth_bytes_per_s", c.timing.transferBandwidthBytesPerS, 1);
      t.number("transfer_latency_us", c.timing.transferLatencyUs, 0);
    }
    if (const json* ck = r.find("clock")) {
      ObjectReader k(*ck, "clock");
      std::string mode = "real";
      const std::map<std::string, bool> modes = {{"real", false}, {"virtual", true}};
      k.choice("mode", c.virtualClock, modes);
      k.number("time_scale", c.timeScale, 0);
      if (!c.virtualClock && !(c.timeScale > 0)) {
        fail("clock.time_scale", "must be > 0 in real mode (use mode \"virtual\" to run without waiting)");
      }
    }
    double holdMs = static_cast<double>(c.contextHoldTimeoutUs) / 1000.0;
    r.number("context_hold_timeout_ms", holdMs, 0);
    if (holdMs > 1e12) {  // microseconds must fit int64 with room for the clock
      fail("context_hold_timeout_ms", "expected a number <= 1e12 (about 31 years), found " + std::to_string(holdMs));
    }
    c.contextHoldTimeoutUs = static_cast<int64_t>(holdMs * 1000.0);
    if (const json* ev = r.find("kv_events")) {
      ObjectReader e(*ev, "kv_events");
      e.boolean("enabled", c.kvEventsEnabled);
      e.boolean("include_tokens", c.kvEventsIncludeTokens);
      e.integer("max_buffered", c.kvEventsMaxBuffered, 1, int64_t{1} << 40);
    }
  }
  if (c.maxNumActiveRequests == 0) c.maxNumActiveRequests = c.maxBatchSize;
  if (c.reusePolicy == ReusePolicy::kPerConversation && !c.enableBlockReuse) {
    fail("block_reuse.policy", "per_conversation requires block_reuse.enabled = true");
  }
  return c;
}

std::string SimConfig::toJson() const {
  json j;
  j["instance_name"] = instanceName;
  j["num_ranks"] = numRanks;
  j["tokens_per_block"] = tokensPerBlock;
  j["kv_blocks_per_rank"] = kvBlocksPerRank;
  j["max_batch_size"] = maxBatchSize;
  j["max_num_tokens"] = maxNumTokens;
  j["max_num_active_requests"] = maxNumActiveRequests;
  j["enable_chunked_prefill"] = enableChunkedPrefill;
  j["vocab_size"] = vocabSize;
  j["scheduler_config"] = {{"waiting_queue_policy", nameOf(kWaitingQueuePolicies, waitingQueuePolicy)}};
  j["block_reuse"] = {{"enabled", enableBlockReuse},
                      {"policy", nameOf(kPolicies, reusePolicy)},
                      {"max_num_turns", maxNumTurns}};
  j["adp_router"] = {{"type", nameOf(kRouters, adpRouter.type)},
                     {"load_balance_weight", adpRouter.loadBalanceWeight},
                     {"match_rate_threshold", adpRouter.matchRateThreshold},
                     {"fair_share_multiplier", adpRouter.fairShareMultiplier},
                     {"max_sessions", adpRouter.maxSessions}};
  j["preset"] = timing.preset;
  j["timing"] = {{"iteration_overhead_us", timing.iterationOverheadUs},
                 {"prefill_us_per_token", timing.prefillUsPerToken},
                 {"prefill_us_per_token_sq", timing.prefillUsPerTokenSq},
                 {"decode_base_us", timing.decodeBaseUs},
                 {"decode_us_per_seq", timing.decodeUsPerSeq},
                 {"decode_us_per_kv_token", timing.decodeUsPerKvToken},
                 {"kv_bytes_per_token", timing.kvBytesPerToken},
                 {"transfer_bandwidth_bytes_per_s", timing.transferBandwidthBytesPerS},
                 {"transfer_latency_us", timing.transferLatencyUs}};
  j["clock"] = {{"mode", virtualClock ? "virtual" : "real"}, {"time_scale", timeScale}};
  j["context_hold_timeout_ms"] = static_cast<double>(contextHoldTimeoutUs) / 1000.0;
  j["kv_events"] = {{"enabled", kvEventsEnabled},
                    {"include_tokens", kvEventsIncludeTokens},
                    {"max_buffered", kvEventsMaxBuffered}};
  return j.dump();
}

}  // namespace affinity::sim
