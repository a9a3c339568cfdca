// The "sim" executor through the facade (affinity::createExecutor): tokens, limits, batching,
// chunked prefill, prefix reuse, rank hints, priorities, cancellation, errors, shutdown, the
// virtual clock, KV events, reuse policies, object accounting and concurrency.
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <tuple>
#include <set>
#include <stdexcept>
#include <thread>

#include "check.h"
#include "sim/hash.h"
#include "sim_util.h"

using namespace affinity;
using namespace testutil;

namespace {

constexpr int32_t kTpb = 8;

/// A virtual-clock config with tokens_per_block 8 plus extra top-level members.
std::string cfg(const std::string& extra = "") {
  return std::string(R"({"clock":{"mode":"virtual"},"tokens_per_block":8)") + (extra.empty() ? "" : "," + extra) + "}";
}

std::vector<uint64_t> routerChain(const std::vector<int32_t>& prompt, std::optional<uint64_t> salt = std::nullopt) {
  return sim::v1BlockHashChain(prompt, kTpb, salt, false);
}

std::vector<uint64_t> reversed(std::vector<uint64_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

std::vector<Response> concat_(std::vector<Response> a, const std::vector<Response>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Runs one request alone on a fresh executor and returns its final response.
Response runOne(const std::string& config, const RequestSpec& s) {
  auto e = make(config);
  const int64_t id = e->enqueue(s);
  return finalOf(runAll(*e), id);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tokens and stop conditions

TEST(tokens_are_deterministic_per_seed_and_client_id) {
  RequestSpec a = spec(seqTokens(1, 20), 16, 7);
  a.setSeed(42);
  const Response ra = runOne(cfg(), a);
  CHECK_EQ(ra.tokens.size(), 16u);
  // Same seed and client id on another executor, with another prompt: the same tokens.
  RequestSpec b = spec(seqTokens(500, 33), 16, 7);
  b.setSeed(42);
  CHECK(runOne(cfg(R"("num_ranks":2)"), b).tokens == ra.tokens);
  // Another seed, or another client id: different tokens.
  RequestSpec c = a;
  c.setSeed(43);
  CHECK(runOne(cfg(), c).tokens != ra.tokens);
  RequestSpec d = a;
  d.setClientRequestId(8);
  CHECK(runOne(cfg(), d).tokens != ra.tokens);
  for (const int32_t t : ra.tokens) CHECK(t >= 0 && t < 32000);
}

TEST(max_new_tokens_honoured) {
  for (const int32_t n : {1, 2, 17}) {
    const Response r = runOne(cfg(), spec(seqTokens(1, 20), n, 3));
    CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
    CHECK(r.isFinal);
    CHECK_EQ(static_cast<int32_t>(r.tokens.size()), n);
    CHECK_EQ(r.metrics.outputTokens, n);
    CHECK_EQ(r.metrics.promptTokens, 20);
    CHECK(r.errorMessage.empty());
  }
}

TEST(vocab_size_bounds_tokens) {
  const Response r = runOne(cfg(R"("vocab_size":5)"), spec(seqTokens(1, 10), 64, 1));
  for (const int32_t t : r.tokens) CHECK(t >= 0 && t < 5);
  std::set<int32_t> distinct(r.tokens.begin(), r.tokens.end());
  CHECK(distinct.size() > 1);
}

TEST(end_id_and_stop_ids_honoured) {
  const std::string c = cfg(R"("vocab_size":8)");
  RequestSpec free = spec(seqTokens(1, 10), 64, 11);
  free.setSeed(5);
  const std::vector<int32_t> all = runOne(c, free).tokens;
  CHECK_EQ(all.size(), 64u);
  // The first position j > 0 whose token did not occur before: ending on it stops right there.
  size_t j = 1;
  while (j < all.size() && std::find(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(j), all[j]) !=
                               all.begin() + static_cast<std::ptrdiff_t>(j)) {
    ++j;
  }
  CHECK(j < all.size());
  const std::vector<int32_t> prefix(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(j));

  RequestSpec withEnd = free;
  withEnd.setEndId(all[j]);
  Response r = runOne(c, withEnd);
  CHECK_EQ(r.finishReason, fin(FinishReason::kEndId));
  CHECK(r.tokens == prefix);  // the end id itself is not returned
  CHECK_EQ(r.metrics.outputTokens, static_cast<int32_t>(j));

  RequestSpec withStop = free;
  const int32_t stops[] = {999, all[j]};
  withStop.setStopTokenIds(stops, 2);
  r = runOne(c, withStop);
  CHECK_EQ(r.finishReason, fin(FinishReason::kStop));
  CHECK(r.tokens == prefix);

  // End id on the very first token: finishes at the end of prefill with no output.
  RequestSpec first = free;
  first.setEndId(all[0]);
  r = runOne(c, first);
  CHECK_EQ(r.finishReason, fin(FinishReason::kEndId));
  CHECK(r.tokens.empty());
  CHECK(r.metrics.firstTokenUs > 0);
}

TEST(streaming_emits_one_response_per_token) {
  auto e = make(cfg());
  RequestSpec s = spec(seqTokens(1, 20), 5, 9);
  const int64_t plain = e->enqueue(s);
  s.setStreaming(true);
  const int64_t streamed = e->enqueue(s);
  const auto rs = runAll(*e);
  std::vector<Response> mine;
  for (const auto& r : rs) {
    if (r.requestId == streamed) mine.push_back(r);
  }
  CHECK_EQ(mine.size(), 5u);
  for (size_t i = 0; i < mine.size(); ++i) {
    CHECK_EQ(mine[i].tokens.size(), 1u);
    CHECK_EQ(mine[i].isFinal, i + 1 == mine.size());
    CHECK_EQ(mine[i].finishReason, i + 1 == mine.size() ? fin(FinishReason::kLength) : fin(FinishReason::kNotFinished));
    CHECK_EQ(mine[i].metrics.outputTokens, static_cast<int32_t>(i + 1));
    CHECK_EQ(mine[i].clientRequestId, 9);
  }
  CHECK(outputOf(rs, streamed) == finalOf(rs, plain).tokens);  // same seed and client id
  int plainCount = 0;
  for (const auto& r : rs) plainCount += r.requestId == plain ? 1 : 0;
  CHECK_EQ(plainCount, 1);
}

TEST(streaming_with_end_id_sends_an_empty_final) {
  const std::string c = cfg(R"("vocab_size":8)");
  RequestSpec s = spec(seqTokens(1, 10), 64, 11);
  s.setSeed(5);
  const std::vector<int32_t> all = runOne(c, s).tokens;
  size_t j = 1;
  while (std::find(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(j), all[j]) != all.begin() + static_cast<std::ptrdiff_t>(j)) ++j;
  s.setEndId(all[j]);
  s.setStreaming(true);
  auto e = make(c);
  const int64_t id = e->enqueue(s);
  const auto rs = runAll(*e);
  CHECK_EQ(rs.size(), j + 1);
  CHECK(rs.back().isFinal);
  CHECK(rs.back().tokens.empty());
  CHECK_EQ(rs.back().finishReason, fin(FinishReason::kEndId));
  CHECK(outputOf(rs, id) == std::vector<int32_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(j)));
}

// ---------------------------------------------------------------------------------------------
// Batching

TEST(max_batch_size_caps_running_requests) {
  auto e = make(cfg(R"("max_batch_size":2,"max_num_active_requests":8)"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(e->enqueue(spec(seqTokens(100 * i, 10), 4, i)));
  int32_t maxRunning = 0;
  bool sawQueue = false;
  for (int64_t t; (t = e->nextIterationEndUs()) >= 0;) {
    IterationStats st;
    e->getIterationStats(st);
    CHECK(st.lastContextRequests + st.lastGenerationRequests <= 2);
    const KvCacheStats k = kvStats(*e);
    const int64_t running = k.activeRequests - k.queuedRequests;
    CHECK(running <= 2);
    maxRunning = std::max<int32_t>(maxRunning, static_cast<int32_t>(running));
    if (k.queuedRequests == 3) sawQueue = true;
    e->advanceTo(t);
  }
  CHECK_EQ(maxRunning, 2);
  CHECK(sawQueue);
  const auto f = finals(take(*e));
  CHECK_EQ(f.size(), 5u);
  // The last three start only after one of the first two finished.
  const int64_t firstDone = std::min(f.at(ids[0]).metrics.finishUs, f.at(ids[1]).metrics.finishUs);
  for (size_t i = 2; i < 5; ++i) CHECK(f.at(ids[i]).metrics.scheduledUs >= firstDone);
  for (const auto& [id, r] : f) CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
}

TEST(max_num_active_requests_leaves_requests_pending) {
  auto e = make(cfg(R"("max_batch_size":2)"));  // max_num_active_requests defaults to 2
  for (int i = 0; i < 5; ++i) e->enqueue(spec(seqTokens(100 * i, 10), 4, i));
  e->nextIterationEndUs();
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.pendingRequests, 3);
  CHECK_EQ(st.activeRequests, 5);
  CHECK_EQ(kvStats(*e).activeRequests, 2);
  CHECK_EQ(kvStats(*e).queuedRequests, 0);
  CHECK_EQ(finals(runAll(*e)).size(), 5u);
}

TEST(max_num_tokens_caps_tokens_per_iteration) {
  auto e = make(cfg(R"("max_num_tokens":100)"));
  for (int i = 0; i < 3; ++i) e->enqueue(spec(seqTokens(1000 * i, 60), 3, i));
  std::vector<int64_t> ctx;
  for (int64_t t; (t = e->nextIterationEndUs()) >= 0;) {
    IterationStats st;
    e->getIterationStats(st);
    CHECK(st.lastContextTokens + st.lastGenerationRequests <= 100);
    ctx.push_back(st.lastContextTokens);
    e->advanceTo(t);
  }
  // 60 + 40 (chunk), then 20 + 60 (+ a decode), then ...
  CHECK_EQ(ctx[0], 100);
  int64_t total = 0;
  for (const int64_t c : ctx) total += c;
  CHECK_EQ(total, 180);
  CHECK_EQ(finals(take(*e)).size(), 3u);
}

TEST(chunked_prefill_spans_iterations) {
  auto e = make(cfg(R"("max_num_tokens":100)"));
  const int64_t id = e->enqueue(spec(seqTokens(1, 250), 1));
  std::vector<int64_t> ctx;
  for (int64_t t; (t = e->nextIterationEndUs()) >= 0;) {
    IterationStats st;
    e->getIterationStats(st);
    ctx.push_back(st.lastContextTokens);
    e->advanceTo(t);
  }
  CHECK((ctx == std::vector<int64_t>{100, 100, 50}));
  const Response r = finalOf(take(*e), id);
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.iterations, 3);
  CHECK_EQ(r.metrics.firstTokenUs, st.busyUs);
}

TEST(a_rank_counts_the_prompt_tokens_it_computed_as_iterations_end) {
  auto e = make(cfg(R"("max_num_tokens":100)"));
  auto computed = [&] {
    KvCacheStats ks;
    e->getKvCacheStats(0, ks);
    return ks.contextTokensComputed;
  };
  const auto p = seqTokens(1, 250);
  const int64_t id = e->enqueue(spec(p, 1));
  std::vector<int64_t> seen;
  for (int64_t t; (t = e->nextIterationEndUs()) >= 0;) {
    seen.push_back(computed());  // the running iteration's chunk is not counted before it ends
    e->advanceTo(t);
  }
  CHECK((seen == std::vector<int64_t>{0, 100, 200}));
  CHECK_EQ(computed(), 250);
  finalOf(take(*e), id);
  // A request that reuses 248 cached tokens (31 blocks) computes only the 12 after them.
  const int64_t again = e->enqueue(spec(concat(p, seqTokens(900, 10)), 1));
  CHECK_EQ(finalOf(runAll(*e), again).metrics.reusedTokens, 248);
  CHECK_EQ(computed(), 262);
}

TEST(prompt_over_max_num_tokens_without_chunking_is_an_error) {
  const std::string c = cfg(R"("max_num_tokens":100,"enable_chunked_prefill":false)");
  Response r = runOne(c, spec(seqTokens(1, 101), 1));
  CHECK_EQ(r.finishReason, fin(FinishReason::kError));
  CHECK_EQ(r.errorKind, kind(ErrorKind::kCapacity));
  CHECK(contains(r.errorMessage, "max_num_tokens"));
  CHECK(contains(r.errorMessage, "chunked"));
  r = runOne(c, spec(seqTokens(1, 100), 1));  // exactly the budget: fine, one iteration
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(r.errorKind, kind(ErrorKind::kNone));
}

TEST(unchunked_prompts_wait_for_a_whole_budget) {
  auto e = make(cfg(R"("max_num_tokens":100,"enable_chunked_prefill":false)"));
  for (int i = 0; i < 3; ++i) e->enqueue(spec(seqTokens(1000 * i, 60), 1, i));
  std::vector<int64_t> ctx;
  for (int64_t t; (t = e->nextIterationEndUs()) >= 0;) {
    IterationStats st;
    e->getIterationStats(st);
    ctx.push_back(st.lastContextTokens);
    e->advanceTo(t);
  }
  CHECK((ctx == std::vector<int64_t>{60, 60, 60}));
}

// ---------------------------------------------------------------------------------------------
// Prefix reuse

TEST(prefix_reuse_counts_full_blocks_excluding_last_token) {
  auto e = make(cfg());
  const auto p = seqTokens(1, 40);  // 5 full blocks
  auto runReq = [&](const std::vector<int32_t>& prompt) {
    const int64_t id = e->enqueue(spec(prompt, 1));
    return finalOf(runAll(*e), id);
  };
  CHECK_EQ(runReq(p).metrics.reusedTokens, 0);
  // p + 3 tokens: all 5 blocks of p match and the last token is outside them.
  Response r = runReq(concat(p, {7, 8, 9}));
  CHECK_EQ(r.metrics.reusedTokens, 40);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.lastContextTokens, 3);  // only the uncached tokens are computed
  // p again: the last token must be computed, so the 5th block cannot be reused.
  CHECK_EQ(runReq(p).metrics.reusedTokens, 32);
  // A prefix diverging inside the 3rd block reuses the first 2.
  auto q = seqTokens(1, 20);
  q = concat(q, seqTokens(9000, 20));
  CHECK_EQ(runReq(q).metrics.reusedTokens, 16);
  // Nothing in common.
  CHECK_EQ(runReq(seqTokens(5000, 40)).metrics.reusedTokens, 0);
  e->getIterationStats(st);
  CHECK_EQ(st.totalReusedTokens, 40 + 32 + 16);
  CHECK_EQ(st.completedRequests, 5);
  const KvCacheStats k = kvStats(*e);
  CHECK_EQ(k.reusedBlocks, (40 + 32 + 16) / kTpb);
  CHECK(k.cacheHitRate > 0 && k.cacheHitRate < 1);
}

TEST(cache_salt_separates_prefixes) {
  auto e = make(cfg());
  const auto p = seqTokens(1, 41);
  auto runReq = [&](const char* salt) {
    RequestSpec s = spec(p, 1);
    if (salt != nullptr) s.setCacheSalt(salt, static_cast<int32_t>(std::strlen(salt)));
    const int64_t id = e->enqueue(s);
    return finalOf(runAll(*e), id).metrics.reusedTokens;
  };
  CHECK_EQ(runReq(nullptr), 0);
  CHECK_EQ(runReq("alice"), 0);
  CHECK_EQ(runReq("bob"), 0);
  CHECK_EQ(runReq(""), 0);  // an empty salt is a salt
  CHECK_EQ(runReq("alice"), 40);
  CHECK_EQ(runReq(nullptr), 40);
  CHECK_EQ(runReq(""), 40);
}

TEST(block_reuse_disabled_never_reuses) {
  auto e = make(cfg(R"("block_reuse":{"enabled":false})"));
  const auto p = seqTokens(1, 41);
  for (int i = 0; i < 2; ++i) {
    const int64_t id = e->enqueue(spec(p, 1));
    CHECK_EQ(finalOf(runAll(*e), id).metrics.reusedTokens, 0);
  }
  CHECK(ofType(events(*e), KvEventType::kStored).empty());
}

// ---------------------------------------------------------------------------------------------
// Ranks

TEST(rank_hint_honoured_and_reported) {
  auto e = make(cfg(R"("num_ranks":3)"));
  std::map<int64_t, int32_t> want;
  for (int32_t r : {2, 0, 1, 2}) {
    RequestSpec s = spec(seqTokens(100 * r, 20), 2);
    s.setAdpRankHint(r, true);
    want[e->enqueue(s)] = r;
  }
  const auto f = finals(runAll(*e));
  for (const auto& [id, rank] : want) CHECK_EQ(f.at(id).metrics.rank, rank);
  for (int32_t r = 0; r < 3; ++r) CHECK(kvStats(*e, r).allocTotalBlocks > 0);
}

TEST(hint_to_a_full_rank_overflows_and_metrics_tell_the_truth) {
  auto e = make(cfg(R"("num_ranks":2,"max_batch_size":1)"));
  RequestSpec a = spec(seqTokens(1, 20), 4, 1), b = spec(seqTokens(100, 20), 4, 2);
  a.setAdpRankHint(1, true);
  b.setAdpRankHint(1, false);  // strict: first in line, but not a guarantee
  RequestSpec c = spec(seqTokens(200, 20), 4, 3);
  c.setAdpRankHint(1, true);
  const int64_t ia = e->enqueue(a), ib = e->enqueue(b), ic = e->enqueue(c);
  e->nextIterationEndUs();
  CHECK_EQ(kvStats(*e, 1).activeRequests, 1);
  CHECK_EQ(kvStats(*e, 0).activeRequests, 1);
  const auto f = finals(runAll(*e));
  // The strict one is placed first and takes rank 1; the relaxed first arrival overflows to 0.
  CHECK_EQ(f.at(ib).metrics.rank, 1);
  CHECK_EQ(f.at(ia).metrics.rank, 0);
  // The third waited (both ranks full) and then got its hinted rank.
  CHECK_EQ(f.at(ic).metrics.rank, 1);
  CHECK(f.at(ic).metrics.scheduledUs > 0);
  CHECK(kvStats(*e, 0).allocTotalBlocks > 0);
}

TEST(default_router_balances_ranks) {
  auto e = make(cfg(R"("num_ranks":4)"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(e->enqueue(spec(seqTokens(100 * i, 20), 2)));
  const auto f = finals(runAll(*e));
  std::map<int32_t, int> perRank;
  for (const auto& [id, r] : f) ++perRank[r.metrics.rank];
  CHECK_EQ(perRank.size(), 4u);
  for (const auto& [rank, n] : perRank) CHECK_EQ(n, 2);
}

TEST(kv_aware_router_follows_the_prefix) {
  auto e = make(cfg(R"("num_ranks":4,"adp_router":{"type":"kv_aware"})"));
  const auto p = seqTokens(1, 200);
  RequestSpec first = spec(p, 1);
  first.setAdpRankHint(2, false);
  const int64_t i1 = e->enqueue(first);
  runAll(*e);
  (void)i1;
  for (int i = 0; i < 3; ++i) {
    const int64_t id = e->enqueue(spec(concat(p, seqTokens(7000 + 100 * i, 20)), 1));
    const Response r = finalOf(runAll(*e), id);
    CHECK_EQ(r.metrics.rank, 2);
    CHECK_EQ(r.metrics.reusedTokens, 200);
  }
}

TEST(conversation_router_keeps_turns_on_one_rank) {
  auto e = make(cfg(R"("num_ranks":4,"adp_router":{"type":"conversation"})"));
  std::map<std::string, int32_t> rankOf;
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<std::pair<std::string, int64_t>> ids;
    for (const std::string conv : {"a", "b", "c", "d", "e"}) {
      RequestSpec s = spec(seqTokens(1000 * turn, 20), 2);
      setConv(s, conv);
      ids.push_back({conv, e->enqueue(s)});
    }
    const auto f = finals(runAll(*e));
    for (const auto& [conv, id] : ids) {
      const int32_t r = f.at(id).metrics.rank;
      if (turn == 0) {
        rankOf[conv] = r;
      } else {
        CHECK_EQ(r, rankOf[conv]);
      }
    }
  }
  std::set<int32_t> used;
  for (const auto& [c, r] : rankOf) used.insert(r);
  CHECK_EQ(used.size(), 4u);  // first turns spread over every rank
}

// ---------------------------------------------------------------------------------------------
// Order, cancellation, errors

/// Five requests of priorities 0.5, 0.9, 0.5, 0.9, 0.1 on one rank with one batch slot: the order they finish in.
std::vector<int64_t> finishOrder(const std::string& json, std::vector<int64_t>& ids) {
  auto e = make(cfg(json));
  const float prio[] = {0.5f, 0.9f, 0.5f, 0.9f, 0.1f};
  for (int i = 0; i < 5; ++i) {
    RequestSpec s = spec(seqTokens(100 * i, 20), 2, i);
    s.setPriority(prio[i]);
    ids.push_back(e->enqueue(s));
  }
  std::vector<int64_t> order;
  for (const auto& r : runAll(*e)) {
    if (r.isFinal) order.push_back(r.requestId);
  }
  return order;
}

TEST(the_waiting_queue_is_first_come_first_served_by_default) {
  // TensorRT-LLM's default waiting_queue_policy (fcfs) ignores priority
  std::vector<int64_t> ids;
  const auto order = finishOrder(R"("max_batch_size":1,"max_num_active_requests":8)", ids);
  CHECK((order == ids));
}

TEST(the_priority_policy_orders_the_waiting_queue_then_fcfs) {
  std::vector<int64_t> ids;
  const auto order = finishOrder(
      R"("max_batch_size":1,"max_num_active_requests":8,"scheduler_config":{"waiting_queue_policy":"priority"})", ids);
  CHECK((order == std::vector<int64_t>{ids[1], ids[3], ids[0], ids[2], ids[4]}));
}

TEST(the_priority_policy_orders_requests_waiting_for_a_rank_too) {
  // one request in flight per rank: the rest wait in the executor's queue before attention-DP routing takes them to
  // a rank (TensorRT-LLM's waiting queue is ahead of its ADP router), in priority order
  std::vector<int64_t> ids;
  const auto order = finishOrder(
      R"("max_batch_size":1,"max_num_active_requests":1,"scheduler_config":{"waiting_queue_policy":"priority"})", ids);
  CHECK((order == std::vector<int64_t>{ids[1], ids[3], ids[0], ids[2], ids[4]}));
  std::vector<int64_t> fcfsIds;
  CHECK((finishOrder(R"("max_batch_size":1,"max_num_active_requests":1)", fcfsIds) == fcfsIds));
}

TEST(running_requests_are_chunked_first_come_first_served_whatever_their_priority) {
  // A long low-priority prompt is mid-prefill when a high-priority one arrives: both are active (a batch slot
  // each), and TensorRT-LLM's schedulers walk the active list in order, so the low one's chunks come first.
  auto e = make(cfg(R"("max_num_tokens":100,"scheduler_config":{"waiting_queue_policy":"priority"})"));
  RequestSpec low = spec(seqTokens(1, 300), 2, 1);
  low.setPriority(0.1f);
  const int64_t il = e->enqueue(low);
  CHECK(step(*e));  // iteration 1 (low: 100); advanceTo starts iteration 2 (low) at its end
  RequestSpec high = spec(seqTokens(5000, 60), 2, 2);
  high.setPriority(0.9f);
  const int64_t ih = e->enqueue(high);
  CHECK(step(*e));  // iteration 2 (low: 100 more); iteration 3 is planned with both
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.lastContextRequests, 1);  // low's last 100 tokens take the whole budget
  CHECK_EQ(st.lastContextTokens, 100);
  const auto rs = runAll(*e);
  CHECK(finalOf(rs, il).metrics.firstTokenUs < finalOf(rs, ih).metrics.firstTokenUs);
}

TEST(a_priority_outside_the_unit_interval_is_a_bad_request) {
  auto e = make(cfg());
  RequestSpec s = spec(seqTokens(1, 20), 2, 1);
  s.setPriority(1.5f);
  const int64_t id = e->enqueue(s);
  const Response r = finalOf(runAll(*e), id);
  CHECK_EQ(r.errorKind, kind(ErrorKind::kBadRequest));
  CHECK(contains(r.errorMessage, "priority must be in [0, 1]"));
}

TEST(retention_configs_upstream_refuses_are_bad_requests) {
  auto e = make(cfg());
  struct Case {
    std::vector<RequestSpec::RetentionRange> ranges;
    int32_t decodePriority;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{{0, 10, 101, kNone}}, 35, "is outside [0, 100]"},
      {{{-1, 10, 50, kNone}}, 35, "is negative"},
      {{{5, 5, 50, kNone}}, 35, "positive, non-zero length"},
      {{{0, kNone, 50, kNone}, {20, 30, 50, kNone}}, 35, "only the last token range may be open-ended"},
      {{{0, 20, 50, kNone}, {10, 30, 50, kNone}}, 35, "overlap"},
      {{{0, 20, 50, -5}}, 35, "duration_ms -5 is negative"},
      {{}, 120, "decode_retention_priority 120"},
  };
  std::vector<std::pair<int64_t, const char*>> sent;
  for (const Case& c : cases) {
    RequestSpec s = spec(seqTokens(1, 40), 2, 1);
    for (const auto& r : c.ranges) s.addRetentionRange(r.tokenStart, r.tokenEnd, r.priority, r.durationMs);
    s.setDecodeRetention(c.decodePriority, kNone);
    sent.emplace_back(e->enqueue(s), c.message);
  }
  RequestSpec ok = spec(seqTokens(1, 40), 2, 1);  // touching ranges, unsorted: fine
  ok.addRetentionRange(20, kNone, 60, 1000);
  ok.addRetentionRange(0, 20, 40, kNone);
  const int64_t okId = e->enqueue(ok);
  const auto rs = runAll(*e);
  for (const auto& [id, message] : sent) {
    const Response r = finalOf(rs, id);
    CHECK_EQ(r.errorKind, kind(ErrorKind::kBadRequest));
    CHECK(contains(r.errorMessage, message));
  }
  CHECK_EQ(finalOf(rs, okId).errorKind, kind(ErrorKind::kNone));
}

TEST(a_retained_prompt_outlives_newer_ones_until_its_duration_ends) {
  // one rank of 12 blocks of 8 tokens; each 32-token prompt takes 5 blocks (4 stay cached). The first, retained at
  // priority 80 for 50 ms from its release, survives five newer prompts although it is the oldest; 50 ms after its
  // last release it is an ordinary block again and LRU evicts it.
  auto e = make(cfg(R"("kv_blocks_per_rank":12)"));
  auto run = [&](int32_t base, int64_t atUs, bool retained) {
    e->advanceTo(std::max(e->nowUs(), atUs));
    RequestSpec s = spec(seqTokens(base, 32), 1, base);
    if (retained) s.addRetentionRange(0, kNone, 80, 50);
    const int64_t id = e->enqueue(s);
    return finalOf(runAll(*e), id);
  };
  run(0, 0, true);
  for (int i = 1; i <= 5; ++i) run(1000 * i, 1'000 * i, false);
  CHECK(kvStats(*e).evictedBlocks > 0);
  const Response again = run(0, 10'000, true);  // reused whole (all full blocks but the last token's)
  CHECK_EQ(again.metrics.reusedTokens, 24);
  for (int i = 1; i <= 3; ++i) run(10'000 + 1000 * i, 200'000 + 1'000 * i, false);
  const Response late = run(0, 300'000, false);
  CHECK_EQ(late.metrics.reusedTokens, 0);
  // without the retention the first prompt is gone after the same five newer ones
  auto plain = make(cfg(R"("kv_blocks_per_rank":12)"));
  auto runPlain = [&](int32_t base) {
    const int64_t id = plain->enqueue(spec(seqTokens(base, 32), 1, base));
    return finalOf(runAll(*plain), id);
  };
  runPlain(0);
  for (int i = 1; i <= 5; ++i) runPlain(1000 * i);
  CHECK_EQ(runPlain(0).metrics.reusedTokens, 0);
}

TEST(cancel_frees_kv_and_ends_with_cancelled) {
  auto e = make(cfg());
  RequestSpec s = spec(seqTokens(1, 40), 100, 5);
  s.setStreaming(true);
  const int64_t id = e->enqueue(s);
  const int64_t other = e->enqueue(spec(seqTokens(500, 40), 6));
  for (int i = 0; i < 3; ++i) CHECK(step(*e));
  CHECK(kvStats(*e).usedNumBlocks > 0);
  auto before = take(*e);
  CHECK(!before.empty());
  e->cancel(id);
  const auto rs = take(*e);
  CHECK_EQ(rs.size(), 1u);
  CHECK_EQ(rs[0].requestId, id);
  CHECK(rs[0].isFinal);
  CHECK_EQ(rs[0].finishReason, fin(FinishReason::kCancelled));
  CHECK_EQ(rs[0].errorKind, kind(ErrorKind::kCancelled));
  CHECK(rs[0].tokens.empty());  // everything generated so far was already streamed
  CHECK_EQ(rs[0].metrics.outputTokens, static_cast<int32_t>(outputOf(before, id).size()));
  const auto rest = runAll(*e);
  for (const auto& r : rest) CHECK(r.requestId != id);  // nothing after the final
  CHECK_EQ(finalOf(concat_(before, rest), other).finishReason, fin(FinishReason::kLength));
  CHECK_EQ(kvStats(*e).usedNumBlocks, 0);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.activeRequests, 0);
  // Unknown ids and repeated cancels are no-ops.
  e->cancel(id);
  e->cancel(987654);
  e->cancel(-1);
  CHECK(take(*e).empty());
}

TEST(cancel_before_scheduling_and_during_an_iteration) {
  auto e = make(cfg());
  const int64_t a = e->enqueue(spec(seqTokens(1, 40), 5));
  e->cancel(a);  // still pending
  auto rs = take(*e);
  CHECK_EQ(rs.size(), 1u);
  CHECK_EQ(rs[0].finishReason, fin(FinishReason::kCancelled));
  CHECK_EQ(rs[0].metrics.rank, -1);
  CHECK_EQ(e->nextIterationEndUs(), -1);

  const int64_t b = e->enqueue(spec(seqTokens(1, 40), 5));
  const int64_t c = e->enqueue(spec(seqTokens(900, 40), 5));
  const int64_t t = e->nextIterationEndUs();  // the iteration plans both
  CHECK(t > 0);
  e->cancel(b);  // cancelled while its prefill is in flight
  e->advanceTo(t);
  rs = runAll(*e);
  CHECK_EQ(finals(rs).size(), 2u);
  CHECK_EQ(finalOf(rs, b).finishReason, fin(FinishReason::kCancelled));
  CHECK_EQ(finalOf(rs, c).finishReason, fin(FinishReason::kLength));
  CHECK_EQ(finalOf(rs, c).tokens.size(), 5u);
  CHECK_EQ(kvStats(*e).usedNumBlocks, 0);
}

TEST(bad_inputs_are_error_responses) {
  auto e = make(cfg(R"("num_ranks":2,"kv_blocks_per_rank":16)"));  // 128 tokens per rank
  struct Case {
    RequestSpec spec;
    std::string want;
    ErrorKind kind;
  };
  const ErrorKind bad = ErrorKind::kBadRequest, capacity = ErrorKind::kCapacity;
  std::vector<Case> cases;
  {
    RequestSpec s = spec({}, 4, 1);
    cases.push_back({s, "input_token_ids is empty", bad});
  }
  cases.push_back({spec(seqTokens(1, 10), 0, 2), "max_new_tokens must be > 0, got 0", bad});
  cases.push_back({spec(seqTokens(1, 10), -3, 3), "max_new_tokens must be > 0, got -3", bad});
  {
    RequestSpec s = spec({1, 2, -7, 4}, 4, 4);
    cases.push_back({s, "token id -7 at position 2 is negative", bad});
  }
  {
    RequestSpec s = spec(seqTokens(1, 10), 4, 5);
    s.setAdpRankHint(2, true);
    cases.push_back({s, "attention_dp_rank 2 is out of range [0, 2)", bad});
  }
  {
    RequestSpec s = spec(seqTokens(1, 10), 4, 6);
    s.setAdpRankHint(-5, true);
    cases.push_back({s, "attention_dp_rank -5", bad});
  }
  {
    RequestSpec s = spec(seqTokens(1, 10), 4, 7);
    s.setRequestType(2);
    cases.push_back({s, "generation_only request without context phase params", bad});
  }
  {
    RequestSpec s = spec(seqTokens(1, 10), 4, 8);
    s.setRequestType(9);
    cases.push_back({s, "request_type 9", bad});
  }
  cases.push_back({spec(seqTokens(1, 200), 1, 9), "KV blocks but a rank holds only 16", capacity});
  cases.push_back({spec(seqTokens(1, 100), 100, 10), "KV blocks", capacity});  // prompt fits, output does not
  cases.push_back({spec(seqTokens(1, 10), INT32_MAX, 12), "needs 268435458 KV blocks", capacity});  // no int32 overflow
  {
    RequestSpec s = spec(seqTokens(1, 10), 4, 11);
    s.setRequestType(2);
    const int32_t first = 3;
    s.setContextPhase(5, 0, &first, 1, "garbage", 7);
    cases.push_back({s, "not recognised", ErrorKind::kContextNotFound});
  }
  std::vector<int64_t> ids;
  for (const auto& c : cases) ids.push_back(e->enqueue(c.spec));
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i] > ids[i - 1]);
  CHECK(ids[0] > 0);
  const auto rs = take(*e);  // errors are immediate: no iteration needed
  CHECK_EQ(rs.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Response r = finalOf(rs, ids[i]);
    CHECK_EQ(r.finishReason, fin(FinishReason::kError));
    CHECK_EQ(r.clientRequestId, cases[i].spec.clientRequestId);
    if (!contains(r.errorMessage, cases[i].want)) {
      throw check::Failure("case " + std::to_string(i) + ": '" + r.errorMessage + "' lacks '" + cases[i].want + "'");
    }
    if (r.errorKind != kind(cases[i].kind)) {
      throw check::Failure("case " + std::to_string(i) + ": error kind " + std::to_string(r.errorKind) + ", expected " +
                           std::to_string(kind(cases[i].kind)));
    }
    CHECK(r.tokens.empty());
  }
  CHECK_EQ(e->nextIterationEndUs(), -1);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.activeRequests, 0);
  CHECK_EQ(kvStats(*e, 0).usedNumBlocks + kvStats(*e, 1).usedNumBlocks, 0);
  // The executor still works.
  const int64_t ok = e->enqueue(spec(seqTokens(1, 10), 4));
  const Response okResponse = finalOf(runAll(*e), ok);
  CHECK_EQ(okResponse.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(okResponse.errorKind, kind(ErrorKind::kNone));
  CHECK_THROWS(e->getKvCacheStats(2, *std::make_unique<KvCacheStats>()), "rank 2 is out of range");
}

TEST(huge_max_new_tokens_with_one_token_blocks_is_an_error_not_a_crash) {
  auto e = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":1,"kv_blocks_per_rank":1000})");
  const int64_t id = e->enqueue(spec(seqTokens(1, 10), INT32_MAX));
  CHECK_EQ(e->nextIterationEndUs(), -1);
  const Response r = finalOf(take(*e), id);
  CHECK_EQ(r.finishReason, fin(FinishReason::kError));
  CHECK(contains(r.errorMessage, "needs 2147483657 KV blocks"));
}

TEST(await_and_drain_respect_their_limits) {
  auto e = make(cfg(R"("num_ranks":3)"));
  for (int i = 0; i < 5; ++i) e->enqueue(spec({}, 1, i));  // five immediate error responses
  ResponseBatch b;
  CHECK_EQ(e->awaitResponses(b, 2, 0), 2);
  CHECK_EQ(b.size(), 2);
  CHECK_EQ(b.responses[0].clientRequestId, 0);  // in emission order
  CHECK_EQ(b.responses[1].clientRequestId, 1);
  CHECK_EQ(e->awaitResponses(b, 0, 0), 0);
  CHECK_EQ(e->awaitResponses(b, -1, 0), 0);
  CHECK_EQ(e->awaitResponses(b, 100, 0), 3);
  CHECK_EQ(b.responses[0].clientRequestId, 2);
  CHECK_EQ(e->awaitResponses(b, 100, 0), 0);
  CHECK_EQ(b.size(), 0);  // cleared first
  KvEventBatch k;
  CHECK_EQ(e->drainKvEvents(k, 2), 2);  // three created events
  CHECK_EQ(k.events[1].rank, 1);
  CHECK_EQ(e->drainKvEvents(k, 0), 0);
  CHECK_EQ(e->drainKvEvents(k, 10), 1);
  CHECK_EQ(k.events[0].rank, 2);
}

TEST(enqueue_batch_returns_ids_in_order) {
  auto e = make(cfg());
  RequestBatch batch;
  for (int i = 0; i < 5; ++i) batch.add(spec(seqTokens(100 * i, 10), 2, 50 + i));
  batch.add(spec({}, 2, 99));  // an error inside a batch does not affect the others
  std::vector<int64_t> ids(static_cast<size_t>(batch.size()));
  e->enqueueBatch(batch, ids.data());
  for (size_t i = 1; i < ids.size(); ++i) CHECK_EQ(ids[i], ids[i - 1] + 1);
  const auto f = finals(runAll(*e));
  CHECK_EQ(f.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    CHECK_EQ(f.at(ids[static_cast<size_t>(i)]).clientRequestId, 50 + i);
    CHECK_EQ(f.at(ids[static_cast<size_t>(i)]).finishReason, fin(FinishReason::kLength));
  }
  CHECK_EQ(f.at(ids[5]).finishReason, fin(FinishReason::kError));
}

// ---------------------------------------------------------------------------------------------
// Shutdown and clock

TEST(shutdown_ends_every_live_request_once) {
  auto e = make(cfg(R"("max_batch_size":1,"max_num_active_requests":2)"));
  const int64_t running = e->enqueue(spec(seqTokens(1, 20), 50));
  const int64_t queued = e->enqueue(spec(seqTokens(100, 20), 50));
  const int64_t pending = e->enqueue(spec(seqTokens(200, 20), 50));
  const int64_t done = e->enqueue(spec({}, 1));  // already answered (error)
  for (int i = 0; i < 3; ++i) CHECK(step(*e));
  take(*e);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.pendingRequests, 1);
  CHECK(!e->isShutdown());
  e->shutdown();
  CHECK(e->isShutdown());
  const auto rs = take(*e);
  const auto f = finals(rs);
  CHECK_EQ(rs.size(), 3u);
  CHECK_EQ(f.size(), 3u);
  for (const int64_t id : {running, queued, pending}) {
    CHECK_EQ(f.at(id).finishReason, fin(FinishReason::kCancelled));
    CHECK_EQ(f.at(id).errorKind, kind(ErrorKind::kCancelled));
    CHECK(contains(f.at(id).errorMessage, "shut down"));
  }
  CHECK(f.count(done) == 0);
  CHECK_EQ(kvStats(*e).usedNumBlocks, 0);
  CHECK_THROWS(e->enqueue(spec(seqTokens(1, 5), 1)), "shut down");
  RequestBatch b;
  b.add(spec(seqTokens(1, 5), 1));
  int64_t id = 0;
  CHECK_THROWS(e->enqueueBatch(b, &id), "shut down");
  e->shutdown();  // idempotent
  CHECK(take(*e).empty());
  CHECK_EQ(e->nextIterationEndUs(), -1);
  ResponseBatch out;
  CHECK_EQ(e->awaitResponses(out, 10, -1), 0);  // does not block after shutdown
}

TEST(virtual_clock_rules) {
  auto e = make(cfg());
  CHECK_EQ(e->clockMode(), static_cast<int32_t>(ClockMode::kVirtual));
  CHECK_EQ(e->nowUs(), 0);
  CHECK_EQ(e->nextIterationEndUs(), -1);  // idle
  e->advanceTo(1000);
  CHECK_EQ(e->nowUs(), 1000);
  CHECK_THROWS(e->advanceTo(999), "before the current time");
  e->advanceTo(1000);  // the present is fine
  const int64_t id = e->enqueue(spec(seqTokens(1, 20), 10));
  const int64_t t = e->nextIterationEndUs();
  CHECK(t > 1000);
  CHECK_EQ(e->nextIterationEndUs(), t);  // stable while the iteration runs
  e->advanceTo(t - 1);
  CHECK(take(*e).empty());
  // One big jump runs every iteration up to it.
  e->advanceTo(1'000'000'000);
  CHECK_EQ(e->nowUs(), 1'000'000'000);
  const Response r = finalOf(take(*e), id);
  CHECK_EQ(r.metrics.arrivalUs, 1000);
  CHECK(r.metrics.finishUs < 1'000'000'000);
  CHECK_EQ(e->nextIterationEndUs(), -1);
  ResponseBatch out;
  CHECK_EQ(e->awaitResponses(out, 10, 1000), 0);  // bounded wait with nothing ready
}

TEST(real_clock_rejects_virtual_calls_and_completes_a_request) {
  auto e = make(R"({"clock":{"mode":"real","time_scale":0.001}})");
  CHECK_EQ(e->clockMode(), static_cast<int32_t>(ClockMode::kReal));
  CHECK_THROWS(e->advanceTo(10), "virtual");
  CHECK_THROWS(e->nextIterationEndUs(), "virtual");
  const int64_t id = e->enqueue(spec(seqTokens(1, 100), 8));
  std::vector<Response> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ResponseBatch b;
  while (finals(got).count(id) == 0 && std::chrono::steady_clock::now() < deadline) {
    e->awaitResponses(b, 16, 100000);
    for (auto& r : b.responses) got.push_back(r);
  }
  const Response r = finalOf(got, id);
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(r.tokens.size(), 8u);
}

// ---------------------------------------------------------------------------------------------
// KV events

TEST(created_events_per_rank_at_start) {
  auto e = make(cfg(R"("num_ranks":3,"kv_blocks_per_rank":100)"));
  const auto ev = events(*e);
  CHECK_EQ(ev.size(), 3u);
  for (int32_t r = 0; r < 3; ++r) {
    const KvEvent& x = ev[static_cast<size_t>(r)];
    CHECK_EQ(x.type, static_cast<int32_t>(KvEventType::kCreated));
    CHECK_EQ(x.rank, r);
    CHECK_EQ(x.value, 100);
    CHECK_EQ(x.eventId, 0);  // one sequence per rank
    CHECK_EQ(x.windowSize, 100 * kTpb);
  }
  CHECK(events(*e).empty());  // drained
}

TEST(stored_hashes_equal_the_router_chain) {
  auto e = make(cfg(R"("num_ranks":2)"));
  events(*e);
  for (const int32_t len : {35, 41, 17}) {
    const auto prompt = seqTokens(100 * len, len);
    for (const char* salt : {static_cast<const char*>(nullptr), "tenant-1"}) {
      RequestSpec s = spec(prompt, 1);
      std::optional<uint64_t> saltId;
      if (salt != nullptr) {
        s.setCacheSalt(salt, static_cast<int32_t>(std::strlen(salt)));
        saltId = sim::cacheSaltId(salt);
      }
      const int64_t id = e->enqueue(s);
      const Response r = finalOf(runAll(*e), id);
      const auto ev = ofType(events(*e), KvEventType::kStored);
      CHECK_EQ(ev.size(), 1u);
      const auto want = routerChain(prompt, saltId);
      CHECK_EQ(want.size(), static_cast<size_t>((len - 1) / kTpb));
      CHECK(ev[0].blockHashes == want);
      CHECK(!ev[0].hasParent);
      CHECK_EQ(ev[0].rank, r.metrics.rank);
      CHECK(ev[0].tokens == std::vector<int32_t>(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(want.size() * kTpb)));
    }
  }
}

TEST(router_full_blocks_are_a_prefix_of_what_is_stored) {
  // A prompt of exactly 4 blocks: the router (last token excluded) sees 3 full blocks, the worker
  // stores all 4 (plus blocks filled by output). The router's chain is always a prefix.
  auto e = make(cfg());
  events(*e);
  const auto prompt = seqTokens(1, 32);
  const int64_t id = e->enqueue(spec(prompt, 20));
  const Response r = finalOf(runAll(*e), id);
  const auto stored = hashesOf(events(*e), KvEventType::kStored);
  const auto want = routerChain(prompt);
  CHECK_EQ(want.size(), 3u);
  CHECK(stored.size() >= 4);
  CHECK(std::equal(want.begin(), want.end(), stored.begin()));
  // KV exists for the prompt and every output token but the last: (32 + 20 - 1) / 8 = 6 blocks,
  // the same chain the router computes over prompt + output as the next turn's prefix.
  CHECK_EQ(stored.size(), 6u);
  CHECK(stored == routerChain(concat(concat(prompt, r.tokens), {0})));
  // Events come with increasing ids.
  auto e2 = make(cfg());
  e2->enqueue(spec(seqTokens(1, 50), 30));
  runAll(*e2);
  int64_t last = -1;
  for (const auto& x : events(*e2)) {
    CHECK(x.eventId > last);
    last = x.eventId;
  }
}

TEST(kv_events_can_be_disabled_or_token_free) {
  auto off = make(cfg(R"("kv_events":{"enabled":false})"));
  off->enqueue(spec(seqTokens(1, 50), 3));
  runAll(*off);
  CHECK(events(*off).empty());
  auto bare = make(cfg(R"("kv_events":{"include_tokens":false})"));
  bare->enqueue(spec(seqTokens(1, 50), 3));
  runAll(*bare);
  const auto st = ofType(events(*bare), KvEventType::kStored);
  CHECK(!st.empty());
  for (const auto& x : st) {
    CHECK(!x.blockHashes.empty());
    CHECK(x.tokens.empty());
  }
  // A small buffer keeps only the newest events.
  auto small = make(cfg(R"("num_ranks":4,"kv_events":{"max_buffered":2})"));
  const auto ev = events(*small);
  CHECK_EQ(ev.size(), 2u);
  CHECK_EQ(ev[0].rank, 2);
  CHECK_EQ(ev[1].rank, 3);
}

// ---------------------------------------------------------------------------------------------
// Reuse policies

TEST(all_reusable_keeps_blocks_cached) {
  auto e = make(cfg(R"("kv_blocks_per_rank":64)"));
  events(*e);
  e->enqueue(spec(seqTokens(1, 41), 1));
  runAll(*e);
  const auto ev = events(*e);
  CHECK(ofType(ev, KvEventType::kRemoved).empty());
  const KvCacheStats k = kvStats(*e);
  CHECK_EQ(k.usedNumBlocks, 0);
  CHECK_EQ(k.cachedNumBlocks, 5);
  CHECK_EQ(k.freeNumBlocks, 59);
}

TEST(per_request_frees_blocks_at_completion) {
  auto e = make(cfg(R"("kv_blocks_per_rank":64,"block_reuse":{"policy":"per_request"})"));
  events(*e);
  const auto p = seqTokens(1, 41);
  const int64_t id = e->enqueue(spec(p, 1));
  CHECK_EQ(finalOf(runAll(*e), id).metrics.reusedTokens, 0);
  const auto ev = events(*e);
  const auto stored = hashesOf(ev, KvEventType::kStored);
  CHECK_EQ(stored.size(), 5u);
  CHECK(hashesOf(ev, KvEventType::kRemoved) == reversed(stored));  // deepest first
  const KvCacheStats k = kvStats(*e);
  CHECK_EQ(k.cachedNumBlocks, 0);
  CHECK_EQ(k.usedNumBlocks, 0);
  CHECK_EQ(k.freeNumBlocks, 64);
  const int64_t again = e->enqueue(spec(p, 1));
  CHECK_EQ(finalOf(runAll(*e), again).metrics.reusedTokens, 0);
}

TEST(per_request_still_shares_between_live_requests) {
  auto e = make(cfg(R"("max_num_tokens":40,"block_reuse":{"policy":"per_request"})"));
  const auto p = seqTokens(1, 41);
  const int64_t a = e->enqueue(spec(p, 30));
  step(*e);
  step(*e);  // a's prompt is done and a keeps decoding
  const int64_t b = e->enqueue(spec(p, 1));
  const auto rs = runAll(*e);
  CHECK_EQ(finalOf(rs, b).metrics.reusedTokens, 40);
  CHECK_EQ(finalOf(rs, a).tokens.size(), 30u);
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 0);
}

TEST(per_conversation_next_turn_reuses_previous_turn) {
  auto e = make(cfg(R"("block_reuse":{"policy":"per_conversation"})"));
  events(*e);
  const auto p1 = seqTokens(1, 35);
  RequestSpec t1 = spec(p1, 8, 1);
  setConv(t1, "conv-1");
  const int64_t i1 = e->enqueue(t1);
  const Response r1 = finalOf(runAll(*e), i1);
  auto ev = events(*e);
  const auto stored = hashesOf(ev, KvEventType::kStored);
  CHECK_EQ(stored.size(), 5u);  // (35 + 8 - 1) / 8
  CHECK(ofType(ev, KvEventType::kRemoved).empty());
  const auto upd = ofType(ev, KvEventType::kUpdated);
  CHECK_EQ(upd.size(), 5u);
  for (size_t i = 0; i < upd.size(); ++i) {
    CHECK_EQ(upd[i].value, 90);
    CHECK((upd[i].blockHashes == std::vector<uint64_t>{stored[i]}));
  }
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 5);

  // Turn 2 = turn 1's prompt + output + a new message: reuses every stored block.
  const auto p2 = concat(concat(p1, r1.tokens), seqTokens(9000, 10));
  RequestSpec t2 = spec(p2, 8, 2);
  setConv(t2, "conv-1");
  const int64_t i2 = e->enqueue(t2);
  const Response r2 = finalOf(runAll(*e), i2);
  CHECK_EQ(r2.metrics.reusedTokens, 40);
  ev = events(*e);
  CHECK(ofType(ev, KvEventType::kRemoved).empty());  // turn 1's blocks are all part of turn 2
  CHECK_EQ(kvStats(*e).cachedNumBlocks, static_cast<int64_t>((p2.size() + 8 - 1) / kTpb));

  // A request without a conversation id keeps per_request behaviour.
  const int64_t i3 = e->enqueue(spec(seqTokens(50000, 41), 1));
  runAll(*e);
  (void)i3;
  ev = events(*e);
  CHECK_EQ(hashesOf(ev, KvEventType::kRemoved).size(), 5u);
  CHECK(hashesOf(ev, KvEventType::kRemoved) == reversed(hashesOf(ev, KvEventType::kStored)));
}

TEST(per_conversation_drops_blocks_the_next_turn_does_not_need) {
  auto e = make(cfg(R"("block_reuse":{"policy":"per_conversation"})"));
  events(*e);
  RequestSpec t1 = spec(seqTokens(1, 41), 1);
  setConv(t1, "c");
  e->enqueue(t1);
  runAll(*e);
  const auto first = hashesOf(events(*e), KvEventType::kStored);
  CHECK_EQ(first.size(), 5u);
  // Turn 2 keeps only the first 2 blocks of turn 1 (e.g. a rewritten history).
  RequestSpec t2 = spec(concat(seqTokens(1, 16), seqTokens(7000, 25)), 1);
  setConv(t2, "c");
  const int64_t i2 = e->enqueue(t2);
  CHECK_EQ(finalOf(runAll(*e), i2).metrics.reusedTokens, 16);
  const auto ev = events(*e);
  // Turn 1's record is released: its 3 blocks that turn 2 does not share are dropped.
  CHECK((hashesOf(ev, KvEventType::kRemoved) == std::vector<uint64_t>{first[4], first[3], first[2]}));
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 5);
}

TEST(per_conversation_max_num_turns_keeps_older_turns) {
  auto e = make(cfg(R"("block_reuse":{"policy":"per_conversation","max_num_turns":2})"));
  events(*e);
  const auto a = seqTokens(1, 41), b = seqTokens(5000, 41), c = seqTokens(9000, 41);
  for (const auto* p : {&a, &b}) {
    RequestSpec s = spec(*p, 1);
    setConv(s, "c");
    e->enqueue(s);
    runAll(*e);
  }
  CHECK(ofType(events(*e), KvEventType::kRemoved).empty());  // both turns kept
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 10);
  RequestSpec s = spec(c, 1);
  setConv(s, "c");
  e->enqueue(s);
  runAll(*e);
  CHECK_EQ(hashesOf(events(*e), KvEventType::kRemoved).size(), 5u);  // the oldest turn goes
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 10);
}

TEST(per_conversation_end_drops_the_conversations_turns_and_keeps_shared_blocks) {
  auto e = make(cfg(R"("block_reuse":{"policy":"per_conversation","max_num_turns":2})"));
  events(*e);
  const auto shared = seqTokens(1, 16);  // 2 blocks both conversations retain
  for (const char* conv : {"a", "b"}) {
    RequestSpec s = spec(concat(shared, seqTokens(conv[0] == 'a' ? 5000 : 9000, 25)), 1);
    setConv(s, conv);
    e->enqueue(s);
    runAll(*e);
  }
  const auto stored = hashesOf(events(*e), KvEventType::kStored);
  CHECK_EQ(stored.size(), 8u);  // a: 5, b: 3 (its first 2 reused)
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 8);

  e->endConversation("a");
  const auto removed = hashesOf(events(*e), KvEventType::kRemoved);
  CHECK_EQ(removed.size(), 3u);  // a's own blocks, deepest first; the shared prefix stays for b
  CHECK((removed == std::vector<uint64_t>{stored[4], stored[3], stored[2]}));
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 5);
  e->endConversation("a");        // twice: nothing left
  e->endConversation("unknown");  // never seen: a no-op
  CHECK(events(*e).empty());

  // A turn running when its conversation ends keeps nothing when it finishes.
  RequestSpec s = spec(seqTokens(20000, 41), 4);
  setConv(s, "c");
  const int64_t live = e->enqueue(s);
  step(*e);
  e->endConversation("c");
  finalOf(runAll(*e), live);
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 5);  // b's turn only
}

TEST(per_conversation_records_survive_eviction_of_older_turns) {
  // Memory pressure evicts conversation X's retained turn-1 blocks and Y's turn reuses their ids.
  // When X's turn 2 completes, releasing X's turn-1 record must not touch Y's (or X2's own)
  // retention: the record's handles went stale with the eviction.
  auto e = make(cfg(R"("kv_blocks_per_rank":12,"block_reuse":{"policy":"per_conversation"})"));
  auto run = [&](const std::vector<int32_t>& p, int32_t n, const char* conv) {
    RequestSpec s = spec(p, n, 1);
    setConv(s, conv);
    const int64_t id = e->enqueue(s);
    const Response r = finalOf(runAll(*e), id);
    CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
    return r;
  };
  run(seqTokens(1, 41), 1, "X");                 // 5 blocks retained, 7 free
  const auto y1 = seqTokens(1000, 89);
  run(y1, 7, "Y");                               // 12 blocks: evicts X's 5; 11 retained
  CHECK_EQ(kvStats(*e).evictedBlocks, 5);
  events(*e);
  const auto x2 = seqTokens(5000, 9);
  const Response rx2 = run(x2, 1, "X");          // 2 blocks: 1 free + evicts Y's deepest
  const auto removed = hashesOf(events(*e), KvEventType::kRemoved);
  CHECK_EQ(removed.size(), 1u);                  // the eviction only
  CHECK_EQ(kvStats(*e).cachedNumBlocks, 11);     // Y's 10 + X2's 1
  CHECK_EQ(run(concat(std::vector<int32_t>(y1.begin(), y1.begin() + 80), {3}), 1, "Y").metrics.reusedTokens, 80);
  CHECK_EQ(run(concat(concat(x2, rx2.tokens), {4, 5, 6}), 1, "X").metrics.reusedTokens, 8);
}

TEST(siblings_sharing_an_affinity_id_are_keyed_by_their_own_conversation) {
  // Two concurrent sub-agents share a sub-agent affinity id (for rank placement) but have their own
  // conversation ids. Keyed by the affinity id, the second would count as a second live request of
  // one conversation and be treated per_request (its blocks removed at completion).
  auto e = make(cfg(R"("num_ranks":2,"adp_router":{"type":"conversation"},"block_reuse":{"policy":"per_conversation"})"));
  events(*e);
  const auto pa = seqTokens(1, 41), pb = seqTokens(5000, 41);
  RequestSpec a = spec(pa, 6, 1), b = spec(pb, 6, 2);
  setConv(a, "sub-a");
  setConv(b, "sub-b");
  setAffinity(a, "agent-1");
  setAffinity(b, "agent-1");
  const int64_t ia = e->enqueue(a), ib = e->enqueue(b);
  e->nextIterationEndUs();
  CHECK_EQ(kvStats(*e, 0).activeRequests + kvStats(*e, 1).activeRequests, 2);  // both live at once
  const auto rs = runAll(*e);
  const Response ra = finalOf(rs, ia), rb = finalOf(rs, ib);
  CHECK_EQ(ra.metrics.rank, rb.metrics.rank);  // placed together by the affinity id
  const int32_t rank = ra.metrics.rank;
  const auto ev = events(*e);
  CHECK(ofType(ev, KvEventType::kRemoved).empty());  // both retained
  const auto stored = hashesOf(ev, KvEventType::kStored);
  CHECK_EQ(stored.size(), 10u);
  CHECK(containsAll(hashesOf(ev, KvEventType::kUpdated), stored));
  CHECK_EQ(kvStats(*e, rank).cachedNumBlocks, 10);
  // Each sibling's next turn reuses its own history.
  for (const auto& [p, r, conv] : {std::make_tuple(pa, ra, std::string("sub-a")), std::make_tuple(pb, rb, std::string("sub-b"))}) {
    RequestSpec next = spec(concat(concat(p, r.tokens), seqTokens(20000, 5)), 1);
    setConv(next, conv);
    setAffinity(next, "agent-1");
    const int64_t id = e->enqueue(next);
    const Response rn = finalOf(runAll(*e), id);
    CHECK_EQ(rn.metrics.rank, rank);
    CHECK_EQ(rn.metrics.reusedTokens, 40);  // (41 + 6 - 1) / 8 = 5 blocks
  }
}

TEST(second_live_request_of_a_conversation_is_per_request) {
  auto e = make(cfg(R"("block_reuse":{"policy":"per_conversation"})"));
  events(*e);
  const auto pa = seqTokens(1, 41), pb = seqTokens(5000, 41);
  RequestSpec a = spec(pa, 4, 1), b = spec(pb, 4, 2);
  setConv(a, "same");
  setConv(b, "same");
  const int64_t ia = e->enqueue(a), ib = e->enqueue(b);
  const auto rs = runAll(*e);
  CHECK_EQ(finals(rs).size(), 2u);
  (void)ia;
  (void)ib;
  const auto ev = events(*e);
  const auto aChain = routerChain(concat(concat(pa, finalOf(rs, ia).tokens), {0}));
  const auto bChain = routerChain(concat(concat(pb, finalOf(rs, ib).tokens), {0}));
  const auto removed = hashesOf(ev, KvEventType::kRemoved);
  // b (the second live request) is per_request: all its blocks removed; a's are retained.
  CHECK(removed == reversed(bChain));
  CHECK(containsAll(hashesOf(ev, KvEventType::kUpdated), aChain));
  CHECK_EQ(kvStats(*e).cachedNumBlocks, static_cast<int64_t>(aChain.size()));
}

// ---------------------------------------------------------------------------------------------
// Object accounting and concurrency

TEST(live_object_count_returns_to_start) {
  // Counted: what Java allocates and must free (executors, domains, batches, statistics). Request
  // specs are plain values, not counted.
  const int64_t start = liveObjectCount();
  {
    auto e = make(cfg(R"("num_ranks":2)"));
    const int64_t withExecutor = liveObjectCount();
    CHECK(withExecutor > start);
    RequestSpec s = spec(seqTokens(1, 30), 5);
    RequestSpec copy(s);
    CHECK_EQ(liveObjectCount(), withExecutor);
    HandoffDomain domain;
    CHECK_EQ(liveObjectCount(), withExecutor + 1);
    RequestBatch b;
    b.add(s);
    b.add(s);
    std::vector<int64_t> ids(2);
    e->enqueueBatch(b, ids.data());
    e->enqueue(s);
    step(*e);
    ResponseBatch rb;
    e->awaitResponses(rb, 100, 0);
    KvEventBatch kb;
    e->drainKvEvents(kb, 100);
    KvCacheStats ks;
    e->getKvCacheStats(0, ks);
    KvCacheStats ks2(ks);
    IterationStats is;
    e->getIterationStats(is);
    IterationStats is2(is);
    // domain, request batch, response batch, KV-event batch, 2 x 2 statistics
    CHECK_EQ(liveObjectCount(), withExecutor + 8);
    // Destroyed with requests still live.
  }
  CHECK_EQ(liveObjectCount(), start);
  destroyExecutor(nullptr);  // harmless
  CHECK_EQ(liveObjectCount(), start);
}

TEST(concurrent_enqueue_and_cancel_in_real_mode) {
  auto e = make(R"({"num_ranks":2,"max_batch_size":8,"clock":{"mode":"real","time_scale":0.001}})");
  constexpr int kThreads = 4, kPerThread = 60;
  std::mutex mu;
  std::vector<int64_t> allIds;
  std::atomic<bool> producing{true};
  std::vector<Response> got;
  std::thread consumer([&] {
    ResponseBatch b;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      e->awaitResponses(b, 64, 20000);
      std::lock_guard<std::mutex> lk(mu);
      for (auto& r : b.responses) got.push_back(r);
      if (!producing.load()) {
        size_t nFinal = 0;
        for (const auto& r : got) nFinal += r.isFinal ? 1 : 0;
        if (nFinal >= allIds.size()) break;
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t + 1));
      std::vector<int64_t> mine;
      for (int i = 0; i < kPerThread; ++i) {
        RequestSpec s = spec(seqTokens(static_cast<int32_t>(rng() % 4) * 1000, 20 + static_cast<int32_t>(rng() % 40)),
                             1 + static_cast<int32_t>(rng() % 12), t * 1000 + i);
        s.setStreaming(rng() % 2 == 0);
        if (i % 10 == 0) s.setMaxNewTokens(0);  // some errors too
        if (i % 7 == 3) {
          RequestBatch b;
          b.add(s);
          b.add(s);
          int64_t ids[2];
          e->enqueueBatch(b, ids);
          mine.push_back(ids[0]);
          mine.push_back(ids[1]);
        } else {
          mine.push_back(e->enqueue(s));
        }
        if (rng() % 3 == 0) e->cancel(mine[rng() % mine.size()]);
        if (rng() % 5 == 0) e->cancel(-static_cast<int64_t>(rng() % 100) - 1);  // unknown
        if (rng() % 4 == 0) std::this_thread::yield();
      }
      std::lock_guard<std::mutex> lk(mu);
      allIds.insert(allIds.end(), mine.begin(), mine.end());
    });
  }
  for (auto& p : producers) p.join();
  producing.store(false);
  consumer.join();
  std::lock_guard<std::mutex> lk(mu);
  const std::set<int64_t> idSet(allIds.begin(), allIds.end());
  CHECK_EQ(idSet.size(), allIds.size());  // unique ids
  std::map<int64_t, int> finalCount;
  std::set<int64_t> ended;
  for (const auto& r : got) {
    CHECK(idSet.count(r.requestId) == 1);
    CHECK(ended.count(r.requestId) == 0);  // nothing after a final
    if (r.isFinal) {
      ++finalCount[r.requestId];
      ended.insert(r.requestId);
    }
  }
  CHECK_EQ(finalCount.size(), allIds.size());
  for (const auto& [id, n] : finalCount) CHECK_EQ(n, 1);
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.activeRequests, 0);
  CHECK_EQ(kvStats(*e, 0).usedNumBlocks + kvStats(*e, 1).usedNumBlocks, 0);
}
