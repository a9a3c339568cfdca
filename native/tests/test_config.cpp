// Strict JSON configuration of the sim backend: defaults, errors naming the key path, presets,
// the backend factory, and describe() round trips.
#include <nlohmann/json.hpp>

#include "check.h"
#include "sim/config.h"
#include "sim_util.h"

using namespace affinity;
using namespace affinity::sim;
using nlohmann::json;

namespace {

/// Config equality through every field that describe() reports.
void checkSame(const SimConfig& a, const SimConfig& b) {
  CHECK_EQ(a.toJson(), b.toJson());
  CHECK_EQ(a.instanceName, b.instanceName);
  CHECK_EQ(a.numRanks, b.numRanks);
  CHECK_EQ(a.tokensPerBlock, b.tokensPerBlock);
  CHECK_EQ(a.kvBlocksPerRank, b.kvBlocksPerRank);
  CHECK_EQ(a.maxBatchSize, b.maxBatchSize);
  CHECK_EQ(a.maxNumTokens, b.maxNumTokens);
  CHECK_EQ(a.maxNumActiveRequests, b.maxNumActiveRequests);
  CHECK_EQ(a.enableChunkedPrefill, b.enableChunkedPrefill);
  CHECK_EQ(a.enableBlockReuse, b.enableBlockReuse);
  CHECK(a.reusePolicy == b.reusePolicy);
  CHECK_EQ(a.maxNumTurns, b.maxNumTurns);
  CHECK(a.adpRouter.type == b.adpRouter.type);
  CHECK_EQ(a.adpRouter.loadBalanceWeight, b.adpRouter.loadBalanceWeight);
  CHECK_EQ(a.adpRouter.matchRateThreshold, b.adpRouter.matchRateThreshold);
  CHECK_EQ(a.adpRouter.fairShareMultiplier, b.adpRouter.fairShareMultiplier);
  CHECK_EQ(a.adpRouter.maxSessions, b.adpRouter.maxSessions);
  CHECK_EQ(a.timing.preset, b.timing.preset);
  CHECK_EQ(a.timing.iterationOverheadUs, b.timing.iterationOverheadUs);
  CHECK_EQ(a.timing.prefillUsPerToken, b.timing.prefillUsPerToken);
  CHECK_EQ(a.timing.prefillUsPerTokenSq, b.timing.prefillUsPerTokenSq);
  CHECK_EQ(a.timing.decodeBaseUs, b.timing.decodeBaseUs);
  CHECK_EQ(a.timing.decodeUsPerSeq, b.timing.decodeUsPerSeq);
  CHECK_EQ(a.timing.decodeUsPerKvToken, b.timing.decodeUsPerKvToken);
  CHECK_EQ(a.timing.kvBytesPerToken, b.timing.kvBytesPerToken);
  CHECK_EQ(a.timing.transferBandwidthBytesPerS, b.timing.transferBandwidthBytesPerS);
  CHECK_EQ(a.timing.transferLatencyUs, b.timing.transferLatencyUs);
  CHECK_EQ(a.virtualClock, b.virtualClock);
  CHECK_EQ(a.timeScale, b.timeScale);
  CHECK_EQ(a.contextHoldTimeoutUs, b.contextHoldTimeoutUs);
  CHECK_EQ(a.kvEventsEnabled, b.kvEventsEnabled);
  CHECK_EQ(a.kvEventsIncludeTokens, b.kvEventsIncludeTokens);
  CHECK_EQ(a.kvEventsMaxBuffered, b.kvEventsMaxBuffered);
  CHECK_EQ(a.vocabSize, b.vocabSize);
}

}  // namespace

TEST(defaults) {
  for (const char* text : {"", "  \n", "{}"}) {
    const SimConfig c = parseSimConfig(text);
    CHECK_EQ(c.instanceName, "sim");
    CHECK_EQ(c.numRanks, 1);
    CHECK_EQ(c.tokensPerBlock, 32);
    CHECK_EQ(c.kvBlocksPerRank, 8192);
    CHECK_EQ(c.maxBatchSize, 64);
    CHECK_EQ(c.maxNumTokens, 8192);
    CHECK_EQ(c.maxNumActiveRequests, 64);  // 0 means max_batch_size
    CHECK(c.enableChunkedPrefill);
    CHECK(c.enableBlockReuse);
    CHECK(c.reusePolicy == ReusePolicy::kAllReusable);
    CHECK_EQ(c.maxNumTurns, 1);
    CHECK(c.adpRouter.type == AdpRouterType::kDefault);
    CHECK_EQ(c.adpRouter.loadBalanceWeight, 1.0);
    CHECK_EQ(c.adpRouter.matchRateThreshold, 0.1);
    CHECK_EQ(c.adpRouter.fairShareMultiplier, 2.0);
    CHECK_EQ(c.adpRouter.maxSessions, 65536);
    CHECK_EQ(c.timing.preset, "llama3-70b-h100-tp8");
    CHECK(!c.virtualClock);
    CHECK_EQ(c.timeScale, 1.0);
    CHECK_EQ(c.contextHoldTimeoutUs, 60'000'000);
    CHECK(c.kvEventsEnabled);
    CHECK(c.kvEventsIncludeTokens);
    CHECK_EQ(c.vocabSize, 32000);
  }
  CHECK_EQ(parseSimConfig(R"({"max_batch_size":7})").maxNumActiveRequests, 7);
  CHECK_EQ(parseSimConfig(R"({"max_batch_size":7,"max_num_active_requests":3})").maxNumActiveRequests, 3);
}

TEST(every_key_is_read) {
  const SimConfig c = parseSimConfig(R"({
    "instance_name": "ctx-0", "num_ranks": 4, "tokens_per_block": 64, "kv_blocks_per_rank": 1000,
    "max_batch_size": 16, "max_num_tokens": 4096, "max_num_active_requests": 20,
    "enable_chunked_prefill": false, "vocab_size": 1000,
    "block_reuse": {"enabled": true, "policy": "per_conversation", "max_num_turns": 3},
    "adp_router": {"type": "kv_aware", "load_balance_weight": 0.5, "match_rate_threshold": 0.2,
                   "fair_share_multiplier": 1.5, "max_sessions": 10},
    "preset": "deepseek-v3-h100-dp",
    "timing": {"iteration_overhead_us": 123, "transfer_latency_us": 7},
    "clock": {"mode": "virtual", "time_scale": 2.5},
    "context_hold_timeout_ms": 1.5,
    "kv_events": {"enabled": false, "include_tokens": false, "max_buffered": 99}
  })");
  CHECK_EQ(c.instanceName, "ctx-0");
  CHECK_EQ(c.numRanks, 4);
  CHECK_EQ(c.tokensPerBlock, 64);
  CHECK_EQ(c.kvBlocksPerRank, 1000);
  CHECK_EQ(c.maxBatchSize, 16);
  CHECK_EQ(c.maxNumTokens, 4096);
  CHECK_EQ(c.maxNumActiveRequests, 20);
  CHECK(!c.enableChunkedPrefill);
  CHECK_EQ(c.vocabSize, 1000);
  CHECK(c.reusePolicy == ReusePolicy::kPerConversation);
  CHECK_EQ(c.maxNumTurns, 3);
  CHECK(c.adpRouter.type == AdpRouterType::kKvAware);
  CHECK_EQ(c.adpRouter.loadBalanceWeight, 0.5);
  CHECK_EQ(c.adpRouter.matchRateThreshold, 0.2);
  CHECK_EQ(c.adpRouter.fairShareMultiplier, 1.5);
  CHECK_EQ(c.adpRouter.maxSessions, 10);
  CHECK_EQ(c.timing.preset, "deepseek-v3-h100-dp");
  CHECK_EQ(c.timing.iterationOverheadUs, 123.0);
  CHECK_EQ(c.timing.transferLatencyUs, 7.0);
  // Keys not overridden keep the preset's values.
  CHECK_EQ(c.timing.decodeBaseUs, timingPreset("deepseek-v3-h100-dp").decodeBaseUs);
  CHECK(c.virtualClock);
  CHECK_EQ(c.timeScale, 2.5);
  CHECK_EQ(c.contextHoldTimeoutUs, 1500);
  CHECK(!c.kvEventsEnabled);
  CHECK(!c.kvEventsIncludeTokens);
  CHECK_EQ(c.kvEventsMaxBuffered, 99);
  for (const auto& [name, type] : {std::make_pair("default", AdpRouterType::kDefault),
                                   std::make_pair("conversation", AdpRouterType::kConversation)}) {
    CHECK(parseSimConfig(std::string(R"({"adp_router":{"type":")") + name + "\"}}").adpRouter.type == type);
  }
  CHECK(parseSimConfig(R"({"block_reuse":{"policy":"per_request"}})").reusePolicy == ReusePolicy::kPerRequest);
}

TEST(unknown_key_names_its_path) {
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"polcy":"per_request"}})"), "'block_reuse.polcy': unknown key");
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"polcy":"per_request"}})"), "policy");  // lists known keys
  CHECK_THROWS(parseSimConfig(R"({"num_rank":2})"), "'num_rank': unknown key");
  CHECK_THROWS(parseSimConfig(R"({"timing":{"decode_us":1}})"), "'timing.decode_us'");
  CHECK_THROWS(parseSimConfig(R"({"clock":{"mode":"virtual","speed":1}})"), "'clock.speed'");
  CHECK_THROWS(parseSimConfig(R"({"kv_events":{"enable":true}})"), "'kv_events.enable'");
  CHECK_THROWS(parseSimConfig(R"({"adp_router":{"typ":"default"}})"), "'adp_router.typ'");
}

TEST(wrong_types_are_named) {
  CHECK_THROWS(parseSimConfig(R"({"num_ranks":"2"})"), "'num_ranks': expected an integer");
  CHECK_THROWS(parseSimConfig(R"({"num_ranks":2.5})"), "'num_ranks': expected an integer");
  CHECK_THROWS(parseSimConfig(R"({"enable_chunked_prefill":1})"), "'enable_chunked_prefill': expected true or false");
  CHECK_THROWS(parseSimConfig(R"({"instance_name":5})"), "'instance_name': expected a string");
  CHECK_THROWS(parseSimConfig(R"({"adp_router":{"load_balance_weight":"x"}})"), "'adp_router.load_balance_weight': expected a number");
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":[]})"), "'block_reuse': expected an object");
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"policy":3}})"), "'block_reuse.policy': expected a string");
  CHECK_THROWS(parseSimConfig("[1,2]"), "'<root>': expected an object");
  CHECK_THROWS(parseSimConfig("42"), "expected an object");
}

TEST(out_of_range_values_are_named) {
  CHECK_THROWS(parseSimConfig(R"({"num_ranks":0})"), "'num_ranks': expected a value in [1, 1024], found 0");
  CHECK_THROWS(parseSimConfig(R"({"tokens_per_block":-4})"), "'tokens_per_block'");
  CHECK_THROWS(parseSimConfig(R"({"max_batch_size":0})"), "'max_batch_size'");
  CHECK_THROWS(parseSimConfig(R"({"max_num_tokens":0})"), "'max_num_tokens'");
  CHECK_THROWS(parseSimConfig(R"({"vocab_size":1})"), "'vocab_size'");
  CHECK_THROWS(parseSimConfig(R"({"vocab_size":2147483648})"), "'vocab_size'");  // does not fit int32
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"max_num_turns":0}})"), "'block_reuse.max_num_turns'");
  CHECK_THROWS(parseSimConfig(R"({"adp_router":{"fair_share_multiplier":0.5}})"), "'adp_router.fair_share_multiplier'");
  CHECK_THROWS(parseSimConfig(R"({"adp_router":{"match_rate_threshold":-0.1}})"), "'adp_router.match_rate_threshold'");
  CHECK_THROWS(parseSimConfig(R"({"timing":{"decode_base_us":-1}})"), "'timing.decode_base_us'");
  CHECK_THROWS(parseSimConfig(R"({"timing":{"transfer_bandwidth_bytes_per_s":0}})"), "'timing.transfer_bandwidth_bytes_per_s'");
  CHECK_THROWS(parseSimConfig(R"({"clock":{"time_scale":0}})"), "'clock.time_scale'");
  CHECK_THROWS(parseSimConfig(R"({"context_hold_timeout_ms":-1})"), "'context_hold_timeout_ms'");
  CHECK_THROWS(parseSimConfig(R"({"context_hold_timeout_ms":1e16})"), "'context_hold_timeout_ms': expected a number <= 1e12");
  CHECK_EQ(parseSimConfig(R"({"context_hold_timeout_ms":1e12})").contextHoldTimeoutUs, 1'000'000'000'000'000);
  CHECK_THROWS(parseSimConfig(R"({"kv_blocks_per_rank":2147483648})"), "'kv_blocks_per_rank'");  // block ids are int32
  CHECK_THROWS(parseSimConfig(R"({"kv_events":{"max_buffered":0}})"), "'kv_events.max_buffered'");
  // Virtual mode does not wait, so a zero time scale is fine there.
  CHECK(parseSimConfig(R"({"clock":{"mode":"virtual","time_scale":0}})").virtualClock);
}

TEST(bad_choices_list_the_options) {
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"policy":"sometimes"}})"),
               "expected one of all_reusable, per_conversation, per_request");
  CHECK_THROWS(parseSimConfig(R"({"adp_router":{"type":"random"}})"), "'adp_router.type': expected one of");
  CHECK_THROWS(parseSimConfig(R"({"clock":{"mode":"fast"}})"), "'clock.mode'");
  CHECK_THROWS(parseSimConfig(R"({"block_reuse":{"enabled":false,"policy":"per_conversation"}})"),
               "per_conversation requires block_reuse.enabled");
}

TEST(unknown_preset_lists_known_ones) {
  CHECK_THROWS(parseSimConfig(R"({"preset":"gpt-5-on-a-toaster"})"),
               "unknown timing preset \"gpt-5-on-a-toaster\" (known: deepseek-v3-gb200-dp, deepseek-v3-h100-dp, llama3-70b-h100-tp8)");
  CHECK_THROWS(timingPreset("nope"), "llama3-70b-h100-tp8");
  CHECK_EQ(timingPresetNames(), "deepseek-v3-gb200-dp, deepseek-v3-h100-dp, llama3-70b-h100-tp8");
}

TEST(malformed_json) {
  CHECK_THROWS(parseSimConfig("{"), "malformed JSON");
  CHECK_THROWS(parseSimConfig(R"({"num_ranks":2,})"), "malformed JSON");
  CHECK_THROWS(parseSimConfig("num_ranks = 2"), "malformed JSON");
  // All parse errors are std::invalid_argument (Java sees IllegalArgumentException-like messages).
  bool invalid = false;
  try {
    parseSimConfig("{");
  } catch (const std::invalid_argument&) {
    invalid = true;
  }
  CHECK(invalid);
}

TEST(factory_rejects_unknown_backend_and_bad_config) {
  CHECK_THROWS(createExecutor("trtllm", "{}"), "unknown executor backend \"trtllm\" (available: sim,pytorch)");
  CHECK_THROWS(createExecutor("", ""), "unknown executor backend");
  CHECK_THROWS(createExecutor("sim", R"({"block_reuse":{"polcy":1}})"), "block_reuse.polcy");
  CHECK_EQ(availableBackends(), "sim,pytorch");
  // The pytorch backend without a Python: a config error naming the key, and no libpython loaded.
  CHECK_THROWS(createExecutor("pytorch", "{}"), "pytorch config: 'python': required");
  CHECK_THROWS(createExecutor("pytorch", R"({"python":"/x","libpython":"/x","host_library":"/x","model":"m","llm_args":{"model":"m"}})"), "llm_args.model");
  CHECK(!nativeVersion().empty());
  const int64_t live = liveObjectCount();
  try {
    createExecutor("sim", R"({"num_ranks":0})");
  } catch (const std::exception&) {
  }
  CHECK_EQ(liveObjectCount(), live);  // nothing leaked by a failed construction
}

TEST(describe_round_trips) {
  const char* configs[] = {
      "",
      R"({"clock":{"mode":"virtual"}})",
      R"({"instance_name":"gen-1","num_ranks":8,"tokens_per_block":16,"kv_blocks_per_rank":12345,
          "max_batch_size":3,"max_num_tokens":777,"enable_chunked_prefill":false,"vocab_size":50,
          "block_reuse":{"policy":"per_conversation","max_num_turns":4},
          "adp_router":{"type":"conversation","load_balance_weight":0.3,"match_rate_threshold":0.7,
                        "fair_share_multiplier":3.25,"max_sessions":17},
          "preset":"deepseek-v3-gb200-dp","timing":{"decode_us_per_seq":0.125,"prefill_us_per_token_sq":0},
          "clock":{"mode":"real","time_scale":0.01},"context_hold_timeout_ms":2.5,
          "kv_events":{"enabled":false,"include_tokens":false,"max_buffered":5}})",
  };
  for (const char* text : configs) {
    const SimConfig a = parseSimConfig(text);
    const SimConfig b = parseSimConfig(a.toJson());
    checkSame(a, b);
    // Through the facade too: describe() of an executor parses back to its configuration.
    auto e = testutil::ExecPtr(createExecutor("sim", text));
    const SimConfig d = parseSimConfig(e->describe());
    checkSame(a, d);
    const json j = json::parse(e->describe());
    CHECK(j.contains("timing"));
    CHECK_EQ(j["preset"].get<std::string>(), a.timing.preset);
  }
  const auto e = testutil::make(configs[2]);
  CHECK_EQ(e->numRanks(), 8);
  CHECK_EQ(e->tokensPerBlock(), 16);
  CHECK_EQ(e->clockMode(), static_cast<int32_t>(ClockMode::kReal));
}
