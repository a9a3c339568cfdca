// The context -> generation handoff between sim executors (virtual clock): context_only results,
// KV held until pulled, transfer time, pulls on the same executor, errors, timeouts, cancellation,
// and hand-off domains (executors of one domain pull each other's contexts; two domains, or an
// executor without one, cannot).
#include <chrono>
#include <cmath>
#include <thread>

#include "check.h"
#include "sim/config.h"
#include "sim/hash.h"
#include "sim/sim_executor.h"
#include "sim/timing.h"
#include "sim_util.h"

using namespace affinity;
using namespace testutil;

namespace {

const char* kCtxCfg = R"({"clock":{"mode":"virtual"},"num_ranks":2,"tokens_per_block":8})";
const char* kGenCfg = R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"preset":"deepseek-v3-gb200-dp"})";

RequestSpec ctxSpec(const std::vector<int32_t>& prompt, int32_t maxNew, int64_t client, int64_t seed) {
  RequestSpec s = spec(prompt, maxNew, client);
  s.setRequestType(static_cast<int32_t>(RequestType::kContextOnly));
  s.setSeed(seed);
  return s;
}

/// The generation_only request for a context response (same seed and client id).
RequestSpec genSpec(const std::vector<int32_t>& prompt, int32_t maxNew, const Response& ctx, int64_t seed) {
  RequestSpec s = spec(prompt, maxNew, ctx.clientRequestId);
  s.setRequestType(static_cast<int32_t>(RequestType::kGenerationOnly));
  s.setSeed(seed);
  s.setContextPhase(ctx.ctxRequestId, ctx.ctxDpRank, ctx.firstGenTokens.data(),
                    static_cast<int32_t>(ctx.firstGenTokens.size()), ctx.opaqueState.data(),
                    static_cast<int32_t>(ctx.opaqueState.size()));
  return s;
}

/// Runs a context_only request to its (only) response.
Response runCtx(Executor& e, const RequestSpec& s) {
  const int64_t id = e.enqueue(s);
  const auto rs = runAll(e);
  CHECK_EQ(rs.size(), 1u);
  CHECK_EQ(rs[0].requestId, id);
  return rs[0];
}

int64_t usedAll(Executor& e) {
  int64_t n = 0;
  for (int32_t r = 0; r < e.numRanks(); ++r) n += kvStats(e, r).usedNumBlocks;
  return n;
}

int32_t heldContexts(Executor& e) {
  IterationStats st;
  e.getIterationStats(st);
  return st.heldContexts;
}

}  // namespace

TEST(context_only_returns_one_token_and_params) {
  auto a = make(kCtxCfg);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 10, 77, 5));
  CHECK(c.isFinal);
  CHECK_EQ(c.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(c.tokens.size(), 1u);
  CHECK(c.hasContextPhase);
  CHECK_EQ(c.ctxRequestId, c.requestId);
  CHECK_EQ(c.ctxDpRank, c.metrics.rank);
  CHECK(c.ctxDpRank >= 0 && c.ctxDpRank < 2);
  CHECK(c.firstGenTokens == c.tokens);
  CHECK_EQ(c.opaqueState.rfind("affsim1 ", 0), 0u);
  CHECK(contains(c.opaqueState, " " + std::to_string(c.requestId) + " " + std::to_string(c.ctxDpRank) + " 100"));
  CHECK_EQ(c.metrics.outputTokens, 1);
  CHECK_EQ(c.metrics.promptTokens, 100);
  CHECK_EQ(c.clientRequestId, 77);
  // The KV stays held: (100 + 1) tokens -> 13 blocks of 8.
  CHECK_EQ(usedAll(*a), 13);
  CHECK_EQ(heldContexts(*a), 1);
  CHECK_EQ(a->nextIterationEndUs(), -1);  // nothing left to compute
  IterationStats st;
  a->getIterationStats(st);
  CHECK_EQ(st.activeRequests, 0);
  CHECK_EQ(st.completedRequests, 1);
}

TEST(generation_pull_frees_the_context_hold) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 10, 77, 5));
  CHECK_EQ(usedAll(*a), 13);
  events(*b);
  const int64_t g = b->enqueue(genSpec(prompt, 10, c, 5));
  // The pull frees A's hold at once, before B computes anything.
  CHECK_EQ(usedAll(*a), 0);
  CHECK_EQ(heldContexts(*a), 0);
  const auto rs = runAll(*b);
  const Response r = finalOf(rs, g);
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(r.tokens.size(), 10u);
  CHECK_EQ(r.tokens[0], c.tokens[0]);  // starts with the first generated token
  // Transfer time charged by B: latency + bytes / bandwidth of B's preset.
  const sim::TimingModel m(sim::timingPreset("deepseek-v3-gb200-dp"));
  const auto want = static_cast<int64_t>(std::ceil(m.transferUs(100)));
  CHECK_EQ(r.metrics.transferUs, want);
  CHECK(std::abs(static_cast<double>(want) - (500 + 100 * 35136.0 / 400e9 * 1e6)) <= 1.0);
  CHECK(r.metrics.firstTokenUs >= r.metrics.scheduledUs + want);
  CHECK_EQ(r.metrics.reusedTokens, 0);
  CHECK_EQ(usedAll(*b), 0);
  // B registers the transferred prompt blocks under the router's hashes.
  const auto stored = hashesOf(events(*b), KvEventType::kStored);
  const auto chain = sim::v1BlockHashChain(prompt, 8, std::nullopt, false);
  CHECK(stored.size() >= chain.size());
  CHECK(std::equal(chain.begin(), chain.end(), stored.begin()));
}

TEST(disaggregated_output_equals_aggregated_output) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(40, 57);
  const Response c = runCtx(*a, ctxSpec(prompt, 12, 3, 99));
  const int64_t g = b->enqueue(genSpec(prompt, 12, c, 99));
  const Response r = finalOf(runAll(*b), g);
  auto agg = make(kCtxCfg, &fleet);
  RequestSpec s = spec(prompt, 12, 3);
  s.setSeed(99);
  const int64_t ia = agg->enqueue(s);
  CHECK(finalOf(runAll(*agg), ia).tokens == r.tokens);
}

TEST(streaming_generation_starts_with_first_gen_tokens) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 64);
  const Response c = runCtx(*a, ctxSpec(prompt, 6, 1, 1));
  RequestSpec gs = genSpec(prompt, 6, c, 1);
  gs.setStreaming(true);
  const int64_t g = b->enqueue(gs);
  const auto rs = runAll(*b);
  CHECK(!rs.empty());
  CHECK_EQ(rs[0].requestId, g);
  CHECK(!rs[0].tokens.empty());
  CHECK_EQ(rs[0].tokens[0], c.firstGenTokens[0]);
  CHECK_EQ(outputOf(rs, g).size(), 6u);
  CHECK(rs.back().isFinal);
  // max_new_tokens 1: the first token is the whole output, no decode step.
  auto a2 = make(kCtxCfg, &fleet);
  const Response c2 = runCtx(*a2, ctxSpec(prompt, 1, 1, 1));
  const int64_t g2 = b->enqueue(genSpec(prompt, 1, c2, 1));
  const Response r2 = finalOf(runAll(*b), g2);
  CHECK(r2.tokens == c2.firstGenTokens);
  CHECK_EQ(r2.finishReason, fin(FinishReason::kLength));
}

TEST(generation_on_the_same_executor) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  CHECK_EQ(usedAll(*a), 13);
  const int64_t g = a->enqueue(genSpec(prompt, 8, c, 5));
  CHECK_EQ(heldContexts(*a), 0);
  const Response r = finalOf(runAll(*a), g);
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(r.tokens.size(), 8u);
  CHECK_EQ(r.tokens[0], c.tokens[0]);
  CHECK(r.metrics.transferUs > 0);
  CHECK_EQ(usedAll(*a), 0);
  // A second pull of the same context, on either executor, is an error.
  const int64_t again = a->enqueue(genSpec(prompt, 8, c, 5));
  Response e = finalOf(take(*a), again);
  CHECK_EQ(e.finishReason, fin(FinishReason::kError));
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "unknown context request " + std::to_string(c.ctxRequestId)));
  auto b = make(kGenCfg, &fleet);
  const int64_t other = b->enqueue(genSpec(prompt, 8, c, 5));
  e = finalOf(take(*b), other);
  CHECK_EQ(e.finishReason, fin(FinishReason::kError));
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "unknown context request"));
}

TEST(second_pull_from_another_executor_is_an_error) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 30);
  const Response c = runCtx(*a, ctxSpec(prompt, 4, 5, 5));
  RequestBatch batch;
  batch.add(genSpec(prompt, 4, c, 5));
  batch.add(genSpec(prompt, 4, c, 5));  // the same context twice in one batch
  int64_t ids[2];
  b->enqueueBatch(batch, ids);
  const auto rs = runAll(*b);
  CHECK_EQ(finalOf(rs, ids[0]).finishReason, fin(FinishReason::kLength));
  CHECK_EQ(finalOf(rs, ids[1]).finishReason, fin(FinishReason::kError));
  CHECK(contains(finalOf(rs, ids[1]).errorMessage, "unknown context request"));
}

TEST(hold_times_out_after_context_hold_timeout) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"context_hold_timeout_ms":50})", &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  const int64_t done = c.metrics.finishUs;
  CHECK_EQ(a->nowUs(), done);
  a->advanceTo(done + 50000 - 1);
  CHECK_EQ(usedAll(*a), 13);
  CHECK_EQ(heldContexts(*a), 1);
  a->advanceTo(done + 50000);
  CHECK_EQ(usedAll(*a), 0);
  CHECK_EQ(heldContexts(*a), 0);
  CHECK(take(*a).empty());  // the context request already had its final response
  auto b = make(kGenCfg, &fleet);
  const int64_t g = b->enqueue(genSpec(prompt, 8, c, 5));
  const Response e = finalOf(take(*b), g);
  CHECK_EQ(e.finishReason, fin(FinishReason::kError));
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "unknown context request"));
  CHECK(contains(e.errorMessage, "expired"));
}

TEST(a_scaled_real_clock_holds_a_context_for_wall_time) {
  // 1000x faster than modelled; a 10 s hold. Read as executor time the hold would end after 10 ms of
  // wall time; it is a protocol timeout, so it lasts 10 s of wall time: 50 ms later the KV is held.
  auto a = make(R"({"clock":{"mode":"real","time_scale":0.001},"tokens_per_block":8,"context_hold_timeout_ms":10000})");
  const int64_t id = a->enqueue(ctxSpec(seqTokens(1, 100), 8, 5, 5));
  std::vector<Response> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ResponseBatch b;
  while (finals(got).count(id) == 0 && std::chrono::steady_clock::now() < deadline) {
    a->awaitResponses(b, 16, 100000);
    for (auto& r : b.responses) got.push_back(r);
  }
  CHECK(finalOf(got, id).hasContextPhase);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_EQ(heldContexts(*a), 1);
  a->cancel(id);
  CHECK_EQ(heldContexts(*a), 0);
}

TEST(hold_timeout_also_fires_while_other_work_runs) {
  auto a = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"context_hold_timeout_ms":1})");
  const Response c = runCtx(*a, ctxSpec(seqTokens(1, 100), 8, 5, 5));
  const int64_t id = a->enqueue(spec(seqTokens(500, 100), 50));  // many iterations > 1 ms
  runAll(*a);
  (void)id;
  (void)c;
  CHECK_EQ(heldContexts(*a), 0);
  CHECK_EQ(usedAll(*a), 0);
}

TEST(cancel_of_a_held_context_frees_it) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  CHECK_EQ(usedAll(*a), 13);
  a->cancel(c.ctxRequestId);
  CHECK_EQ(usedAll(*a), 0);
  CHECK_EQ(heldContexts(*a), 0);
  CHECK(take(*a).empty());  // no second final response
  auto b = make(kGenCfg, &fleet);
  const int64_t g = b->enqueue(genSpec(prompt, 8, c, 5));
  CHECK_EQ(finalOf(take(*b), g).finishReason, fin(FinishReason::kError));
}

TEST(shutdown_and_destroy_release_holds_silently) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  a->shutdown();
  CHECK(take(*a).empty());
  CHECK_EQ(usedAll(*a), 0);
  a.reset();
  // The context executor is gone: the state now reads as a remote context worker's, which frees
  // its KV on its own; the generation request is served.
  auto b = make(kGenCfg, &fleet);
  const int64_t g = b->enqueue(genSpec(prompt, 8, c, 5));
  const Response r = finalOf(runAll(*b), g);
  CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
  CHECK_EQ(r.tokens.size(), 8u);
}

TEST(mismatched_params_are_errors) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  // Prompt length differs from what the context request prefilled.
  const int64_t g1 = b->enqueue(genSpec(seqTokens(1, 99), 8, c, 5));
  Response e = finalOf(take(*b), g1);
  CHECK_EQ(e.finishReason, fin(FinishReason::kError));
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "generation_only prompt has 99 tokens but the context request prefilled 100"));
  // ctx_request_id differs from the state.
  RequestSpec s = genSpec(prompt, 8, c, 5);
  s.ctxRequestId = c.ctxRequestId + 1;
  const int64_t g2 = b->enqueue(s);
  e = finalOf(take(*b), g2);
  CHECK(contains(e.errorMessage, "does not match"));
  // Unrecognised opaque state.
  s = genSpec(prompt, 8, c, 5);
  s.opaqueState = "affsim1 1 2";
  const int64_t g3 = b->enqueue(s);
  CHECK(contains(finalOf(take(*b), g3).errorMessage, "not recognised"));
  // The hold survived the bad pulls.
  CHECK_EQ(usedAll(*a), 13);
  const int64_t ok = b->enqueue(genSpec(prompt, 8, c, 5));
  CHECK_EQ(finalOf(runAll(*b), ok).finishReason, fin(FinishReason::kLength));
  CHECK_EQ(usedAll(*a), 0);
}

TEST(context_only_ending_on_first_token_holds_nothing) {
  auto a = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"vocab_size":4})");
  const auto prompt = seqTokens(1, 50);
  RequestSpec probe = spec(prompt, 1, 9);
  probe.setSeed(3);
  const int64_t pid = a->enqueue(probe);
  const int32_t first = finalOf(runAll(*a), pid).tokens.at(0);
  RequestSpec s = ctxSpec(prompt, 8, 9, 3);
  s.setEndId(first);
  const Response c = runCtx(*a, s);
  CHECK_EQ(c.finishReason, fin(FinishReason::kEndId));
  CHECK(!c.hasContextPhase);
  CHECK(c.tokens.empty());
  CHECK_EQ(heldContexts(*a), 0);
  CHECK_EQ(usedAll(*a), 0);
}

TEST(context_conversation_blocks_are_retained_after_the_pull) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  auto a = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"block_reuse":{"policy":"per_conversation"}})", &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 41);
  RequestSpec s = ctxSpec(prompt, 4, 1, 1);
  setConv(s, "conv");
  const Response c = runCtx(*a, s);
  events(*a);
  b->enqueue(genSpec(prompt, 4, c, 1));
  const auto ev = events(*a);
  CHECK(ofType(ev, KvEventType::kRemoved).empty());
  CHECK_EQ(ofType(ev, KvEventType::kUpdated).size(), 5u);
  CHECK_EQ(kvStats(*a).cachedNumBlocks, 5);
  // The next turn's context request reuses them.
  RequestSpec next = ctxSpec(concat(prompt, seqTokens(900, 10)), 4, 2, 1);
  setConv(next, "conv");
  CHECK_EQ(runCtx(*a, next).metrics.reusedTokens, 40);
  runAll(*b);
}

TEST(per_conversation_handoff_on_one_executor_keeps_the_prefix) {
  // Context and generation on the same executor: the generation request's prompt blocks duplicate
  // the context request's (registered first). The conversation's record must retain the blocks that
  // hold the content, so that the next turn reuses the prompt.
  for (const char* policy : {"all_reusable", "per_conversation"}) {
    auto a = make(std::string(R"({"clock":{"mode":"virtual"},"tokens_per_block":8,"block_reuse":{"policy":")") +
                  policy + "\"}}");
    const auto prompt = seqTokens(1, 41);
    RequestSpec s = ctxSpec(prompt, 4, 1, 1);
    setConv(s, "conv");
    const Response c = runCtx(*a, s);
    RequestSpec g = genSpec(prompt, 4, c, 1);
    setConv(g, "conv");
    const int64_t gi = a->enqueue(g);
    const Response gr = finalOf(runAll(*a), gi);
    CHECK_EQ(gr.finishReason, fin(FinishReason::kLength));
    RequestSpec next = spec(concat(concat(prompt, gr.tokens), seqTokens(900, 10)), 4, 2);
    setConv(next, "conv");
    const int64_t ni = a->enqueue(next);
    CHECK_EQ(finalOf(runAll(*a), ni).metrics.reusedTokens, 40);  // (41 + 4 - 1) / 8 = 5 blocks
  }
}

TEST(context_on_a_hinted_rank_reports_that_rank) {
  auto a = make(kCtxCfg);
  const auto prompt = seqTokens(1, 50);
  RequestSpec s = ctxSpec(prompt, 4, 1, 1);
  s.setAdpRankHint(1, false);
  const Response c = runCtx(*a, s);
  CHECK_EQ(c.metrics.rank, 1);
  CHECK_EQ(c.ctxDpRank, 1);
  CHECK(contains(c.opaqueState, " 1 50"));  // "... <reqId> <rank> <promptLen>"
  CHECK_EQ(kvStats(*a, 1).usedNumBlocks, 7);  // held on rank 1: (50 + 1) tokens / 8
  CHECK_EQ(kvStats(*a, 0).usedNumBlocks, 0);
}

TEST(generation_output_starts_with_the_given_first_tokens) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  // The generation request has its own client id and seed (its own token stream); its output still
  // starts with the token the context phase produced.
  auto a = make(kCtxCfg, &fleet);
  auto b = make(kGenCfg, &fleet);
  const auto prompt = seqTokens(1, 64);
  const Response c = runCtx(*a, ctxSpec(prompt, 5, 1, 1));
  RequestSpec g = genSpec(prompt, 5, c, 2);
  g.setClientRequestId(1000);
  const int64_t gi = b->enqueue(g);
  const Response r = finalOf(runAll(*b), gi);
  CHECK_EQ(r.tokens.size(), 5u);
  CHECK_EQ(r.tokens[0], c.firstGenTokens[0]);
  CHECK_EQ(r.clientRequestId, 1000);
  // Several first tokens (e.g. speculative drafts) are all kept, in order.
  auto a2 = make(kCtxCfg, &fleet);
  const Response c2 = runCtx(*a2, ctxSpec(prompt, 5, 1, 1));
  RequestSpec g2 = genSpec(prompt, 5, c2, 1);
  const int32_t firsts[] = {c2.firstGenTokens[0], 4242, 4343};
  g2.setContextPhase(c2.ctxRequestId, c2.ctxDpRank, firsts, 3, c2.opaqueState.data(),
                     static_cast<int32_t>(c2.opaqueState.size()));
  const int64_t gi2 = b->enqueue(g2);
  const Response r2 = finalOf(runAll(*b), gi2);
  CHECK_EQ(r2.tokens.size(), 5u);
  CHECK((std::vector<int32_t>(r2.tokens.begin(), r2.tokens.begin() + 3) == std::vector<int32_t>{firsts[0], 4242, 4343}));
}

TEST(transfer_delays_the_first_decode_step_exactly) {
  HandoffDomain fleet;  // the executors of this test hand off in process
  // Alone on B (llama preset): an empty step until the transfer lands, then one decode step.
  auto a = make(kCtxCfg, &fleet);
  auto b = make(R"({"clock":{"mode":"virtual"},"tokens_per_block":8})", &fleet);
  const auto prompt = seqTokens(1, 1000);
  const Response c = runCtx(*a, ctxSpec(prompt, 2, 1, 1));
  const int64_t gi = b->enqueue(genSpec(prompt, 2, c, 1));
  const sim::TimingModel m(sim::timingPreset("llama3-70b-h100-tp8"));
  const auto transfer = static_cast<int64_t>(std::ceil(m.transferUs(1000)));
  CHECK_EQ(transfer, static_cast<int64_t>(std::ceil(1000 + 1000 * 327680.0 / 50e9 * 1e6)));
  CHECK_EQ(b->nextIterationEndUs(), transfer);  // nothing to compute before the KV lands
  const Response r = finalOf(runAll(*b), gi);
  CHECK_EQ(r.metrics.scheduledUs, 0);
  CHECK_EQ(r.metrics.transferUs, transfer);
  // The first decode step feeds the first generated token: it reads 1001 tokens of KV.
  CHECK_EQ(r.metrics.firstTokenUs, transfer + static_cast<int64_t>(std::ceil(m.iterationUs(m.decodeUs(1, 1001)))));
  CHECK_EQ(r.metrics.finishUs, r.metrics.firstTokenUs);  // 2 tokens: the given one + one step
}

// ---------------------------------------------------------------------------------------------
// Hand-off domains

TEST(two_domains_never_see_each_others_contexts) {
  HandoffDomain fleetA, fleetB;
  auto ctxA = make(kCtxCfg, &fleetA);
  auto genA = make(kGenCfg, &fleetA);
  auto genB = make(kGenCfg, &fleetB);
  CHECK_EQ(fleetA.executorCount(), 2);
  CHECK_EQ(fleetB.executorCount(), 1);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*ctxA, ctxSpec(prompt, 8, 5, 5));
  // Fleet B names fleet A's context: not found, and the hold stays where it is.
  const int64_t g = genB->enqueue(genSpec(prompt, 8, c, 5));
  const Response e = finalOf(take(*genB), g);
  CHECK_EQ(e.finishReason, fin(FinishReason::kError));
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "unknown context request " + std::to_string(c.ctxRequestId)));
  CHECK(contains(e.errorMessage, "outside this executor's hand-off domain"));
  CHECK_EQ(usedAll(*ctxA), 13);
  CHECK_EQ(heldContexts(*ctxA), 1);
  CHECK_EQ(usedAll(*genB), 0);
  // Fleet A's generation executor pulls it.
  const int64_t ok = genA->enqueue(genSpec(prompt, 8, c, 5));
  CHECK_EQ(usedAll(*ctxA), 0);
  CHECK_EQ(finalOf(runAll(*genA), ok).finishReason, fin(FinishReason::kLength));
}

TEST(an_executor_without_a_domain_pulls_only_its_own_contexts) {
  HandoffDomain fleet;
  auto a = make(kCtxCfg, &fleet);
  auto loner = make(kGenCfg);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  const int64_t g = loner->enqueue(genSpec(prompt, 8, c, 5));
  const Response e = finalOf(take(*loner), g);
  CHECK_EQ(e.errorKind, kind(ErrorKind::kContextNotFound));
  CHECK(contains(e.errorMessage, "no hand-off domain"));
  CHECK_EQ(usedAll(*a), 13);
  // Its own contexts hand off as always.
  const auto own = seqTokens(300, 20);
  const Response oc = runCtx(*loner, ctxSpec(own, 4, 6, 6));
  const int64_t og = loner->enqueue(genSpec(own, 4, oc, 6));
  CHECK_EQ(finalOf(runAll(*loner), og).finishReason, fin(FinishReason::kLength));
  CHECK_EQ(usedAll(*loner), 0);
}

TEST(a_context_from_another_process_is_trusted) {
  // With or without a domain: the remote context worker frees its KV on its own hold timeout.
  HandoffDomain fleet;
  auto a = make(kCtxCfg);
  std::vector<ExecPtr> generation;
  generation.push_back(make(kGenCfg));
  generation.push_back(make(kGenCfg, &fleet));
  for (const ExecPtr& b : generation) {
    const auto prompt = seqTokens(1, 100);
    const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
    const auto st = sim::SimExecutor::decodeOpaqueState(c.opaqueState);
    CHECK(st.has_value());
    CHECK(sim::SimExecutor::madeInThisProcess(st->uid));
    const uint64_t remote = st->uid ^ (uint64_t{1} << 63);  // another process's tag, same executor number
    CHECK(!sim::SimExecutor::madeInThisProcess(remote));
    RequestSpec g = genSpec(prompt, 8, c, 5);
    g.opaqueState = sim::SimExecutor::encodeOpaqueState(remote, st->requestId, st->rank, st->promptTokens);
    const int64_t gi = b->enqueue(g);
    const Response r = finalOf(runAll(*b), gi);
    CHECK_EQ(r.finishReason, fin(FinishReason::kLength));
    CHECK_EQ(r.tokens.size(), 8u);
    CHECK_EQ(heldContexts(*a), 1);  // nobody in this process pulled it
    a->cancel(c.ctxRequestId);
  }
}

TEST(executors_outlive_their_domain_handle) {
  auto fleet = std::make_unique<HandoffDomain>();
  auto a = make(kCtxCfg, fleet.get());
  auto b = make(kGenCfg, fleet.get());
  const int64_t live = liveObjectCount();
  fleet.reset();  // the handle goes; the executors keep the domain's state
  CHECK_EQ(liveObjectCount(), live - 1);
  const auto prompt = seqTokens(1, 100);
  const Response c = runCtx(*a, ctxSpec(prompt, 8, 5, 5));
  const int64_t g = b->enqueue(genSpec(prompt, 8, c, 5));
  CHECK_EQ(usedAll(*a), 0);
  CHECK_EQ(finalOf(runAll(*b), g).finishReason, fin(FinishReason::kLength));
  // Destroyed in the other order: the generation executor serves a context whose executor is gone.
  const Response c2 = runCtx(*a, ctxSpec(prompt, 8, 6, 6));
  a.reset();
  const int64_t g2 = b->enqueue(genSpec(prompt, 8, c2, 6));
  CHECK_EQ(finalOf(runAll(*b), g2).finishReason, fin(FinishReason::kLength));
}

// ---------------------------------------------------------------------------------------------
// Wake-ups: a request that waits for KV starts as soon as KV is freed from outside an iteration
// (issue 43: a context worker's queued legs waited for the next hold deadline, with its KV free).

namespace {

/// A real-clock executor of one rank of 4 blocks (8 tokens each) whose holds last an hour: two held
/// contexts of 15 tokens (2 blocks each) fill it.
const char* kFullCfg =
    R"({"clock":{"mode":"real","time_scale":0.001},"tokens_per_block":8,"kv_blocks_per_rank":4,)"
    R"("context_hold_timeout_ms":3600000})";

/// Every response until request id's final one; fails after 30 s (the bug waits an hour).
Response awaitFinal(Executor& e, int64_t id, std::vector<Response>& got) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ResponseBatch b;
  while (finals(got).count(id) == 0 && std::chrono::steady_clock::now() < deadline) {
    e.awaitResponses(b, 16, 100000);
    for (auto& r : b.responses) got.push_back(r);
  }
  return finalOf(got, id);
}

/// Polls until pred holds (it reads the executor under its lock); fails after 30 s.
template <typename Pred>
void awaitState(Pred pred, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) throw check::Failure(std::string("timed out waiting for ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Fills the executor's KV with two held contexts, then queues a third request and waits until the
/// scheduler has routed it to the rank and found no room. The scheduler takes the lock for the whole
/// of one pass and releases it only by waiting on its condition variable, so once the queued request
/// is visible the scheduler is asleep (until the hold deadline, an hour away): the interleaving the
/// test needs, reached without any timing assumption. Returns the two held contexts' responses and
/// the queued request's id.
std::pair<std::vector<Response>, int64_t> fillAndQueue(Executor& e) {
  std::vector<Response> got;
  const int64_t a = e.enqueue(ctxSpec(seqTokens(100, 15), 4, 1, 1));
  const int64_t b = e.enqueue(ctxSpec(seqTokens(200, 15), 4, 2, 2));
  std::vector<Response> held{awaitFinal(e, a, got), awaitFinal(e, b, got)};
  CHECK(held[0].hasContextPhase && held[1].hasContextPhase);
  CHECK_EQ(heldContexts(e), 2);
  CHECK_EQ(usedAll(e), 4);
  const int64_t q = e.enqueue(ctxSpec(seqTokens(300, 15), 4, 3, 3));
  awaitState([&] { return kvStats(e).queuedRequests == 1; }, "the third request to queue for KV");
  CHECK_EQ(usedAll(e), 4);
  return {held, q};
}

}  // namespace

TEST(a_request_waiting_for_kv_starts_when_a_held_context_is_released) {
  // The worker process's /release_context (and a cancelled hold): Executor::cancel of the held context.
  auto e = make(kFullCfg);
  auto [held, q] = fillAndQueue(*e);
  e->cancel(held[0].ctxRequestId);
  std::vector<Response> got;
  CHECK(awaitFinal(*e, q, got).hasContextPhase);
  CHECK_EQ(heldContexts(*e), 2);  // the new context is held in the freed blocks
}

TEST(a_request_waiting_for_kv_starts_when_a_generation_executor_pulls_a_context) {
  HandoffDomain fleet;
  auto e = make(kFullCfg, &fleet);
  auto [held, q] = fillAndQueue(*e);
  auto gen = make(R"({"clock":{"mode":"real","time_scale":0.001},"tokens_per_block":8})", &fleet);
  const int64_t g = gen->enqueue(genSpec(seqTokens(100, 15), 4, held[0], 1));
  std::vector<Response> genGot;
  CHECK_EQ(awaitFinal(*gen, g, genGot).finishReason, fin(FinishReason::kLength));
  std::vector<Response> got;
  CHECK(awaitFinal(*e, q, got).hasContextPhase);
}

TEST(a_request_waiting_for_kv_starts_when_the_request_ahead_of_it_is_cancelled) {
  // Head of line: the first waiting request needs 3 blocks, more than a released hold frees (2); the one
  // behind it needs 1 and waits in line. Cancelling the first frees no KV but lets the second start.
  auto e = make(kFullCfg);
  std::vector<Response> got;
  const int64_t a = e->enqueue(ctxSpec(seqTokens(100, 15), 4, 1, 1));
  const int64_t b = e->enqueue(ctxSpec(seqTokens(200, 15), 4, 2, 2));
  const Response heldA = awaitFinal(*e, a, got);
  awaitFinal(*e, b, got);
  e->cancel(heldA.ctxRequestId);
  const int64_t big = e->enqueue(ctxSpec(seqTokens(300, 23), 4, 3, 3));   // 3 blocks
  const int64_t small = e->enqueue(ctxSpec(seqTokens(400, 7), 4, 4, 4));  // 1 block, behind it
  awaitState([&] { return kvStats(*e).queuedRequests == 2; }, "both requests to queue for KV");
  CHECK_EQ(usedAll(*e), 2);
  e->cancel(big);
  CHECK(awaitFinal(*e, small, got).hasContextPhase);
  CHECK_EQ(finalOf(got, big).finishReason, fin(FinishReason::kCancelled));
}
