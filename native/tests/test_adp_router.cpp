// AdpRouter: explicit hints, strict-before-relaxed ordering, default least-loaded, KV-aware prefix
// affinity with a match-rate threshold, conversation-aware sticky binding with bounded LRU.
#include <map>

#include "check.h"
#include "sim/adp_router.h"

using namespace affinity::sim;

namespace {

AdpRouterConfig cfgOf(AdpRouterType t) {
  AdpRouterConfig c;
  c.type = t;
  return c;
}

RouteCandidate cand(int64_t id, int32_t tokens, int32_t hint = -1, bool relax = true, const std::string& key = "") {
  RouteCandidate c;
  c.requestId = id;
  c.inputTokens = tokens;
  c.rankHint = hint;
  c.relax = relax;
  c.affinityKey = key;
  return c;
}

const AdpRouter::Probe kNoProbe = [](size_t, int32_t) { return 0; };

std::vector<RankLoad> loadsOf(std::vector<std::pair<int64_t, int64_t>> reqTok) {
  std::vector<RankLoad> l;
  for (auto [r, t] : reqTok) l.push_back(RankLoad{r, t});
  return l;
}

/// Routes one candidate and returns its rank.
int32_t one(AdpRouter& router, const RouteCandidate& c, std::vector<RankLoad>& loads,
            const AdpRouter::Probe& probe = kNoProbe) {
  return router.route({c}, loads, probe)[0];
}

const AdpRouterType kAll[] = {AdpRouterType::kDefault, AdpRouterType::kKvAware, AdpRouterType::kConversation};

}  // namespace

TEST(hint_honoured_while_rank_has_capacity_for_every_router) {
  for (const auto type : kAll) {
    AdpRouter router(cfgOf(type), 4, 2);
    auto loads = loadsOf({{0, 0}, {0, 0}, {0, 0}, {1, 100}});
    CHECK_EQ(one(router, cand(1, 10, 3), loads), 3);  // active 1 < cap 2: honoured
    CHECK_EQ(loads[3].activeRequests, 2);
    CHECK_EQ(loads[3].activeTokens, 110);
    // Rank 3 is now at the cap: the next hint for it joins the pool and lands elsewhere.
    const int32_t r = one(router, cand(2, 10, 3), loads);
    CHECK(r >= 0 && r != 3);
    CHECK_EQ(loads[3].activeRequests, 2);
    // Strict (relax = false) does not override capacity either.
    const int32_t s = one(router, cand(3, 10, 3, false), loads);
    CHECK(s >= 0 && s != 3);
  }
}

TEST(strict_hints_placed_before_relaxed) {
  for (const auto type : kAll) {
    AdpRouter router(cfgOf(type), 2, 1);
    auto loads = loadsOf({{0, 0}, {0, 0}});
    // The relaxed request arrives first, but the strict one is placed first and wins rank 0.
    const auto out = router.route({cand(1, 10, 0, true), cand(2, 10, 0, false)}, loads, kNoProbe);
    CHECK_EQ(out[1], 0);
    CHECK_EQ(out[0], 1);
  }
  // Relaxed hints before unhinted requests.
  AdpRouter router(cfgOf(AdpRouterType::kDefault), 2, 1);
  auto loads = loadsOf({{0, 0}, {0, 0}});
  const auto out = router.route({cand(1, 5000), cand(2, 10, 1, true)}, loads, kNoProbe);
  CHECK_EQ(out[1], 1);
  CHECK_EQ(out[0], 0);
}

TEST(default_router_picks_least_loaded) {
  AdpRouter router(cfgOf(AdpRouterType::kDefault), 3, 100);
  // Fewest active tokens wins (then fewest requests).
  auto loads = loadsOf({{1, 300}, {1, 100}, {1, 50}});
  CHECK_EQ(one(router, cand(1, 10), loads), 2);
  loads = loadsOf({{2, 100}, {1, 100}, {3, 100}});
  CHECK_EQ(one(router, cand(1, 10), loads), 1);
  // A rank above the per-rank target is skipped even with fewer tokens:
  // target = min(max(ceil((5 + 1) / 3), max active 3), cap) = 3 -> rank 0 (3 active) is out.
  loads = loadsOf({{3, 0}, {1, 500}, {1, 400}});
  CHECK_EQ(one(router, cand(1, 10), loads), 2);
}

TEST(default_router_spreads_a_batch_evenly_longest_first) {
  AdpRouter router(cfgOf(AdpRouterType::kDefault), 2, 100);
  auto loads = loadsOf({{0, 0}, {0, 0}});
  const auto out = router.route({cand(1, 100), cand(2, 400), cand(3, 300), cand(4, 200)}, loads, kNoProbe);
  // Longest first onto the least-loaded rank: 400 -> r0, 300 -> r1, 200 -> r1, 100 -> r0.
  CHECK_EQ(out[1], 0);
  CHECK_EQ(out[2], 1);
  CHECK_EQ(out[3], 1);
  CHECK_EQ(out[0], 0);
  CHECK_EQ(loads[0].activeRequests, 2);
  CHECK_EQ(loads[1].activeRequests, 2);
  CHECK_EQ(loads[0].activeTokens, 500);
  CHECK_EQ(loads[1].activeTokens, 500);
}

TEST(pending_when_all_ranks_full) {
  for (const auto type : kAll) {
    AdpRouter router(cfgOf(type), 2, 2);
    auto loads = loadsOf({{1, 0}, {2, 0}});
    const auto out = router.route({cand(1, 10), cand(2, 10, 0), cand(3, 10, -1, true, "conv"), cand(4, 10)},
                                  loads, kNoProbe);
    // One slot left (rank 0): exactly one request placed there, the rest pending.
    int placed = 0;
    for (const int32_t r : out) {
      if (r >= 0) {
        CHECK_EQ(r, 0);
        ++placed;
      }
    }
    CHECK_EQ(placed, 1);
    CHECK_EQ(out[1], 0);  // the hinted one is placed first
    CHECK_EQ(loads[0].activeRequests, 2);
    auto full = loadsOf({{2, 0}, {2, 0}});
    for (const int32_t r : router.route({cand(5, 10), cand(6, 10, 1, false)}, full, kNoProbe)) CHECK_EQ(r, -1);
  }
}

TEST(kv_aware_prefers_prefix_holder_above_threshold) {
  AdpRouterConfig c = cfgOf(AdpRouterType::kKvAware);
  c.matchRateThreshold = 0.1;
  AdpRouter router(c, 2, 100);
  auto loads = loadsOf({{1, 0}, {1, 200}});
  // Rank 1 holds 500 of 1000 tokens: score r1 = 500 + 200 < r0 = 1000 + 0.
  auto probe = [](size_t, int32_t r) { return r == 1 ? 500 : 0; };
  CHECK_EQ(one(router, cand(1, 1000), loads, probe), 1);
  // The same request with no cached prefix anywhere goes to the lighter rank.
  loads = loadsOf({{1, 0}, {1, 200}});
  CHECK_EQ(one(router, cand(2, 1000), loads, kNoProbe), 0);
}

TEST(kv_aware_ignores_matches_below_threshold) {
  // Rank 1 holds 90 of 1000 tokens (9%). Counting it would win (910 + 50 < 1000); below the 10%
  // threshold the match is ignored and load decides (1000 + 50 > 1000).
  auto probe = [](size_t, int32_t r) { return r == 1 ? 90 : 0; };
  AdpRouterConfig c = cfgOf(AdpRouterType::kKvAware);
  c.matchRateThreshold = 0.1;
  AdpRouter below(c, 2, 100);
  auto loads = loadsOf({{1, 0}, {1, 50}});
  CHECK_EQ(one(below, cand(1, 1000), loads, probe), 0);
  c.matchRateThreshold = 0.05;
  AdpRouter above(c, 2, 100);
  loads = loadsOf({{1, 0}, {1, 50}});
  CHECK_EQ(one(above, cand(1, 1000), loads, probe), 1);
}

TEST(kv_aware_soft_cap_limits_pile_up_on_the_prefix_holder) {
  AdpRouterConfig c = cfgOf(AdpRouterType::kKvAware);
  AdpRouter router(c, 2, 100);
  // Every request matches fully on rank 0; the soft cap (2 x fair share) pushes some to rank 1.
  std::vector<RouteCandidate> cs;
  for (int i = 0; i < 8; ++i) cs.push_back(cand(i, 1000));
  auto probe = [](size_t, int32_t r) { return r == 0 ? 990 : 0; };
  auto loads = loadsOf({{0, 0}, {0, 0}});
  const auto out = router.route(cs, loads, probe);
  int onZero = 0;
  for (const int32_t r : out) onZero += r == 0 ? 1 : 0;
  CHECK(onZero >= 4);                    // affinity pulls to the holder
  CHECK(onZero <= 8);                    // soft cap = ceil(2 x 4) = 8
  CHECK_EQ(loads[0].activeRequests + loads[1].activeRequests, 8);
  // With a hard cap of 3, at most 3 go to rank 0 and the others still find a place.
  AdpRouter capped(c, 2, 3);
  auto l2 = loadsOf({{0, 0}, {0, 0}});
  const auto out2 = capped.route({cand(1, 1000), cand(2, 1000), cand(3, 1000), cand(4, 1000)}, l2, probe);
  int zero = 0, one_ = 0;
  for (const int32_t r : out2) (r == 0 ? zero : one_) += 1;
  CHECK_EQ(zero, 3);
  CHECK_EQ(one_, 1);
}

TEST(conversation_router_is_sticky_per_key) {
  AdpRouter router(cfgOf(AdpRouterType::kConversation), 4, 8);
  std::vector<RankLoad> loads(4);
  std::map<std::string, int32_t> first;
  for (const std::string key : {"a", "b", "c", "d"}) first[key] = one(router, cand(1, 10, -1, true, key), loads);
  // First turns spread round-robin over the ranks.
  CHECK_EQ(first["a"], 0);
  CHECK_EQ(first["b"], 1);
  CHECK_EQ(first["c"], 2);
  CHECK_EQ(first["d"], 3);
  for (int turn = 0; turn < 3; ++turn) {
    for (const std::string key : {"d", "b", "a", "c"}) {
      CHECK_EQ(one(router, cand(2, 10, -1, true, key), loads), first[key]);
      CHECK_EQ(router.boundRank(key), first[key]);
    }
  }
  CHECK_EQ(router.boundSessions(), 4u);
  CHECK_EQ(router.boundRank("zzz"), -1);
}

TEST(conversation_overflow_does_not_rebind) {
  AdpRouter router(cfgOf(AdpRouterType::kConversation), 2, 2);
  std::vector<RankLoad> loads(2);
  const int32_t bound = one(router, cand(1, 10, -1, true, "conv"), loads);
  CHECK_EQ(bound, 0);
  loads[0].activeRequests = 2;  // the bound rank is at the hard cap
  CHECK_EQ(one(router, cand(2, 10, -1, true, "conv"), loads), 1);  // overflow
  CHECK_EQ(router.boundRank("conv"), 0);                            // binding unchanged
  loads = std::vector<RankLoad>(2);
  loads[0].activeRequests = 1;  // rank 0 has room again, though busier than rank 1
  CHECK_EQ(one(router, cand(3, 10, -1, true, "conv"), loads), 0);   // the next turn returns
  // Sticky even when the bound rank is busier than others (below the hard cap).
  loads = loadsOf({{1, 5000}, {0, 0}});
  CHECK_EQ(one(router, cand(4, 10, -1, true, "conv"), loads), 0);
}

TEST(conversation_sessions_are_lru_bounded) {
  AdpRouterConfig c = cfgOf(AdpRouterType::kConversation);
  c.maxSessions = 2;
  AdpRouter router(c, 2, 100);
  std::vector<RankLoad> loads(2);
  one(router, cand(1, 10, -1, true, "a"), loads);
  one(router, cand(2, 10, -1, true, "b"), loads);
  one(router, cand(3, 10, -1, true, "a"), loads);  // refresh a: b is now the oldest
  one(router, cand(4, 10, -1, true, "c"), loads);
  CHECK_EQ(router.boundSessions(), 2u);
  CHECK(router.boundRank("a") >= 0);
  CHECK_EQ(router.boundRank("b"), -1);
  CHECK(router.boundRank("c") >= 0);
  one(router, cand(5, 10, -1, true, "d"), loads);
  CHECK_EQ(router.boundSessions(), 2u);
  CHECK_EQ(router.boundRank("a"), -1);
}

TEST(conversation_first_turn_hint_becomes_binding) {
  AdpRouter router(cfgOf(AdpRouterType::kConversation), 4, 8);
  std::vector<RankLoad> loads(4);
  CHECK_EQ(one(router, cand(1, 10, 2, true, "conv"), loads), 2);
  CHECK_EQ(router.boundRank("conv"), 2);
  // A later conflicting hint is honoured for that request but does not rebind.
  CHECK_EQ(one(router, cand(2, 10, 0, true, "conv"), loads), 0);
  CHECK_EQ(router.boundRank("conv"), 2);
  CHECK_EQ(one(router, cand(3, 10, -1, true, "conv"), loads), 2);
  // A first-turn hint to a full rank is not taken: the conversation binds where it lands.
  loads[3].activeRequests = 8;
  const int32_t r = one(router, cand(4, 10, 3, true, "other"), loads);
  CHECK(r >= 0 && r != 3);
  CHECK_EQ(router.boundRank("other"), r);
}

TEST(conversation_router_without_key_round_robins) {
  AdpRouter router(cfgOf(AdpRouterType::kConversation), 3, 8);
  std::vector<RankLoad> loads(3);
  std::vector<int32_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(one(router, cand(i, 10), loads));
  CHECK((got == std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  CHECK_EQ(router.boundSessions(), 0u);
}

TEST(conversation_first_turns_respect_soft_cap) {
  AdpRouterConfig c = cfgOf(AdpRouterType::kConversation);
  c.fairShareMultiplier = 1.0;
  AdpRouter router(c, 2, 100);
  // Rank 0 already holds 4 requests; fair share = ceil((4 + 1) / 2) = 3, so rank 0 (4) is over
  // the soft cap and the new conversation goes to rank 1 even though round-robin starts at 0.
  auto loads = loadsOf({{4, 0}, {0, 0}});
  CHECK_EQ(one(router, cand(1, 10, -1, true, "new"), loads), 1);
  CHECK_EQ(router.boundRank("new"), 1);
}
