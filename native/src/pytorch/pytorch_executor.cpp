#include "pytorch_executor.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "python_runtime.h"
#include "../core/queues.h"
#include "../core/request_check.h"

namespace affinity::pytorch {
namespace {

std::atomic<int64_t> gNextEngine{1};
constexpr int64_t kTokenizerTimeoutMs = 60'000;

}  // namespace

PyTorchExecutor::PyTorchExecutor(const PyTorchConfig& cfg)
    : cfg_(cfg), engineId_(gNextEngine.fetch_add(1)), start_(std::chrono::steady_clock::now()) {
  host_ = &PythonRuntime::instance().host(cfg_);
  const std::string error = host_->createEngine(engineId_, cfg_.toJson(), this, &engineDescribe_);
  if (!error.empty()) {
    throw std::runtime_error("pytorch backend '" + cfg_.instanceName + "': the LLM could not be created: " + error);
  }
}

PyTorchExecutor::~PyTorchExecutor() { shutdown(); }

int64_t PyTorchExecutor::nowLocked() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count();
}

int64_t PyTorchExecutor::nowUs() {
  std::lock_guard<std::mutex> lk(mu_);
  return nowLocked();
}

void PyTorchExecutor::pushErrorLocked(int64_t id, int64_t clientId, FinishReason reason, ErrorKind kind,
                                      const std::string& message) {
  auto it = live_.find(id);
  if (it == live_.end()) return;  // already finished: one final response per request
  Response r;
  r.requestId = id;
  r.clientRequestId = clientId;
  r.finishReason = static_cast<int32_t>(reason);
  r.isFinal = true;
  r.errorMessage = message;
  r.errorKind = static_cast<int32_t>(kind);
  r.metrics.arrivalUs = it->second.arrivalUs;
  r.metrics.promptTokens = it->second.promptTokens;
  r.metrics.finishUs = nowLocked();
  live_.erase(it);
  ++stats_.completedRequests;
  ready_.push_back(std::move(r));
  respCv_.notify_all();
}

int64_t PyTorchExecutor::enqueue(const RequestSpec& spec) {
  int64_t id;
  const RequestError invalid = checkRequest(spec, cfg_.numRanks);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (shutdown_) throw std::runtime_error("executor '" + cfg_.instanceName + "' is shut down");
    id = nextId_++;
    Live l;
    l.clientRequestId = spec.clientRequestId;
    l.promptTokens = static_cast<int32_t>(spec.inputTokens.size());
    l.arrivalUs = nowLocked();
    if (!invalid.any() && spec.adpRankHint >= 0 && !spec.adpRelax) {  // pinned: its rank's load from now on
      l.rank = spec.adpRankHint;
      l.rankSource = static_cast<int32_t>(RankSource::kHint);
    }
    live_.emplace(id, l);
    if (invalid.any()) {
      pushErrorLocked(id, spec.clientRequestId, FinishReason::kError, invalid.kind, invalid.message);
      return id;
    }
  }
  int32_t rc;
  try {
    rc = host_->submit(engineId_, id, RequestSpec(spec));
  } catch (const std::exception& e) {  // e.g. bad_alloc copying the request: answer it, keep nothing
    std::lock_guard<std::mutex> lk(mu_);
    pushErrorLocked(id, spec.clientRequestId, FinishReason::kError, ErrorKind::kBackendFailure,
                    std::string("request not submitted: ") + e.what());
    return id;
  }
  if (rc != pyhost::kSubmitOk) {
    std::lock_guard<std::mutex> lk(mu_);
    if (rc == pyhost::kSubmitBusy) {
      pushErrorLocked(id, spec.clientRequestId, FinishReason::kError, ErrorKind::kCapacity,
                      "the Python host has too many requests in flight (max_inflight)");
    } else {
      pushErrorLocked(id, spec.clientRequestId, FinishReason::kError, ErrorKind::kBackendFailure,
                      rc == pyhost::kSubmitStopped ? "the Python host is not running" : "the engine is shut down");
    }
  }
  return id;
}

void PyTorchExecutor::enqueueBatch(const RequestBatch& batch, int64_t* idsOut) {
  for (size_t i = 0; i < batch.specs.size(); ++i) idsOut[i] = enqueue(batch.specs[i]);
}

void PyTorchExecutor::onResponse(Response&& r) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = live_.find(r.requestId);
  if (it == live_.end()) return;  // finished already (an error or shutdown answered it)
  Live& l = it->second;
  const int64_t now = nowLocked();
  r.clientRequestId = l.clientRequestId;
  l.outputTokens += static_cast<int32_t>(r.tokens.size());
  if (l.firstTokenUs < 0 && !r.tokens.empty()) l.firstTokenUs = now;
  if (r.metrics.rank >= 0) {
    l.rank = r.metrics.rank;
    l.rankSource = r.metrics.rankSource;
  }
  r.metrics.arrivalUs = l.arrivalUs;
  r.metrics.firstTokenUs = l.firstTokenUs;
  r.metrics.promptTokens = l.promptTokens;
  r.metrics.outputTokens = l.outputTokens;
  r.metrics.rank = l.rank;
  r.metrics.rankSource = l.rank >= 0 ? l.rankSource : static_cast<int32_t>(RankSource::kExecutor);
  r.metrics.reusedTokens = std::max(0, r.metrics.reusedTokens);
  if (r.isFinal) {
    r.metrics.finishUs = now;
    ++stats_.completedRequests;
    stats_.totalPromptTokens += l.promptTokens;
    stats_.totalReusedTokens += r.metrics.reusedTokens;
    stats_.totalGeneratedTokens += l.outputTokens;
    live_.erase(it);
  }
  ready_.push_back(std::move(r));
  respCv_.notify_all();
}

int32_t PyTorchExecutor::awaitResponses(ResponseBatch& out, int32_t maxResponses, int64_t timeoutUs) {
  out.clear();
  std::unique_lock<std::mutex> lk(mu_);
  auto ready = [&] { return !ready_.empty() || (shutdown_ && live_.empty()); };
  waitReady(respCv_, lk, timeoutUs, ready);
  takeFront(ready_, out.responses, maxResponses);
  return out.size();
}

void PyTorchExecutor::cancel(int64_t requestId) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (live_.count(requestId) == 0) return;
  }
  host_->cancel(engineId_, requestId);
}

void PyTorchExecutor::onKvEvents(std::vector<KvEvent>&& events) {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& e : events) events_.push_back(std::move(e));
  while (static_cast<int64_t>(events_.size()) > cfg_.kvEventsMaxBuffered) {
    events_.pop_front();
    ++droppedEvents_;
  }
}

int32_t PyTorchExecutor::drainKvEvents(KvEventBatch& out, int32_t maxEvents) {
  out.clear();
  std::lock_guard<std::mutex> lk(mu_);
  takeFront(events_, out.events, maxEvents);
  return out.size();
}

void PyTorchExecutor::onStats(const pyhost::HostIterationStats& s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (s.iteration >= 0) stats_.iterations = std::max(stats_.iterations, s.iteration + 1);
  if (s.iterationLatencyMs >= 0) {
    stats_.lastIterationDurationUs = static_cast<int64_t>(s.iterationLatencyMs * 1000.0);
    stats_.busyUs += stats_.lastIterationDurationUs;
  }
  if (s.contextRequests >= 0) stats_.lastContextRequests = s.contextRequests;
  if (s.generationRequests >= 0) stats_.lastGenerationRequests = s.generationRequests;
  if (s.contextTokens >= 0) stats_.lastContextTokens = s.contextTokens;
  if (s.queuedRequests >= 0) queued_ = s.queuedRequests;
  stats_.lastIterationStartUs = nowLocked() - stats_.lastIterationDurationUs;
  for (const auto& r : s.ranks) {
    if (r.rank < 0 || r.rank >= cfg_.numRanks) continue;
    rankStats_[r.rank] = r;
    // the rank's prefilled tokens, summed over the iterations whose rows arrived (a cumulative count)
    if (r.contextTokens >= 0) rankContextTokens_[r.rank] += r.contextTokens;
  }
}

void PyTorchExecutor::onRejected(const std::string& stream, int64_t n) {
  std::lock_guard<std::mutex> lk(mu_);
  rejected_[stream] += n;
  stats_.rejectedPollItems += n;
}

void PyTorchExecutor::getIterationStats(IterationStats& out) {
  std::lock_guard<std::mutex> lk(mu_);
  out = stats_;
  out.activeRequests = static_cast<int32_t>(live_.size());
  // numQueuedRequests of the LLM's latest statistics, which go stale once it idles: never more than
  // the requests still live here.
  out.pendingRequests = std::min<int32_t>(queued_, out.activeRequests);
  out.heldContexts = 0;           // held contexts live in TensorRT-LLM's cache transceiver
}

void PyTorchExecutor::getKvCacheStats(int32_t rank, KvCacheStats& out) {
  if (rank < 0 || rank >= cfg_.numRanks) {
    throw std::out_of_range("rank " + std::to_string(rank) + " out of range [0, " + std::to_string(cfg_.numRanks) + ")");
  }
  std::lock_guard<std::mutex> lk(mu_);
  out = KvCacheStats();
  out.tokensPerBlock = cfg_.tokensPerBlock;
  auto it = rankStats_.find(rank);
  if (it != rankStats_.end()) {
    const auto& r = it->second;
    auto pick = [](int64_t v) { return std::max<int64_t>(0, v); };
    out.maxNumBlocks = pick(r.maxNumBlocks);
    out.freeNumBlocks = pick(r.freeNumBlocks);
    out.usedNumBlocks = pick(r.usedNumBlocks);
    out.allocTotalBlocks = pick(r.allocTotalBlocks);
    out.allocNewBlocks = pick(r.allocNewBlocks);
    out.reusedBlocks = pick(r.reusedBlocks);
    out.missedBlocks = pick(r.missedBlocks);
    out.cacheHitRate = std::max(0.0, r.cacheHitRate);
    if (r.tokensPerBlock > 0) out.tokensPerBlock = r.tokensPerBlock;
  }
  // The rank's load: the requests known to run there (pinned, or reported), and at least the rank's
  // own scheduled and paused requests from its latest statistics row. That row goes stale once the
  // LLM idles, so it never counts more than the requests still live.
  int64_t known = 0;
  for (const auto& [id, l] : live_) {
    if (l.rank == rank) ++known;
  }
  const int64_t reported = it == rankStats_.end() ? -1 : it->second.activeRequests;
  out.activeRequests = std::max(known, std::min(reported, static_cast<int64_t>(live_.size())));
  auto computed = rankContextTokens_.find(rank);
  out.contextTokensComputed = computed == rankContextTokens_.end() ? -1 : computed->second;
}

std::string PyTorchExecutor::describe() const {
  nlohmann::json j = nlohmann::json::parse(cfg_.toJson());
  j["engine"] = nlohmann::json::parse(engineDescribe_.empty() ? "{}" : engineDescribe_, nullptr, false);
  std::lock_guard<std::mutex> lk(mu_);
  j["dropped_kv_events"] = droppedEvents_;
  j["rejected_poll_items"] = nlohmann::json(rejected_);
  return j.dump();
}

int32_t PyTorchExecutor::tokenize(const std::string& text, int32_t mode, int32_t* out, int32_t capacity) {
  if (mode != pyhost::kCallTokenize && mode != pyhost::kCallTokenizeChat) {
    throw std::invalid_argument("tokenize: mode " + std::to_string(mode) + " is not 0 (text) or 1 (chat messages)");
  }
  std::vector<int32_t> ids;
  const std::string error = host_->call(engineId_, mode, text, {}, &ids, nullptr, kTokenizerTimeoutMs);
  if (!error.empty()) throw std::runtime_error("pytorch backend '" + cfg_.instanceName + "': tokenize failed: " + error);
  if (out != nullptr) std::copy_n(ids.begin(), std::min<size_t>(ids.size(), static_cast<size_t>(std::max(0, capacity))), out);
  return static_cast<int32_t>(ids.size());
}

std::string PyTorchExecutor::detokenize(const int32_t* tokens, int32_t n) {
  std::string text;
  const std::vector<int32_t> ids(tokens, tokens + std::max(0, n));
  const std::string error = host_->call(engineId_, pyhost::kCallDetokenize, "", ids, nullptr, &text, kTokenizerTimeoutMs);
  if (!error.empty()) throw std::runtime_error("pytorch backend '" + cfg_.instanceName + "': detokenize failed: " + error);
  return text;
}

void PyTorchExecutor::advanceTo(int64_t) {
  throw std::logic_error("advanceTo is only valid with clock mode \"virtual\"; the pytorch backend runs in real time");
}

int64_t PyTorchExecutor::nextIterationEndUs() {
  throw std::logic_error(
      "nextIterationEndUs is only valid with clock mode \"virtual\"; the pytorch backend runs in real time");
}

void PyTorchExecutor::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (shutdown_) return;
    shutdown_ = true;  // no enqueue from here on
  }
  host_->destroyEngine(engineId_);  // live requests get their final (cancelled) responses meanwhile
  std::lock_guard<std::mutex> lk(mu_);
  failAllLocked(FinishReason::kCancelled, ErrorKind::kCancelled, "executor shut down (no answer from the Python host)");
  respCv_.notify_all();
}

void PyTorchExecutor::failAllLocked(FinishReason reason, ErrorKind kind, const std::string& message) {
  std::vector<std::pair<int64_t, int64_t>> left;
  for (const auto& [id, l] : live_) left.emplace_back(id, l.clientRequestId);
  std::sort(left.begin(), left.end());
  for (const auto& [id, client] : left) pushErrorLocked(id, client, reason, kind, message);
}

void PyTorchExecutor::onHostStopped(const std::string& why) {
  std::lock_guard<std::mutex> lk(mu_);
  failAllLocked(FinishReason::kError, ErrorKind::kBackendFailure, why);
}

bool PyTorchExecutor::isShutdown() const {
  std::lock_guard<std::mutex> lk(mu_);
  return shutdown_;
}

}  // namespace affinity::pytorch
