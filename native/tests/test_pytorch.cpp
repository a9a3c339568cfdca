// The "pytorch" backend against the stand-in tensorrt_llm package (native/tests/python): the
// embedded interpreter, the request mapping onto LLM.generate_async, context phase round trips,
// errors, cancellation, shutdown and concurrent enqueues. One interpreter per process, so the
// tests share it and the last one stops it.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "check.h"
#include "sim_util.h"

using namespace affinity;
using namespace testutil;
using nlohmann::json;

namespace {

std::string recordPath() {
  static const std::string p = [] {
    std::string path = "/tmp/affinity-test-pytorch-" + std::to_string(::getpid()) + ".jsonl";
    std::remove(path.c_str());
    return path;
  }();
  return p;
}

json baseConfig(const std::string& modelOptions = "") {
  json c;
  c["python"] = AFFINITY_PYTHON;
  c["libpython"] = AFFINITY_LIBPYTHON;
  c["host_library"] = AFFINITY_PYHOST_LIB;
  c["python_path"] = {AFFINITY_STANDIN_DIR};
  c["model"] = "standin?record=" + recordPath() + modelOptions;
  c["llm_args"] = {{"tensor_parallel_size", 2}, {"enable_attention_dp", true}, {"kv_cache_config", {{"tokens_per_block", 4}}}};
  c["kv_events"] = {{"poll_interval_ms", 5}};
  c["stats_poll_interval_ms"] = 5;
  return c;
}

ExecPtr makePy(const json& cfg) { return ExecPtr(createExecutor("pytorch", cfg.dump())); }

/// Waits for the final response of request id (collecting its chunks); fails after 20 s.
std::vector<Response> until(Executor& e, int64_t id, std::map<int64_t, std::vector<Response>>& seen) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    auto& rs = seen[id];
    if (!rs.empty() && rs.back().isFinal) return rs;
    ResponseBatch b;
    e.awaitResponses(b, 100, 100000);
    for (auto& r : b.responses) seen[r.requestId].push_back(std::move(r));
  }
  throw check::Failure("no final response for request " + std::to_string(id));
}

std::vector<Response> run(Executor& e, const RequestSpec& s) {
  std::map<int64_t, std::vector<Response>> seen;
  return until(e, e.enqueue(s), seen);
}

/// The generate_async calls the stand-in recorded, in order.
std::vector<json> calls() {
  std::vector<json> out;
  for (const auto& line : check::readLines(recordPath())) {
    json j = json::parse(line);
    if (j["call"] == "generate_async") out.push_back(j);
  }
  return out;
}

/// The stand-in's k-th generated token (k from 0) for a prompt: 1 + (sum % 997 + 7 (k + 1)) % 1000.
int32_t standinToken(const std::vector<int32_t>& prompt, int32_t k) {
  int64_t sum = 0;
  for (int32_t t : prompt) sum += t;
  return static_cast<int32_t>(1 + (sum % 997 + 7 * (k + 1)) % 1000);
}

RequestSpec contextOnly(const std::vector<int32_t>& prompt, int64_t clientId = 0) {
  RequestSpec s = spec(prompt, 8, clientId);
  s.setRequestType(static_cast<int32_t>(RequestType::kContextOnly));
  return s;
}

RequestSpec generationFor(const std::vector<int32_t>& prompt, const Response& ctx, int32_t maxNew) {
  RequestSpec g = spec(prompt, maxNew);
  g.setRequestType(static_cast<int32_t>(RequestType::kGenerationOnly));
  g.setContextPhase(ctx.ctxRequestId, ctx.ctxDpRank, ctx.firstGenTokens.data(),
                    static_cast<int32_t>(ctx.firstGenTokens.size()), ctx.opaqueState.data(),
                    static_cast<int32_t>(ctx.opaqueState.size()));
  return g;
}

/// Polls the executor's statistics until done(kv of each rank) or 10 s pass.
template <typename F>
void untilStats(Executor& e, F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<KvCacheStats> kv(static_cast<size_t>(e.numRanks()));
    for (int32_t r = 0; r < e.numRanks(); ++r) e.getKvCacheStats(r, kv[static_cast<size_t>(r)]);
    if (done(kv)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int32_t source(RankSource s) { return static_cast<int32_t>(s); }

}  // namespace

TEST(config_errors_name_the_key) {
  json c = baseConfig();
  c.erase("python");
  CHECK_THROWS(makePy(c), "pytorch config: 'python': required");
  c = baseConfig();
  c["num_ranks"] = 3;
  CHECK_THROWS(makePy(c), "'num_ranks': 3 disagrees with llm_args");
  c = baseConfig();
  c["bogus"] = 1;
  CHECK_THROWS(makePy(c), "pytorch config: 'bogus': unknown key");
  c = baseConfig();
  c["host_library"] = "/nonexistent/libaffinity_pyhost.so";
  CHECK_THROWS(makePy(c), "cannot load the Python host library");
}

TEST(llm_start_failure_carries_the_traceback) {
  CHECK_THROWS(makePy(baseConfig("&fail=init")), "stand-in LLM refused to start (fail=init)");
}

TEST(routing_intent_reaches_generate_async) {
  ExecPtr e = makePy(baseConfig());
  CHECK_EQ(e->numRanks(), 2);
  CHECK_EQ(e->tokensPerBlock(), 4);
  RequestSpec s = spec(seqTokens(10, 9), 3, 77);
  setConv(s, "child-1");
  setAffinity(s, "parent-1");
  s.setAdpRankHint(1, false);
  const std::string salt = "tenant";
  s.setCacheSalt(salt.data(), static_cast<int32_t>(salt.size()));
  s.setStreaming(true);
  auto rs = run(*e, s);
  CHECK(rs.size() == 3);  // two chunks, then the final response with the last token
  CHECK_EQ(rs.back().clientRequestId, 77);
  CHECK_EQ(rs.back().finishReason, static_cast<int32_t>(FinishReason::kLength));
  CHECK_EQ(rs.back().metrics.outputTokens, 3);
  const json call = calls().back();
  CHECK_EQ(call["conversation_params"]["conversation_id"].get<std::string>(), "child-1");
  CHECK_EQ(call["scheduling_params"]["subagent_affinity_id"].get<std::string>(), "parent-1");
  CHECK_EQ(call["scheduling_params"]["attention_dp_rank"].get<int>(), 1);
  CHECK_EQ(call["scheduling_params"]["attention_dp_relax"].get<bool>(), false);
  CHECK_EQ(call["cache_salt"].get<std::string>(), "tenant");
  CHECK_EQ(call["sampling_params"]["max_tokens"].get<int>(), 3);
  CHECK_EQ(call["sampling_params"]["detokenize"].get<bool>(), false);
  CHECK(call["disaggregated_params"].is_null());
}

TEST(retention_and_priority_reach_generate_async) {
  ExecPtr e = makePy(baseConfig());
  RequestSpec s = spec(seqTokens(10, 12), 2);
  s.addRetentionRange(8, kNone, 10, kNone);  // out of order: KvCacheRetentionConfig sorts them by start
  s.addRetentionRange(0, 8, 90, 30000);
  s.setDecodeRetention(5, 2500);
  s.setPriority(0.8f);
  CHECK_EQ(run(*e, s).back().errorMessage, "");
  json call = calls().back();
  CHECK(std::abs(call["priority"].get<double>() - 0.8) < 1e-6);  // the facade's float, as a Python float
  const json& kv = call["kv_cache_retention_config"];
  // The stand-in records the timedelta durations in milliseconds.
  const json want = json::parse(R"({
    "token_range_retention_configs": [
      {"token_start": 0, "token_end": 8, "priority": 90, "duration_ms": 30000.0},
      {"token_start": 8, "token_end": null, "priority": 10, "duration_ms": null}],
    "decode_retention_priority": 5, "decode_duration_ms": 2500.0})");
  CHECK_EQ(kv.dump(), want.dump());
  // The decode retention alone: no ranges, no duration.
  RequestSpec d = spec(seqTokens(20, 12), 2);
  d.setDecodeRetention(80, kNone);
  CHECK_EQ(run(*e, d).back().errorMessage, "");
  call = calls().back();
  CHECK_EQ(call["kv_cache_retention_config"]["token_range_retention_configs"].size(), 0u);
  CHECK_EQ(call["kv_cache_retention_config"]["decode_retention_priority"].get<int>(), 80);
  CHECK(call["kv_cache_retention_config"]["decode_duration_ms"].is_null());
  // Without retention: none, and the default priority.
  CHECK_EQ(run(*e, spec(seqTokens(30, 12), 2)).back().errorMessage, "");
  call = calls().back();
  CHECK(call["kv_cache_retention_config"].is_null());
  CHECK_EQ(call["priority"].get<double>(), 0.5);
  // What TensorRT-LLM would refuse is a bad request before it reaches Python.
  const size_t before = calls().size();
  RequestSpec overlap = spec(seqTokens(40, 12), 2);
  overlap.addRetentionRange(0, 64, 50, kNone);
  overlap.addRetentionRange(60, 80, 50, kNone);
  RequestSpec urgent = spec(seqTokens(40, 12), 2);
  urgent.setPriority(1.5f);
  for (const RequestSpec* bad : {&overlap, &urgent}) {
    const Response r = run(*e, *bad).back();
    CHECK_EQ(r.finishReason, static_cast<int32_t>(FinishReason::kError));
    CHECK_EQ(r.errorKind, kind(ErrorKind::kBadRequest));
  }
  CHECK_EQ(calls().size(), before);
}

TEST(context_phase_params_round_trip) {
  ExecPtr ctx = makePy(baseConfig());
  ExecPtr gen = makePy(baseConfig());
  RequestSpec c = spec(seqTokens(100, 12), 8, 5);
  c.setRequestType(static_cast<int32_t>(RequestType::kContextOnly));
  c.setAdpRankHint(1, true);
  const Response cr = run(*ctx, c).back();
  CHECK(cr.hasContextPhase);
  CHECK_EQ(cr.ctxDpRank, 1);
  CHECK_EQ(cr.metrics.rank, 1);
  CHECK(cr.opaqueState.rfind("standin-ctx:", 0) == 0);
  CHECK_EQ(cr.firstGenTokens.size(), 1u);
  RequestSpec g = spec(seqTokens(100, 12), 4, 5);
  g.setRequestType(static_cast<int32_t>(RequestType::kGenerationOnly));
  g.setContextPhase(cr.ctxRequestId, cr.ctxDpRank, cr.firstGenTokens.data(), 1, cr.opaqueState.data(),
                    static_cast<int32_t>(cr.opaqueState.size()));
  const auto gr = run(*gen, g);
  CHECK_EQ(gr.back().errorMessage, "");
  CHECK_EQ(gr.back().tokens.front(), cr.firstGenTokens.front());
  const json call = calls().back();
  CHECK_EQ(call["disaggregated_params"]["request_type"].get<std::string>(), "generation_only");
  CHECK_EQ(call["disaggregated_params"]["ctx_request_id"].get<int64_t>(), cr.ctxRequestId);
  CHECK_EQ(call["disaggregated_params"]["ctx_dp_rank"].get<int>(), 1);
  // Streamed, the generation response starts with the context's first token too (TensorRT-LLM leaves
  // it out of its first diff).
  const Response cr2 = run(*ctx, c).back();
  RequestSpec gs = spec(seqTokens(100, 12), 4, 6);
  gs.setRequestType(static_cast<int32_t>(RequestType::kGenerationOnly));
  gs.setStreaming(true);
  gs.setContextPhase(cr2.ctxRequestId, cr2.ctxDpRank, cr2.firstGenTokens.data(), 1, cr2.opaqueState.data(),
                     static_cast<int32_t>(cr2.opaqueState.size()));
  std::vector<int32_t> streamed;
  for (const auto& r : run(*gen, gs)) streamed.insert(streamed.end(), r.tokens.begin(), r.tokens.end());
  CHECK_EQ(streamed.size(), 4u);
  CHECK_EQ(streamed.front(), cr2.firstGenTokens.front());
  // A second pull of the same context fails in the LLM: the error comes back as a final response.
  const auto again = run(*gen, g);
  CHECK_EQ(again.back().finishReason, static_cast<int32_t>(FinishReason::kError));
  CHECK_EQ(again.back().errorKind, kind(ErrorKind::kBackendFailure));  // the LLM's exception: not classified
  CHECK(again.back().errorMessage.find("no context") != std::string::npos);
}

TEST(python_errors_become_error_responses_and_the_next_request_works) {
  ExecPtr e = makePy(baseConfig());
  const auto bad = run(*e, spec({1, 2, 999999}, 4));
  CHECK_EQ(bad.back().finishReason, static_cast<int32_t>(FinishReason::kError));
  CHECK(bad.back().errorMessage.find("Traceback") != std::string::npos);
  CHECK(bad.back().errorMessage.find("the prompt asked for an error") != std::string::npos);
  CHECK_EQ(bad.back().errorKind, kind(ErrorKind::kBackendFailure));
  const Response ok = run(*e, spec({1, 2, 3}, 2)).back();
  CHECK_EQ(ok.finishReason, static_cast<int32_t>(FinishReason::kLength));
  CHECK_EQ(ok.errorKind, kind(ErrorKind::kNone));
  const Response empty = run(*e, spec({}, 2)).back();
  CHECK(empty.errorMessage.find("input_token_ids is empty") != std::string::npos);
  CHECK_EQ(empty.errorKind, kind(ErrorKind::kBadRequest));
}

TEST(arguments_the_llm_refuses_are_bad_requests) {
  json c = baseConfig();
  c["llm_args"]["max_num_tokens"] = 8;
  ExecPtr e = makePy(c);
  const Response r = run(*e, spec(seqTokens(1, 9), 2)).back();
  CHECK_EQ(r.finishReason, static_cast<int32_t>(FinishReason::kError));
  CHECK_EQ(r.errorKind, kind(ErrorKind::kBadRequest));  // a ValueError from generate_async
  CHECK(r.errorMessage.find("exceeds max_num_tokens 8") != std::string::npos);
  CHECK_EQ(run(*e, spec(seqTokens(1, 8), 2)).back().errorKind, kind(ErrorKind::kNone));
}

TEST(cancel_ends_a_request_once) {
  ExecPtr e = makePy(baseConfig("&delay_ms=20"));
  RequestSpec s = spec(seqTokens(1, 8), 1000);
  s.setStreaming(true);
  std::map<int64_t, std::vector<Response>> seen;
  const int64_t id = e->enqueue(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  e->cancel(id);
  const auto rs = until(*e, id, seen);
  CHECK_EQ(rs.back().finishReason, static_cast<int32_t>(FinishReason::kCancelled));
  CHECK_EQ(rs.back().errorKind, kind(ErrorKind::kCancelled));
  int finals = 0;
  for (const auto& r : rs) finals += r.isFinal ? 1 : 0;
  CHECK_EQ(finals, 1);
}

TEST(cancel_right_after_enqueue_ends_the_request_once) {
  ExecPtr e = makePy(baseConfig("&delay_ms=20"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(e->enqueue(spec(seqTokens(i, 6), 1000, i)));
    e->cancel(ids.back());  // usually drained with its submit: the task is cancelled before it starts
  }
  std::map<int64_t, std::vector<Response>> seen;
  for (int64_t id : ids) {
    const auto rs = until(*e, id, seen);
    CHECK_EQ(rs.back().finishReason, static_cast<int32_t>(FinishReason::kCancelled));
  }
  IterationStats st;
  e->getIterationStats(st);
  CHECK_EQ(st.activeRequests, 0);
}

TEST(kv_events_and_stats_arrive) {
  ExecPtr e = makePy(baseConfig("&delay_ms=20"));  // the request outlasts several 5 ms polls
  RequestSpec s = spec(seqTokens(500, 16), 2);
  s.setAdpRankHint(0, false);
  run(*e, s);
  // The request's events arrive without another request after it (the LLM's event stream ends
  // after a quiet timeout until reopened: a sub-agent must see its parent's blocks).
  std::vector<KvEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  IterationStats st;
  while ((events.size() < 4 || st.iterations == 0) && std::chrono::steady_clock::now() < deadline) {
    KvEventBatch b;
    e->drainKvEvents(b, 100);
    for (auto& ev : b.events) events.push_back(ev);
    e->getIterationStats(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.setClientRequestId(2);
  const Response second = run(*e, s).back();
  CHECK_EQ(second.metrics.reusedTokens, 16);  // the stand-in's cached_tokens
  CHECK_EQ(events.size(), 4u);  // 16 tokens = 4 blocks of 4, stored once
  CHECK_EQ(events[0].type, static_cast<int32_t>(KvEventType::kStored));
  CHECK_EQ(events[0].tokens.size(), 4u);
  CHECK_EQ(events[1].parentHash, events[0].blockHashes[0]);
  CHECK(st.iterations > 0);
  KvCacheStats kv;
  e->getKvCacheStats(0, kv);
  CHECK_EQ(kv.maxNumBlocks, 1000);
  CHECK_EQ(kv.activeRequests, 0);  // its last statistics said 1, but nothing is live any more
  CHECK_THROWS(e->getKvCacheStats(2, kv), "out of range");
  CHECK(e->describe().find("0.0.0+affinity.standin") != std::string::npos);
  CHECK_THROWS(e->advanceTo(1), "virtual");
}

TEST(the_model_tokenizer_is_the_llms) {
  ExecPtr e = makePy(baseConfig());
  std::vector<int32_t> out(64);
  CHECK_EQ(e->tokenize("hi", 0, out.data(), 64), 3);  // BOS + 2 characters
  CHECK_EQ(out[0], 1);
  CHECK_EQ(out[1], static_cast<int32_t>('h'));
  const int32_t n = e->tokenize(R"([{"role":"user","content":"hi"}])", 1, out.data(), 4);
  CHECK_EQ(n, 1 + static_cast<int32_t>(std::string("<|user|>hi\n<|assistant|>").size()));  // the count, beyond capacity
  const std::vector<int32_t> ids = {1, 'o', 'k'};
  CHECK_EQ(e->detokenize(ids.data(), 3), "ok");
  CHECK_THROWS(e->tokenize("x", 7, out.data(), 64), "mode 7");
  CHECK_THROWS(e->tokenize("[not json", 1, out.data(), 64), "JSONDecodeError");
  ExecPtr sim = ExecPtr(createExecutor("sim", "{}"));
  CHECK_THROWS(sim->tokenize("x", 0, out.data(), 64), "no model tokenizer");
}

TEST(queue_and_pinned_rank_load) {
  json c = baseConfig("&delay_ms=20");
  c["llm_args"]["max_batch_size"] = 1;  // the stand-in reports requests beyond it as queued
  ExecPtr e = makePy(c);
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    RequestSpec s = spec(seqTokens(i * 10, 4), 1000, i);
    s.setAdpRankHint(0, false);
    ids.push_back(e->enqueue(s));
  }
  IterationStats st;
  KvCacheStats kv;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    e->getIterationStats(st);
    e->getKvCacheStats(0, kv);
    if (st.pendingRequests == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK_EQ(st.pendingRequests, 2);  // numQueuedRequests (rank 0's row)
  CHECK_EQ(kv.activeRequests, 3);   // all three are pinned to rank 0: one scheduled, two queued
  for (int64_t id : ids) e->cancel(id);
  std::map<int64_t, std::vector<Response>> seen;
  for (int64_t id : ids) until(*e, id, seen);
  e->getIterationStats(st);
  CHECK_EQ(st.pendingRequests, 0);  // stale statistics never outlive the requests
}

TEST(a_busy_statistics_stream_is_delivered_while_it_flows) {
  // A row every 2 ms, polled every 5 ms: the stream never goes quiet while the request runs, and
  // rows must still arrive (each poll round ends after its interval).
  ExecPtr e = makePy(baseConfig("&delay_ms=2"));
  RequestSpec s = spec(seqTokens(1, 4), 100000);  // runs for minutes unless cancelled
  s.setStreaming(true);
  const int64_t id = e->enqueue(s);
  IterationStats st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (st.iterations == 0 && std::chrono::steady_clock::now() < deadline) {
    e->getIterationStats(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(st.iterations > 0);
  CHECK_EQ(st.activeRequests, 1);  // observed while the request still runs
  e->cancel(id);
  std::map<int64_t, std::vector<Response>> seen;
  until(*e, id, seen);
}

TEST(a_context_output_without_ctx_dp_rank_falls_back_to_the_pinned_rank_or_the_kv_events) {
  // Releases whose context output has no ctx_dp_rank (tensorrt_llm/executor/result.py @ a678b91a).
  json c = baseConfig("&ctx_dp_rank=omit");
  c["kv_events"]["rank_wait_ms"] = 20000;  // ends as soon as the events tell; no timing in the assertions
  ExecPtr e = makePy(c);
  // Pinned (a hint that is not relaxed): that rank.
  RequestSpec pinned = contextOnly(seqTokens(300, 12), 1);
  pinned.setAdpRankHint(1, false);
  const Response p = run(*e, pinned).back();
  CHECK(p.hasContextPhase);
  CHECK_EQ(p.ctxDpRank, -1);  // the context phase params say what the LLM said
  CHECK_EQ(p.metrics.rank, 1);
  CHECK_EQ(p.metrics.rankSource, source(RankSource::kHint));
  // Not pinned: the rank whose KV events hold its prompt blocks.
  for (int i = 0; i < 3; ++i) {
    RequestSpec free = contextOnly(seqTokens(400 + 50 * i, 12), 2 + i);
    free.setAdpRankHint(i % 2, true);  // relaxed: the LLM may place it elsewhere
    const Response r = run(*e, free).back();
    const int served = calls().back()["rank"].get<int>();
    CHECK_EQ(r.metrics.rank, served);
    CHECK_EQ(r.metrics.rankSource, source(RankSource::kKvEvents));
  }
  // A prompt shorter than a block leaves no event behind: unknown.
  const Response tiny = run(*e, contextOnly({7, 8, 9}, 9)).back();
  CHECK_EQ(tiny.metrics.rank, -1);
  CHECK_EQ(tiny.metrics.rankSource, source(RankSource::kExecutor));
  // A single-rank LLM has one rank to serve on.
  json one = baseConfig("&ctx_dp_rank=omit");
  one["llm_args"] = {{"kv_cache_config", {{"tokens_per_block", 4}}}};
  ExecPtr single = makePy(one);
  const Response s = run(*single, contextOnly(seqTokens(500, 12))).back();
  CHECK_EQ(s.metrics.rank, 0);
  CHECK_EQ(s.metrics.rankSource, source(RankSource::kOnlyRank));
}

TEST(the_rank_the_llm_reports_wins_over_every_fallback) {
  ExecPtr e = makePy(baseConfig());
  RequestSpec pinned = contextOnly(seqTokens(600, 12));
  pinned.setAdpRankHint(0, false);
  const Response r = run(*e, pinned).back();
  CHECK_EQ(r.ctxDpRank, 0);
  CHECK_EQ(r.metrics.rank, 0);
  CHECK_EQ(r.metrics.rankSource, source(RankSource::kExecutor));
}

TEST(a_context_only_output_is_context_complete_not_end_id) {
  ExecPtr e = makePy(baseConfig());
  const Response r = run(*e, contextOnly(seqTokens(700, 12))).back();  // the LLM says 'not_finished'
  CHECK(r.hasContextPhase);
  CHECK_EQ(r.finishReason, static_cast<int32_t>(FinishReason::kLength));  // as the CPU executor's contexts
  CHECK_EQ(r.tokens.size(), 1u);
}

TEST(every_disaggregated_params_field_reaches_the_generation_llm) {
  // The Python KV-transfer path needs ctx_info_endpoint and disagg_request_id besides the opaque state.
  json c = baseConfig();
  c["llm_args"]["cache_transceiver_config"] = {{"backend", "NIXL"}, {"transceiver_runtime", "PYTHON"}};
  ExecPtr ctx = makePy(c);
  ExecPtr gen = makePy(c);
  const std::vector<int32_t> prompt = seqTokens(800, 12);
  const Response cr = run(*ctx, contextOnly(prompt)).back();
  CHECK(cr.hasContextPhase);
  CHECK(cr.opaqueState.find("affinity-disagg-state") != std::string::npos);  // the extra fields ride along
  const auto gr = run(*gen, generationFor(prompt, cr, 3));
  CHECK_EQ(gr.back().errorMessage, "");
  CHECK_EQ(gr.back().finishReason, static_cast<int32_t>(FinishReason::kLength));
  const json dp = calls().back()["disaggregated_params"];
  CHECK_EQ(dp["request_type"].get<std::string>(), "generation_only");
  CHECK_EQ(dp["ctx_request_id"].get<int64_t>(), cr.ctxRequestId);
  CHECK(dp["ctx_info_endpoint"].get<std::string>().rfind("standin-transfer://", 0) == 0);
  CHECK(dp["disagg_request_id"].is_number_integer());
  // The generation LLM took the context: it got the context LLM's own opaque state back (not ours).
  // The C++ transfer path: nothing else to carry, so the LLM's opaque state crosses byte for byte.
  ExecPtr plain = makePy(baseConfig());
  const Response pr = run(*plain, contextOnly(prompt)).back();
  CHECK(pr.opaqueState.rfind("standin-ctx:", 0) == 0);
}

TEST(stop_tokens_are_emitted_never_and_keep_their_finish_reason) {
  ExecPtr e = makePy(baseConfig());
  const std::vector<int32_t> prompt = seqTokens(900, 6);
  const int32_t third = standinToken(prompt, 2);
  for (bool streaming : {false, true}) {
    for (bool endId : {false, true}) {
      RequestSpec s = spec(prompt, 10);
      s.setStreaming(streaming);
      if (endId) {
        s.setEndId(third);  // the stand-in keeps an end id in token_ids, as some releases do
      } else {
        s.setStopTokenIds(&third, 1);  // upstream strips a stop token unless include_stop_str_in_output
      }
      std::vector<int32_t> got;
      int finals = 0;
      const auto rs = run(*e, s);
      for (const auto& r : rs) {
        got.insert(got.end(), r.tokens.begin(), r.tokens.end());
        finals += r.isFinal ? 1 : 0;
      }
      CHECK_EQ(finals, 1);
      CHECK_EQ(got.size(), 2u);
      CHECK_EQ(got[0], standinToken(prompt, 0));
      CHECK_EQ(got[1], standinToken(prompt, 1));
      CHECK_EQ(rs.back().finishReason, static_cast<int32_t>(endId ? FinishReason::kEndId : FinishReason::kStop));
      CHECK_EQ(rs.back().metrics.outputTokens, 2);
    }
  }
}

TEST(cached_tokens_are_the_final_responses) {
  // TensorRT-LLM sets cached_tokens on every response (0 before the first): a streamed request reports
  // the value of its last response.
  ExecPtr e = makePy(baseConfig());
  RequestSpec s = spec(seqTokens(1000, 16), 3);
  s.setAdpRankHint(1, false);
  run(*e, s);
  s.setStreaming(true);
  const auto rs = run(*e, s);
  CHECK_EQ(rs.back().metrics.reusedTokens, 16);
}

TEST(a_ranks_load_comes_from_its_own_row_fields_not_the_copied_ones) {
  // Every rank's row copies numActiveRequests and kvCacheStats from rank 0's (iteration_stats.py
  // @ b1179014): two requests on rank 1 show only in rank 1's inflightBatchingStats.
  ExecPtr e = makePy(baseConfig("&delay_ms=20"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    RequestSpec s = spec(seqTokens(1100 + 20 * i, 4), 100000, i);
    s.setAdpRankHint(1, true);  // relaxed: the backend does not count it as pinned
    s.setStreaming(true);
    ids.push_back(e->enqueue(s));
  }
  untilStats(*e, [](const std::vector<KvCacheStats>& kv) { return kv[1].activeRequests == 2; });
  KvCacheStats kv0, kv1;
  e->getKvCacheStats(0, kv0);
  e->getKvCacheStats(1, kv1);
  CHECK_EQ(kv1.activeRequests, 2);
  CHECK_EQ(kv0.activeRequests, 0);
  CHECK_EQ(kv1.maxNumBlocks, 0);  // rank 0's KV figures, copied into rank 1's row: not rank 1's
  CHECK_EQ(kv0.maxNumBlocks, 1000);
  // the prompts' tokens computed on rank 1 (the stand-in counts a whole prompt), none on rank 0
  untilStats(*e, [](const std::vector<KvCacheStats>& kv) { return kv[1].contextTokensComputed == 8; });
  e->getKvCacheStats(0, kv0);
  e->getKvCacheStats(1, kv1);
  CHECK_EQ(kv1.contextTokensComputed, 8);
  CHECK_EQ(kv0.contextTokensComputed, 0);
  for (int64_t id : ids) e->cancel(id);
  std::map<int64_t, std::vector<Response>> seen;
  for (int64_t id : ids) until(*e, id, seen);
}

TEST(older_releases_report_rank_0_alone_and_pinned_requests_count_where_they_run) {
  ExecPtr e = makePy(baseConfig("&delay_ms=20&stats=rank0"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    RequestSpec s = spec(seqTokens(1200 + 20 * i, 4), 100000, i);
    s.setAdpRankHint(1, false);
    s.setStreaming(true);
    ids.push_back(e->enqueue(s));
  }
  KvCacheStats kv1;
  e->getKvCacheStats(1, kv1);
  CHECK_EQ(kv1.activeRequests, 2);  // the backend's own requests in flight there, no statistics needed
  IterationStats st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (st.iterations == 0 && std::chrono::steady_clock::now() < deadline) {
    e->getIterationStats(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(st.iterations > 0);  // rank 0's rows arrive, and say nothing of rank 1
  e->getKvCacheStats(1, kv1);
  CHECK_EQ(kv1.activeRequests, 2);
  CHECK_EQ(kv1.contextTokensComputed, -1);  // no row of rank 1's: not reported
  for (int64_t id : ids) e->cancel(id);
  std::map<int64_t, std::vector<Response>> seen;
  for (int64_t id : ids) until(*e, id, seen);
  e->getKvCacheStats(1, kv1);
  CHECK_EQ(kv1.activeRequests, 0);
}

TEST(items_of_an_unexpected_shape_are_skipped_counted_and_polling_goes_on) {
  // The stand-in puts a list, an event without a block hash and one with a non-hex hash into the KV
  // event stream, and a list into the statistics stream, before the request's own items.
  ExecPtr e = makePy(baseConfig("&malformed=1"));
  RequestSpec s = spec(seqTokens(1300, 8), 2);
  s.setAdpRankHint(0, false);
  run(*e, s);
  std::vector<KvEvent> events;
  IterationStats st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((events.size() < 2 || st.rejectedPollItems < 4) && std::chrono::steady_clock::now() < deadline) {
    KvEventBatch b;
    e->drainKvEvents(b, 100);
    for (auto& ev : b.events) events.push_back(ev);
    e->getIterationStats(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK_EQ(events.size(), 2u);  // the request's two blocks, after the malformed items
  CHECK_EQ(st.rejectedPollItems, 4);
  const json d = json::parse(e->describe());
  CHECK_EQ(d["rejected_poll_items"]["kv_events"].get<int>(), 3);
  CHECK_EQ(d["rejected_poll_items"]["stats"].get<int>(), 1);
  // Later items still arrive: the pollers did not stop.
  s.setInputTokens(seqTokens(1400, 8).data(), 8);
  run(*e, s);
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  size_t more = 0;
  while (more < 2 && std::chrono::steady_clock::now() < later) {
    KvEventBatch b;
    more += static_cast<size_t>(e->drainKvEvents(b, 100));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK_EQ(more, 2u);
}

TEST(many_threads_enqueue_at_once) {
  ExecPtr e = makePy(baseConfig());
  constexpr int kThreads = 8, kEach = 100;
  std::vector<std::thread> ts;
  std::atomic<int> enqueued{0};
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        e->enqueue(spec(seqTokens(t * 1000 + i, 5), 2, t * kEach + i));
        ++enqueued;
      }
    });
  }
  for (auto& t : ts) t.join();
  std::map<int64_t, int> finals;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (static_cast<int>(finals.size()) < kThreads * kEach && std::chrono::steady_clock::now() < deadline) {
    ResponseBatch b;
    e->awaitResponses(b, 1000, 100000);
    for (const auto& r : b.responses) {
      if (r.isFinal) ++finals[r.clientRequestId];
      CHECK_EQ(r.errorMessage, "");
    }
  }
  CHECK_EQ(static_cast<int>(finals.size()), kThreads * kEach);
  for (const auto& [client, n] : finals) CHECK_EQ(n, 1);
}

TEST(shutdown_finishes_live_requests_once) {
  ExecPtr e = makePy(baseConfig("&delay_ms=50"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(e->enqueue(spec(seqTokens(i, 6), 1000, i)));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  e->shutdown();
  CHECK_THROWS(e->enqueue(spec({1}, 1)), "shut down");
  std::map<int64_t, int> finals;
  for (auto& r : take(*e)) {
    if (r.isFinal) {
      ++finals[r.requestId];
      CHECK_EQ(r.finishReason, static_cast<int32_t>(FinishReason::kCancelled));
      CHECK_EQ(r.errorKind, kind(ErrorKind::kCancelled));
      CHECK(r.errorMessage.find("no answer from the Python host") == std::string::npos);  // the driver answered
    }
  }
  CHECK_EQ(finals.size(), ids.size());
  for (const auto& [id, n] : finals) CHECK_EQ(n, 1);
  int shutdowns = 0;
  for (const auto& line : check::readLines(recordPath())) shutdowns += json::parse(line)["call"] == "shutdown";
  CHECK(shutdowns >= 1);  // the LLM itself was shut down
}

TEST(zz_stopping_the_host_is_final) {
  ExecPtr e = makePy(baseConfig("&delay_ms=50"));
  const int64_t id = e->enqueue(spec(seqTokens(1, 4), 1000));
  CHECK_EQ(shutdownBackends(10000), 0);  // engines first, then Py_FinalizeEx
  std::map<int64_t, std::vector<Response>> seen;
  CHECK_EQ(until(*e, id, seen).back().finishReason, static_cast<int32_t>(FinishReason::kCancelled));
  e.reset();
  CHECK_THROWS(makePy(baseConfig()), "starts once per process");
  std::remove(recordPath().c_str());
}
