#include "adp_router.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace affinity::sim {

AdpRouter::AdpRouter(const AdpRouterConfig& cfg, int32_t numRanks, int32_t maxActivePerRank)
    : cfg_(cfg), numRanks_(numRanks), cap_(maxActivePerRank) {}

int32_t AdpRouter::boundRank(const std::string& key) const {
  auto it = sessions_.find(key);
  return it == sessions_.end() ? -1 : it->second.first;
}

void AdpRouter::bind(const std::string& key, int32_t rank) {
  auto it = sessions_.find(key);
  if (it != sessions_.end()) {
    lru_.erase(it->second.second);
    sessions_.erase(it);
  }
  lru_.push_front(key);
  sessions_[key] = {rank, lru_.begin()};
  while (static_cast<int64_t>(lru_.size()) > cfg_.maxSessions) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
}

int32_t AdpRouter::roundRobin(const std::vector<RankLoad>& loads, int64_t cap) {
  for (int32_t i = 0; i < numRanks_; ++i) {
    const int32_t r = static_cast<int32_t>((rr_ + static_cast<uint64_t>(i)) % static_cast<uint64_t>(numRanks_));
    if (loads[static_cast<size_t>(r)].activeRequests < cap) {
      rr_ = static_cast<uint64_t>(r) + 1;
      return r;
    }
  }
  return -1;
}

int32_t AdpRouter::pickDefault(const RouteCandidate& c, std::vector<RankLoad>& loads, int64_t target) {
  (void)c;
  int32_t best = -1;
  for (int32_t r = 0; r < numRanks_; ++r) {
    const RankLoad& l = loads[static_cast<size_t>(r)];
    if (l.activeRequests >= target) continue;
    if (best < 0) {
      best = r;
      continue;
    }
    const RankLoad& b = loads[static_cast<size_t>(best)];
    if (std::tie(l.activeTokens, l.activeRequests) < std::tie(b.activeTokens, b.activeRequests)) best = r;
  }
  return best;
}

int32_t AdpRouter::pickKvAware(size_t idx, const RouteCandidate& c, std::vector<RankLoad>& loads,
                               const Probe& probe, int64_t softCap) {
  std::vector<int32_t> match(static_cast<size_t>(numRanks_), 0);
  int32_t maxMatch = 0;
  for (int32_t r = 0; r < numRanks_; ++r) {
    match[static_cast<size_t>(r)] = probe(idx, r);
    maxMatch = std::max(maxMatch, match[static_cast<size_t>(r)]);
  }
  const double reqTokens = std::max(1, c.inputTokens);
  const bool useCache = maxMatch / reqTokens > cfg_.matchRateThreshold;
  int64_t total = 0;
  for (const auto& l : loads) total += l.activeTokens;
  auto pick = [&](int64_t cap) {
    int32_t best = -1;
    double bestScore = std::numeric_limits<double>::infinity();
    for (int32_t r = 0; r < numRanks_; ++r) {
      const RankLoad& l = loads[static_cast<size_t>(r)];
      if (l.activeRequests >= cap) continue;
      const double m = useCache ? match[static_cast<size_t>(r)] : 0.0;
      const double load = static_cast<double>(l.activeTokens) / std::max<double>(static_cast<double>(total), reqTokens) * reqTokens;
      const double score = (reqTokens - m) + cfg_.loadBalanceWeight * load;
      if (score < bestScore) {
        bestScore = score;
        best = r;
      }
    }
    return best;
  };
  const int32_t r = pick(std::min(softCap, cap_));
  return r >= 0 ? r : pick(cap_);
}

int32_t AdpRouter::pickConversation(const RouteCandidate& c, std::vector<RankLoad>& loads, int64_t softCap,
                                    bool hintTaken, int32_t hintedRank) {
  if (c.affinityKey.empty()) {
    return hintTaken ? hintedRank : roundRobin(loads, cap_);
  }
  auto it = sessions_.find(c.affinityKey);
  if (it != sessions_.end()) {
    const int32_t bound = it->second.first;
    bind(c.affinityKey, bound);  // refresh LRU position
    if (hintTaken) return hintedRank;  // a later conflicting hint does not override the binding
    if (loads[static_cast<size_t>(bound)].activeRequests < cap_) return bound;
    return roundRobin(loads, cap_);  // overflow without rebinding: the next turn returns
  }
  if (hintTaken) {
    bind(c.affinityKey, hintedRank);  // an explicit hint on a first turn becomes the binding
    return hintedRank;
  }
  int32_t r = roundRobin(loads, std::min(softCap, cap_));
  if (r < 0) r = roundRobin(loads, cap_);
  if (r >= 0) bind(c.affinityKey, r);
  return r;
}

std::vector<int32_t> AdpRouter::route(const std::vector<RouteCandidate>& cands, std::vector<RankLoad>& loads,
                                      const Probe& probe) {
  std::vector<int32_t> out(cands.size(), -1);
  // Strict hints first, then relaxed hints, then the rest (longest input first for the default
  // router, arrival order otherwise).
  std::vector<size_t> order(cands.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto cls = [&](const RouteCandidate& c) { return c.rankHint < 0 ? 2 : (c.relax ? 1 : 0); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ca = cls(cands[a]), cb = cls(cands[b]);
    if (ca != cb) return ca < cb;
    if (cfg_.type == AdpRouterType::kDefault && ca == 2) return cands[a].inputTokens > cands[b].inputTokens;
    return false;
  });
  int64_t active = 0;
  for (const auto& l : loads) active += l.activeRequests;
  const int64_t n = static_cast<int64_t>(cands.size());
  const int64_t fair = (active + n + numRanks_ - 1) / numRanks_;
  const int64_t softCap = static_cast<int64_t>(std::ceil(cfg_.fairShareMultiplier * static_cast<double>(fair)));
  int64_t maxActive = 0;
  for (const auto& l : loads) maxActive = std::max(maxActive, l.activeRequests);
  const int64_t target = std::min(std::max(fair, maxActive), cap_);

  for (const size_t i : order) {
    const RouteCandidate& c = cands[i];
    const bool hintValid = c.rankHint >= 0 && c.rankHint < numRanks_;
    const bool hintTaken = hintValid && loads[static_cast<size_t>(c.rankHint)].activeRequests < cap_;
    int32_t r = -1;
    if (cfg_.type == AdpRouterType::kConversation) {
      r = pickConversation(c, loads, softCap, hintTaken, c.rankHint);
    } else if (hintTaken) {
      r = c.rankHint;
    } else if (cfg_.type == AdpRouterType::kKvAware) {
      r = pickKvAware(i, c, loads, probe, softCap);
    } else {
      r = pickDefault(c, loads, target);
      if (r < 0) r = pickDefault(c, loads, cap_);
    }
    if (r >= 0) {
      RankLoad& l = loads[static_cast<size_t>(r)];
      ++l.activeRequests;
      l.activeTokens += c.inputTokens;
    }
    out[i] = r;
  }
  return out;
}

}  // namespace affinity::sim
