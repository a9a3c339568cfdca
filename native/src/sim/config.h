// Configuration of the CPU executor ("sim" backend), parsed from JSON with strict validation: an
// unknown key, a wrong type or an out-of-range value is a std::invalid_argument naming the key path.
#pragma once

#include <cstdint>
#include <string>

namespace affinity::sim {

/// Parameters of the timing model (see timing.h). Times in microseconds.
struct TimingParams {
  std::string preset;               ///< the named preset these values started from
  double iterationOverheadUs = 0;   ///< fixed cost of every iteration (launch, scheduling)
  double prefillUsPerToken = 0;     ///< linear prefill cost per uncached token (GEMMs)
  double prefillUsPerTokenSq = 0;   ///< attention: cost x ((p+c)^2 - p^2) for c new tokens after p
  double decodeBaseUs = 0;          ///< per decode step of a rank with any decode work (weights read)
  double decodeUsPerSeq = 0;        ///< per sequence in the decode batch
  double decodeUsPerKvToken = 0;    ///< per context token read by decode attention (memory-bound)
  double kvBytesPerToken = 0;       ///< KV size per token, for transfer time
  double transferBandwidthBytesPerS = 0;  ///< context -> generation KV transfer bandwidth
  double transferLatencyUs = 0;     ///< fixed cost per transfer
};

/// Looks up a named preset; throws std::invalid_argument listing the known names.
TimingParams timingPreset(const std::string& name);
/// Comma-separated preset names.
std::string timingPresetNames();

enum class ReusePolicy { kAllReusable, kPerRequest, kPerConversation };
/// TensorRT-LLM's scheduler_config.waiting_queue_policy (llmapi/llm_args.py WaitingQueuePolicy).
enum class WaitingQueuePolicy { kFcfs, kPriority };
enum class AdpRouterType { kDefault, kKvAware, kConversation };

struct AdpRouterConfig {
  AdpRouterType type = AdpRouterType::kDefault;
  double loadBalanceWeight = 1.0;     ///< kv_cache_routing_load_balance_weight (beta)
  double matchRateThreshold = 0.1;    ///< kv_cache_routing_match_rate_threshold
  double fairShareMultiplier = 2.0;   ///< kv_cache_routing_fair_share_multiplier (soft cap)
  int64_t maxSessions = 65536;        ///< kv_cache_routing_max_sessions
};

struct SimConfig {
  std::string instanceName = "sim";
  int32_t numRanks = 1;
  int32_t tokensPerBlock = 32;
  int64_t kvBlocksPerRank = 8192;
  int32_t maxBatchSize = 64;           ///< per rank: sequences in one iteration
  int32_t maxNumTokens = 8192;         ///< per rank: tokens computed in one iteration
  int32_t maxNumActiveRequests = 0;    ///< per rank capacity for rank hints; 0 = maxBatchSize
  /// scheduler_config.waiting_queue_policy: requests waiting for a batch slot or KV blocks are admitted first
  /// come, first served (upstream's default), or by priority (higher first, first come among equals).
  WaitingQueuePolicy waitingQueuePolicy = WaitingQueuePolicy::kFcfs;
  bool enableChunkedPrefill = true;
  bool enableBlockReuse = true;
  ReusePolicy reusePolicy = ReusePolicy::kAllReusable;
  int32_t maxNumTurns = 1;             ///< per_conversation: turns whose blocks are kept
  AdpRouterConfig adpRouter;
  TimingParams timing;
  bool virtualClock = false;
  double timeScale = 1.0;              ///< real mode: wall time = modelled time x timeScale
  int64_t contextHoldTimeoutUs = 60'000'000;  ///< context_only KV held for a generation pull
  bool kvEventsEnabled = true;
  bool kvEventsIncludeTokens = true;
  int64_t kvEventsMaxBuffered = 1'000'000;
  int32_t vocabSize = 32000;           ///< generated token ids are in [0, vocabSize)

  /// The configuration in effect as JSON.
  std::string toJson() const;
};

/// Parses a JSON object; "" means all defaults.
SimConfig parseSimConfig(const std::string& json);

}  // namespace affinity::sim
