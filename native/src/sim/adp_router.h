// Rank choice inside one instance, mirroring TensorRT-LLM's ADP routers
// (tensorrt_llm/_torch/pyexecutor/scheduler/adp_router.py): explicit hints honoured while the rank
// has capacity, then default
// (least loaded), KV-aware (longest prefix with a fair-share cap) or conversation-aware (sticky per
// conversation / sub-agent affinity id, bounded LRU).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.h"

namespace affinity::sim {

struct RankLoad {
  int64_t activeRequests = 0;
  int64_t activeTokens = 0;
};

/// What the router needs to know about one new request.
struct RouteCandidate {
  int64_t requestId = 0;
  int32_t inputTokens = 0;
  int32_t rankHint = -1;
  bool relax = true;
  std::string affinityKey;  ///< sub-agent affinity id if present, else own conversation id
};

class AdpRouter {
 public:
  /// probe(requestIndex, rank) returns the cached prefix length in tokens (KV-aware router only).
  using Probe = std::function<int32_t(size_t, int32_t)>;

  AdpRouter(const AdpRouterConfig& cfg, int32_t numRanks, int32_t maxActivePerRank);

  /// Assigns ranks to as many candidates as capacity allows. loads is updated in place. Returns one
  /// rank per candidate, -1 for those left pending (every rank at capacity).
  std::vector<int32_t> route(const std::vector<RouteCandidate>& cands, std::vector<RankLoad>& loads,
                             const Probe& probe);

  /// Sessions currently bound (conversation router).
  size_t boundSessions() const { return lru_.size(); }
  /// The rank a key is bound to, or -1.
  int32_t boundRank(const std::string& key) const;

 private:
  int32_t pickDefault(const RouteCandidate& c, std::vector<RankLoad>& loads, int64_t target);
  int32_t pickKvAware(size_t idx, const RouteCandidate& c, std::vector<RankLoad>& loads, const Probe& probe,
                      int64_t softCap);
  int32_t pickConversation(const RouteCandidate& c, std::vector<RankLoad>& loads, int64_t softCap,
                           bool hintTaken, int32_t hintedRank);
  int32_t roundRobin(const std::vector<RankLoad>& loads, int64_t cap);
  void bind(const std::string& key, int32_t rank);

  AdpRouterConfig cfg_;
  int32_t numRanks_;
  int64_t cap_;
  uint64_t rr_ = 0;
  std::list<std::string> lru_;  ///< most recent first
  std::unordered_map<std::string, std::pair<int32_t, std::list<std::string>::iterator>> sessions_;
};

}  // namespace affinity::sim
