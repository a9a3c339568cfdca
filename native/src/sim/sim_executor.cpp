#include "sim_executor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "hash.h"
#include "../core/queues.h"

namespace affinity::sim {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// A random tag of this process, drawn once: the upper 32 bits of every executor uid made here, so
/// that a context's opaque state tells whether it was made in this process.
uint32_t processTag() {
  static const uint32_t tag = [] {
    std::random_device rd;
    const auto t = static_cast<uint32_t>(splitmix64((static_cast<uint64_t>(rd()) << 32) ^ rd()));
    return t == 0 ? 1u : t;
  }();
  return tag;
}

uint64_t newUid() {
  static std::atomic<uint32_t> counter{0};
  return (static_cast<uint64_t>(processTag()) << 32) | (counter.fetch_add(1) + 1);  // never 0
}

int64_t blocksFor(int64_t tokens, int32_t tpb) { return (tokens + tpb - 1) / tpb; }

}  // namespace

SimExecutor::SimExecutor(const SimConfig& cfg, std::shared_ptr<detail::HandoffRegistry> domain)
    : cfg_(cfg),
      timing_(cfg.timing),
      uid_(newUid()),
      domain_(std::move(domain)),
      wallStart_(std::chrono::steady_clock::now()),
      queued_(static_cast<size_t>(cfg.numRanks)),
      running_(static_cast<size_t>(cfg.numRanks)),
      contextTokensComputed_(static_cast<size_t>(cfg.numRanks), 0),
      router_(cfg.adpRouter, cfg.numRanks, cfg.maxNumActiveRequests),
      nextEventIds_(static_cast<size_t>(cfg.numRanks), 0) {
  auto sink = [this](KvEvent&& e) {
    if (!cfg_.kvEventsEnabled) return;
    // One sequence per rank, as TensorRT-LLM numbers each attention-DP rank's KVCacheEventManager: a consumer
    // finds a gap per rank as previous + 1.
    e.eventId = nextEventIds_[static_cast<size_t>(e.rank)]++;
    if (e.windowSize == 0) e.windowSize = static_cast<int32_t>(std::min<int64_t>(cfg_.kvBlocksPerRank * cfg_.tokensPerBlock, INT32_MAX));
    events_.push_back(std::move(e));
    while (static_cast<int64_t>(events_.size()) > cfg_.kvEventsMaxBuffered) {
      events_.pop_front();
      ++droppedEvents_;
    }
  };
  for (int32_t r = 0; r < cfg_.numRanks; ++r) {
    caches_.push_back(std::make_unique<KvCacheManager>(r, cfg_.kvBlocksPerRank, cfg_.tokensPerBlock,
                                                       cfg_.enableBlockReuse, sink));
    caches_.back()->emitCreated(0);
  }
  if (domain_) domain_->add(uid_, this);
  if (!cfg_.virtualClock) driver_ = std::thread([this] { driverLoop(); });
}

SimExecutor::~SimExecutor() {
  if (domain_) domain_->remove(uid_);  // first: no pull reaches this executor from here on
  shutdown();
}

bool SimExecutor::madeInThisProcess(uint64_t uid) { return (uid >> 32) == processTag(); }

// ---------------------------------------------------------------------------------------------
// Opaque context state

std::string SimExecutor::encodeOpaqueState(uint64_t uid, int64_t requestId, int32_t rank, int32_t promptTokens) {
  std::ostringstream o;
  o << "affsim1 " << uid << ' ' << requestId << ' ' << rank << ' ' << promptTokens;
  return o.str();
}

std::optional<SimExecutor::OpaqueState> SimExecutor::decodeOpaqueState(const std::string& s) {
  std::istringstream in(s);
  std::string magic;
  OpaqueState st;
  if (!(in >> magic >> st.uid >> st.requestId >> st.rank >> st.promptTokens) || magic != "affsim1") {
    return std::nullopt;
  }
  std::string rest;
  if (in >> rest) return std::nullopt;
  return st;
}

// ---------------------------------------------------------------------------------------------
// Enqueue

RequestError SimExecutor::validateLocked(const RequestSpec& s) const {
  RequestError bad = checkRequest(s, cfg_.numRanks);
  if (bad.any()) return bad;
  const auto type = static_cast<RequestType>(s.requestType);
  const int64_t promptLen = static_cast<int64_t>(s.inputTokens.size());
  const int64_t reserve = type == RequestType::kContextOnly ? 1 : s.maxNewTokens;
  const int64_t need = blocksFor(promptLen + reserve, cfg_.tokensPerBlock);
  if (need > cfg_.kvBlocksPerRank) {
    return {ErrorKind::kCapacity,
            concatMessage("prompt of ", promptLen, " tokens plus ", reserve, " new tokens needs ", need,
                          " KV blocks but a rank holds only ", cfg_.kvBlocksPerRank, " (", cfg_.tokensPerBlock,
                          " tokens per block)")};
  }
  if (!cfg_.enableChunkedPrefill && type != RequestType::kGenerationOnly && promptLen > cfg_.maxNumTokens) {
    return {ErrorKind::kCapacity, concatMessage("prompt of ", promptLen, " tokens exceeds max_num_tokens ",
                                                cfg_.maxNumTokens, " and chunked prefill is disabled")};
  }
  return {};
}

void SimExecutor::emitLocked(Response&& r) {
  ready_.push_back(std::move(r));
  respCv_.notify_all();
}

void SimExecutor::emitErrorLocked(int64_t id, const RequestSpec& spec, const RequestError& error, int64_t now) {
  Response r;
  r.requestId = id;
  r.clientRequestId = spec.clientRequestId;
  r.finishReason = static_cast<int32_t>(FinishReason::kError);
  r.isFinal = true;
  r.errorMessage = error.message;
  r.errorKind = static_cast<int32_t>(error.kind);
  r.metrics.arrivalUs = now;
  r.metrics.finishUs = now;
  r.metrics.promptTokens = static_cast<int32_t>(spec.inputTokens.size());
  emitLocked(std::move(r));
}

int64_t SimExecutor::acceptLocked(const RequestSpec& spec, const RequestError& pullError) {
  if (shutdown_) throw std::runtime_error("executor '" + cfg_.instanceName + "' is shut down");
  const int64_t id = nextId_++;
  const int64_t now = nowLocked();
  RequestError error = validateLocked(spec);
  if (!error.any()) error = pullError;
  if (!error.any() && spec.requestType == static_cast<int32_t>(RequestType::kGenerationOnly)) {
    const auto st = decodeOpaqueState(spec.opaqueState);
    if (st && st->uid == uid_ && !releaseHeldLocked(st->requestId)) {
      error = {ErrorKind::kContextNotFound, "unknown context request " + std::to_string(st->requestId) +
                                                " (expired, cancelled or already pulled)"};
    }
  }
  if (error.any()) {
    emitErrorLocked(id, spec, error, now);
    return id;
  }
  Req r;
  r.id = id;
  r.spec = spec;
  r.type = static_cast<RequestType>(spec.requestType);
  r.promptLen = static_cast<int32_t>(spec.inputTokens.size());
  r.tokens = spec.inputTokens;
  if (spec.hasCacheSalt) r.saltId = cacheSaltId(spec.cacheSalt);
  r.metrics.arrivalUs = now;
  r.metrics.promptTokens = r.promptLen;
  reqs_.emplace(id, std::move(r));
  pending_.push_back(id);
  ++stats_.activeRequests;
  workCv_.notify_all();
  return id;
}

RequestError SimExecutor::pullContext(const RequestSpec& spec) {
  if (spec.requestType != static_cast<int32_t>(RequestType::kGenerationOnly) || !spec.hasContextPhase) return {};
  auto notFound = [](std::string m) { return RequestError(ErrorKind::kContextNotFound, std::move(m)); };
  const auto st = decodeOpaqueState(spec.opaqueState);
  if (!st) {
    return notFound("context phase params carry no state from a sim context executor (opaque_state of " +
                    std::to_string(spec.opaqueState.size()) + " bytes is not recognised)");
  }
  if (st->requestId != spec.ctxRequestId) {
    return notFound("ctx_request_id " + std::to_string(spec.ctxRequestId) +
                    " does not match the context state (request " + std::to_string(st->requestId) + ")");
  }
  if (st->promptTokens != static_cast<int32_t>(spec.inputTokens.size())) {
    return notFound("generation_only prompt has " + std::to_string(spec.inputTokens.size()) +
                    " tokens but the context request prefilled " + std::to_string(st->promptTokens));
  }
  if (st->uid == uid_) return {};  // same executor: released under its own lock
  // Another process: the context worker is remote and frees its KV on its own timeout.
  if (!madeInThisProcess(st->uid)) return {};
  const std::string unknown = "unknown context request " + std::to_string(st->requestId);
  if (!domain_) return notFound(unknown + " (held by another executor of this process; this one has no hand-off domain)");
  switch (domain_->pull(st->uid, st->requestId)) {
    case detail::HandoffRegistry::Pull::kReleased:
      return {};
    case detail::HandoffRegistry::Pull::kGone:  // its executor was destroyed, which freed the KV: as a remote one's
      return {};
    case detail::HandoffRegistry::Pull::kNotHeld:
      return notFound(unknown + " (expired, cancelled or already pulled)");
    case detail::HandoffRegistry::Pull::kForeign:
      break;
  }
  return notFound(unknown + " (held outside this executor's hand-off domain)");
}

int64_t SimExecutor::enqueue(const RequestSpec& spec) {
  const RequestError pullError = pullContext(spec);
  std::lock_guard<std::mutex> lk(mu_);
  return acceptLocked(spec, pullError);
}

void SimExecutor::enqueueBatch(const RequestBatch& batch, int64_t* idsOut) {
  std::vector<RequestError> pullErrors;
  pullErrors.reserve(batch.specs.size());
  for (const auto& s : batch.specs) pullErrors.push_back(pullContext(s));
  std::lock_guard<std::mutex> lk(mu_);
  if (shutdown_) throw std::runtime_error("executor '" + cfg_.instanceName + "' is shut down");
  for (size_t i = 0; i < batch.specs.size(); ++i) idsOut[i] = acceptLocked(batch.specs[i], pullErrors[i]);
}

// ---------------------------------------------------------------------------------------------
// Responses, events, stats

int32_t SimExecutor::awaitResponses(ResponseBatch& out, int32_t maxResponses, int64_t timeoutUs) {
  out.clear();
  std::unique_lock<std::mutex> lk(mu_);
  auto ready = [&] { return !ready_.empty() || shutdown_; };
  waitReady(respCv_, lk, timeoutUs, ready);
  takeFront(ready_, out.responses, maxResponses);
  return out.size();
}

int32_t SimExecutor::drainKvEvents(KvEventBatch& out, int32_t maxEvents) {
  out.clear();
  std::lock_guard<std::mutex> lk(mu_);
  takeFront(events_, out.events, maxEvents);
  return out.size();
}

void SimExecutor::getIterationStats(IterationStats& out) {
  std::lock_guard<std::mutex> lk(mu_);
  out = stats_;
  out.pendingRequests = static_cast<int32_t>(pending_.size());
  out.heldContexts = static_cast<int32_t>(held_.size());
}

void SimExecutor::getKvCacheStats(int32_t rank, KvCacheStats& out) {
  if (rank < 0 || rank >= cfg_.numRanks) {
    throw std::out_of_range("rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(cfg_.numRanks) + ")");
  }
  std::lock_guard<std::mutex> lk(mu_);
  caches_[static_cast<size_t>(rank)]->fillStats(out);
  out.queuedRequests = static_cast<int64_t>(queued_[static_cast<size_t>(rank)].size());
  out.activeRequests = out.queuedRequests + static_cast<int64_t>(running_[static_cast<size_t>(rank)].size());
  out.contextTokensComputed = contextTokensComputed_[static_cast<size_t>(rank)];
}

std::string SimExecutor::describe() const { return cfg_.toJson(); }

int32_t SimExecutor::clockMode() const {
  return static_cast<int32_t>(cfg_.virtualClock ? ClockMode::kVirtual : ClockMode::kReal);
}

bool SimExecutor::isShutdown() const {
  std::lock_guard<std::mutex> lk(mu_);
  return shutdown_;
}

// ---------------------------------------------------------------------------------------------
// Clock

int64_t SimExecutor::nowLocked() const {
  if (cfg_.virtualClock) return virtualNow_;
  const auto wall = std::chrono::steady_clock::now() - wallStart_;
  const double us = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count()) / 1000.0;
  return static_cast<int64_t>(us / cfg_.timeScale);
}

int64_t SimExecutor::nowUs() {
  std::lock_guard<std::mutex> lk(mu_);
  return nowLocked();
}

void SimExecutor::advanceTo(int64_t timeUs) {
  if (!cfg_.virtualClock) throw std::logic_error("advanceTo is only valid with clock mode \"virtual\"");
  std::lock_guard<std::mutex> lk(mu_);
  if (timeUs < virtualNow_) {
    throw std::invalid_argument("advanceTo(" + std::to_string(timeUs) + ") is before the current time " +
                                std::to_string(virtualNow_));
  }
  while (!shutdown_) {
    if (!iter_.active) startIterationLocked(virtualNow_);
    if (!iter_.active || iter_.endUs > timeUs) break;
    virtualNow_ = iter_.endUs;
    completeIterationLocked();
  }
  virtualNow_ = timeUs;
  expireHoldsLocked(timeUs);
}

int64_t SimExecutor::nextIterationEndUs() {
  if (!cfg_.virtualClock) throw std::logic_error("nextIterationEndUs is only valid with clock mode \"virtual\"");
  std::lock_guard<std::mutex> lk(mu_);
  if (!iter_.active && !shutdown_) startIterationLocked(virtualNow_);
  return iter_.active ? iter_.endUs : -1;
}

void SimExecutor::driverLoop() {
  std::unique_lock<std::mutex> lk(mu_);
  auto wallAt = [this](int64_t simUs) {
    return wallStart_ + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(simUs) * 1000.0 * cfg_.timeScale));
  };
  while (!shutdown_) {
    if (!iter_.active) {
      startIterationLocked(nowLocked());
      if (!iter_.active) {
        const int64_t wake = nextWakeLocked();
        if (wake < 0) {
          workCv_.wait(lk);
        } else {
          workCv_.wait_until(lk, wallAt(wake));
          expireHoldsLocked(nowLocked());
        }
        continue;
      }
    }
    const auto end = wallAt(iter_.endUs);
    workCv_.wait_until(lk, end, [&] { return shutdown_ || std::chrono::steady_clock::now() >= end; });
    if (shutdown_) break;
    completeIterationLocked();
  }
}

// ---------------------------------------------------------------------------------------------
// Scheduling

void SimExecutor::extendHashes(Req& r, int32_t computedTokens) const {
  if (!cfg_.enableBlockReuse) return;  // nothing is matched or stored: no block keys needed
  const int32_t tpb = cfg_.tokensPerBlock;
  while ((static_cast<int64_t>(r.hashes.size()) + 1) * tpb <= computedTokens) {
    const size_t start = r.hashes.size() * static_cast<size_t>(tpb);
    const uint64_t parent = r.hashes.empty() ? 0 : r.hashes.back();
    r.hashes.push_back(hashV1BlockKey(r.tokens.data() + start, static_cast<size_t>(tpb), parent, std::nullopt,
                                      r.hashes.empty() ? r.saltId : std::nullopt));
  }
}

int32_t SimExecutor::tokenAt(const Req& r, int32_t outputPos) const {
  const uint64_t base = splitmix64(static_cast<uint64_t>(r.spec.seed) ^ splitmix64(static_cast<uint64_t>(r.spec.clientRequestId)));
  return static_cast<int32_t>(splitmix64(base + static_cast<uint64_t>(outputPos)) % static_cast<uint64_t>(cfg_.vocabSize));
}

void SimExecutor::routePendingLocked() {
  if (pending_.empty()) return;
  // The executor's waiting queue, before attention-DP routing takes requests to ranks with room (TensorRT-LLM's
  // PyExecutor fetches from it in its policy's order): with the priority policy the higher priority first.
  if (cfg_.waitingQueuePolicy == WaitingQueuePolicy::kPriority) {
    std::stable_sort(pending_.begin(), pending_.end(), [&](int64_t a, int64_t b) {
      return reqs_.at(a).spec.priority > reqs_.at(b).spec.priority;
    });
  }
  std::vector<RankLoad> loads(static_cast<size_t>(cfg_.numRanks));
  for (int32_t rk = 0; rk < cfg_.numRanks; ++rk) {
    for (const auto* list : {&queued_[static_cast<size_t>(rk)], &running_[static_cast<size_t>(rk)]}) {
      for (const int64_t id : *list) {
        ++loads[static_cast<size_t>(rk)].activeRequests;
        loads[static_cast<size_t>(rk)].activeTokens += reqs_.at(id).promptLen;
      }
    }
  }
  std::vector<RouteCandidate> cands;
  cands.reserve(pending_.size());
  for (const int64_t id : pending_) {
    Req& r = reqs_.at(id);
    RouteCandidate c;
    c.requestId = id;
    c.inputTokens = r.promptLen;
    c.rankHint = r.spec.adpRankHint;
    c.relax = r.spec.adpRelax;
    c.affinityKey = !r.spec.subagentAffinityId.empty() ? r.spec.subagentAffinityId : r.spec.conversationId;
    if (cfg_.adpRouter.type == AdpRouterType::kKvAware) extendHashes(r, r.promptLen);
    cands.push_back(std::move(c));
  }
  auto probe = [&](size_t idx, int32_t rank) {
    const Req& r = reqs_.at(cands[idx].requestId);
    const int32_t maxReuse = (r.promptLen - 1) / cfg_.tokensPerBlock;
    return caches_[static_cast<size_t>(rank)]->matchPrefix(r.hashes, maxReuse) * cfg_.tokensPerBlock;
  };
  const std::vector<int32_t> ranks = router_.route(cands, loads, probe);
  std::vector<int64_t> still;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (ranks[i] < 0) {
      still.push_back(cands[i].requestId);
      continue;
    }
    Req& r = reqs_.at(cands[i].requestId);
    r.rank = ranks[i];
    r.metrics.rank = ranks[i];
    r.state = State::kQueued;
    queued_[static_cast<size_t>(ranks[i])].push_back(r.id);
  }
  pending_ = std::move(still);
}

void SimExecutor::admitLocked(int32_t rank, int64_t now) {
  auto& queue = queued_[static_cast<size_t>(rank)];
  auto& running = running_[static_cast<size_t>(rank)];
  if (queue.empty()) return;
  // TensorRT-LLM's waiting queue (_torch/pyexecutor/scheduler/waiting_queue.py): first come, first served, or
  // with waiting_queue_policy priority the higher priority first and first come first among equals. A request
  // that could not be admitted keeps its place.
  if (cfg_.waitingQueuePolicy == WaitingQueuePolicy::kPriority) {
    std::stable_sort(queue.begin(), queue.end(), [&](int64_t a, int64_t b) {
      return reqs_.at(a).spec.priority > reqs_.at(b).spec.priority;
    });
  }
  KvCacheManager& cache = *caches_[static_cast<size_t>(rank)];
  size_t i = 0;
  for (; i < queue.size() && static_cast<int32_t>(running.size()) < cfg_.maxBatchSize; ++i) {
    Req& r = reqs_.at(queue[i]);
    const int32_t tpb = cfg_.tokensPerBlock;
    const int64_t reserve = r.type == RequestType::kContextOnly ? 1 : r.spec.maxNewTokens;
    const auto total = static_cast<int32_t>(blocksFor(r.promptLen + reserve, tpb));  // validated: fits a rank
    bool ok;
    const std::vector<BlockRetention> retention = blockRetention(r.spec, r.promptLen, total);
    if (r.type == RequestType::kGenerationOnly) {
      ok = cache.allocate(r.seq, {}, 0, total, retention);
    } else {
      extendHashes(r, r.promptLen);
      ok = cache.allocate(r.seq, r.hashes, (r.promptLen - 1) / tpb, total, retention);
    }
    if (!ok) break;  // head-of-line: keep priority/FCFS order
    r.metrics.scheduledUs = now;
    if (r.type == RequestType::kGenerationOnly) {
      r.state = State::kTransferring;
      r.metrics.transferUs = static_cast<int64_t>(std::ceil(timing_.transferUs(r.promptLen)));
      r.transferDoneUs = now + r.metrics.transferUs;
    } else {
      r.done = r.seq.reusedBlocks * tpb;
      r.metrics.reusedTokens = r.done;
      r.state = State::kPrefill;
    }
    if (cfg_.reusePolicy == ReusePolicy::kPerConversation && !r.spec.conversationId.empty() &&
        liveTurn_.find(r.spec.conversationId) == liveTurn_.end()) {
      // A second live request of the same conversation ignores conversation params, as upstream.
      liveTurn_[r.spec.conversationId] = r.id;
      r.conversationTurn = true;
    }
    running.push_back(r.id);
  }
  queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(i));
}

std::vector<BlockRetention> SimExecutor::blockRetention(const RequestSpec& spec, int32_t promptLen,
                                                        int32_t totalBlocks) const {
  // TensorRT-LLM's KvCacheRetentionConfig::getPerBlockRetentionPriorityDuration: a prompt block takes the range
  // that holds its first token (none: no priority of its own, no duration); a block past the prompt the decode
  // retention. Without a config the decode retention is the default's (priority 35, no duration).
  std::vector<BlockRetention> out(static_cast<size_t>(totalBlocks));
  const int64_t tpb = cfg_.tokensPerBlock;
  const auto ranges = sortedRetention(spec);
  for (int32_t i = 0; i < totalBlocks; ++i) {
    const int64_t first = static_cast<int64_t>(i) * tpb;
    BlockRetention& b = out[static_cast<size_t>(i)];
    if (first >= promptLen) {
      b.priority = spec.decodeRetentionPriority;
      b.durationUs = spec.decodeRetentionDurationMs == kNone ? kNone : spec.decodeRetentionDurationMs * 1000;
      continue;
    }
    for (const auto& range : ranges) {
      if (first >= range.tokenStart && (range.tokenEnd == kNone || first < range.tokenEnd)) {
        b.priority = range.priority;
        b.durationUs = range.durationMs == kNone ? kNone : range.durationMs * 1000;
        break;
      }
    }
  }
  return out;
}

void SimExecutor::startIterationLocked(int64_t now) {
  expireHoldsLocked(now);
  for (auto& cache : caches_) cache->refresh(now);
  routePendingLocked();
  iter_ = Iteration{};
  double slowest = 0.0;
  int32_t ctxReqs = 0, genReqs = 0;
  int64_t ctxTokens = 0;
  int64_t nextTransfer = -1;
  for (int32_t rank = 0; rank < cfg_.numRanks; ++rank) {
    admitLocked(rank, now);
    auto& running = running_[static_cast<size_t>(rank)];
    // Transfers that completed by now start decoding in this iteration.
    for (const int64_t id : running) {
      Req& r = reqs_.at(id);
      if (r.state == State::kTransferring && r.transferDoneUs <= now) {
        r.done = r.promptLen;
        extendHashes(r, r.promptLen);
        caches_[static_cast<size_t>(rank)]->store(r.seq, r.hashes, r.tokens, cfg_.kvEventsIncludeTokens);
        r.tokens.insert(r.tokens.end(), r.spec.firstGenTokens.begin(), r.spec.firstGenTokens.end());
        r.state = State::kDecode;
        if (r.outputLen() >= r.spec.maxNewTokens) {
          iter_.items.push_back({id, -1});  // finishes at the end of this iteration, no compute
        }
      }
    }
    // Active requests in the order they were admitted: TensorRT-LLM's schedulers walk the active list as it is
    // (priority orders only the waiting queue) and chunk prefill first come, first served.
    const std::vector<int64_t> order = running;
    int64_t budget = cfg_.maxNumTokens;
    int64_t decodeSeqs = 0, decodeCtx = 0;
    double prefillUs = 0.0;
    for (const int64_t id : order) {
      Req& r = reqs_.at(id);
      if (r.state == State::kDecode && r.outputLen() < r.spec.maxNewTokens && budget > 0) {
        iter_.items.push_back({id, 0});
        --budget;
        ++decodeSeqs;
        decodeCtx += static_cast<int64_t>(r.tokens.size());
      } else if (r.state == State::kTransferring) {
        nextTransfer = nextTransfer < 0 ? r.transferDoneUs : std::min(nextTransfer, r.transferDoneUs);
      }
    }
    for (const int64_t id : order) {
      Req& r = reqs_.at(id);
      if (r.state != State::kPrefill || budget <= 0) continue;
      const int64_t remaining = r.promptLen - r.done;
      if (!cfg_.enableChunkedPrefill && remaining > budget) continue;
      const int64_t chunk = std::min(remaining, budget);
      iter_.items.push_back({id, static_cast<int32_t>(chunk)});
      budget -= chunk;
      prefillUs += timing_.prefillChunkUs(r.done, chunk);
      ++ctxReqs;
      ctxTokens += chunk;
    }
    genReqs += static_cast<int32_t>(decodeSeqs);
    slowest = std::max(slowest, prefillUs + timing_.decodeUs(decodeSeqs, decodeCtx));
  }
  if (!iter_.items.empty()) {
    iter_.active = true;
    iter_.startUs = now;
    iter_.endUs = now + std::max<int64_t>(1, static_cast<int64_t>(std::ceil(timing_.iterationUs(slowest))));
  } else if (nextTransfer >= 0) {
    // Nothing to compute until a KV transfer lands: an empty step that ends then.
    iter_.active = true;
    iter_.startUs = now;
    iter_.endUs = std::max(now + 1, nextTransfer);
  }
  if (iter_.active) {
    stats_.lastContextRequests = ctxReqs;
    stats_.lastGenerationRequests = genReqs;
    stats_.lastContextTokens = ctxTokens;
  }
}

void SimExecutor::completeIterationLocked() {
  const int64_t end = iter_.endUs;
  Iteration it = std::move(iter_);
  iter_ = Iteration{};
  if (!it.items.empty()) {
    ++stats_.iterations;
    stats_.lastIterationStartUs = it.startUs;
    stats_.lastIterationDurationUs = end - it.startUs;
    stats_.busyUs += end - it.startUs;
  }
  std::vector<int64_t> touched;
  for (const PlanItem& item : it.items) {
    auto found = reqs_.find(item.id);
    if (found == reqs_.end()) continue;  // cancelled during the iteration
    Req& r = found->second;
    if (item.prefillTokens > 0) {
      if (r.state != State::kPrefill) continue;
      r.done += item.prefillTokens;
      contextTokensComputed_[static_cast<size_t>(r.rank)] += item.prefillTokens;
      if (r.done >= r.promptLen) finishPrefillLocked(r, end);
    } else if (item.prefillTokens == 0) {
      if (r.state != State::kDecode) continue;
      if (r.metrics.firstTokenUs < 0) r.metrics.firstTokenUs = end;
      if (!appendTokenLocked(r, tokenAt(r, r.outputLen()), end)) flushStreamLocked(r);
    } else {
      if (r.metrics.firstTokenUs < 0) r.metrics.firstTokenUs = end;
      finalizeLocked(r, FinishReason::kLength, {}, end, true);
    }
  }
}

void SimExecutor::finishPrefillLocked(Req& r, int64_t now) {
  KvCacheManager& cache = *caches_[static_cast<size_t>(r.rank)];
  extendHashes(r, r.promptLen);
  cache.store(r.seq, r.hashes, r.tokens, cfg_.kvEventsIncludeTokens);
  r.metrics.firstTokenUs = now;
  const int32_t first = tokenAt(r, 0);
  if (r.type == RequestType::kContextOnly) {
    if (first == r.spec.endId || std::find(r.spec.stopTokenIds.begin(), r.spec.stopTokenIds.end(), first) != r.spec.stopTokenIds.end()) {
      // Finished in the context phase: nothing to hand over.
      finalizeLocked(r, first == r.spec.endId ? FinishReason::kEndId : FinishReason::kStop, {}, now, false);
      return;
    }
    r.tokens.push_back(first);
    Response resp;
    resp.requestId = r.id;
    resp.clientRequestId = r.spec.clientRequestId;
    resp.tokens = {first};
    resp.finishReason = static_cast<int32_t>(FinishReason::kLength);
    resp.isFinal = true;
    resp.hasContextPhase = true;
    resp.ctxRequestId = r.id;
    resp.ctxDpRank = r.rank;
    resp.firstGenTokens = {first};
    resp.opaqueState = encodeOpaqueState(uid_, r.id, r.rank, r.promptLen);
    r.metrics.finishUs = now;
    r.metrics.outputTokens = 1;
    resp.metrics = r.metrics;
    // The compute is over: the request leaves the rank's batch but its KV stays held.
    auto& running = running_[static_cast<size_t>(r.rank)];
    running.erase(std::remove(running.begin(), running.end(), r.id), running.end());
    r.state = State::kHeld;
    // The hold is a protocol timeout (a generation leg that never comes): on a real clock it runs on the
    // wall clock whatever the modelled speed, so a scaled executor does not drop contexts a loaded
    // frontend has yet to pull; on a virtual clock it is virtual time like everything else.
    const int64_t hold = cfg_.virtualClock
                             ? cfg_.contextHoldTimeoutUs
                             : static_cast<int64_t>(std::min(1e18, static_cast<double>(cfg_.contextHoldTimeoutUs) / cfg_.timeScale));
    held_[r.id] = now + hold;
    stats_.totalPromptTokens += r.promptLen;
    stats_.totalReusedTokens += r.metrics.reusedTokens;
    stats_.totalGeneratedTokens += 1;
    ++stats_.completedRequests;
    --stats_.activeRequests;
    emitLocked(std::move(resp));
    return;
  }
  r.state = State::kDecode;
  if (!appendTokenLocked(r, first, now)) flushStreamLocked(r);
}

bool SimExecutor::appendTokenLocked(Req& r, int32_t token, int64_t now) {
  if (token == r.spec.endId) {
    finalizeLocked(r, FinishReason::kEndId, {}, now, true);
    return true;
  }
  if (std::find(r.spec.stopTokenIds.begin(), r.spec.stopTokenIds.end(), token) != r.spec.stopTokenIds.end()) {
    finalizeLocked(r, FinishReason::kStop, {}, now, true);
    return true;
  }
  r.tokens.push_back(token);
  if (r.outputLen() >= r.spec.maxNewTokens) {
    finalizeLocked(r, FinishReason::kLength, {}, now, true);
    return true;
  }
  return false;
}

void SimExecutor::flushStreamLocked(Req& r) {
  if (!r.spec.streaming || r.outputLen() <= r.emitted) return;
  Response resp;
  resp.requestId = r.id;
  resp.clientRequestId = r.spec.clientRequestId;
  resp.tokens.assign(r.tokens.begin() + r.promptLen + r.emitted, r.tokens.end());
  resp.finishReason = static_cast<int32_t>(FinishReason::kNotFinished);
  resp.metrics = r.metrics;
  resp.metrics.outputTokens = r.outputLen();
  r.emitted = r.outputLen();
  emitLocked(std::move(resp));
}

void SimExecutor::releaseLocked(Req& r) {
  if (r.rank < 0 || !r.seq.allocated) return;
  KvCacheManager& cache = *caches_[static_cast<size_t>(r.rank)];
  if (r.conversationTurn) {
    liveTurn_.erase(r.spec.conversationId);
  }
  cache.release(r.seq, cfg_.reusePolicy == ReusePolicy::kAllReusable, nowLocked());
}

void SimExecutor::recordTurnLocked(Req& r) {
  if (!r.conversationTurn || r.rank < 0 || !r.seq.allocated) return;
  // per_conversation: this turn's stored blocks become the conversation's record; turns older than
  // max_num_turns are released, dropping blocks the next turn no longer needs. A block is looked up
  // by hash: where another sequence registered the same content first (e.g. the context request
  // that a generation_only request pulled from on this executor), that block holds the content.
  KvCacheManager& cache = *caches_[static_cast<size_t>(r.rank)];
  std::vector<int32_t> ids;
  const size_t n = std::min(static_cast<size_t>(r.seq.storedBlocks), r.hashes.size());
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = cache.registeredBlock(r.hashes[i]);
    if (id >= 0) ids.push_back(id);
  }
  TurnRecord rec{r.rank, cache.retain(ids)};
  auto& turns = records_[r.spec.conversationId];
  turns.push_back(std::move(rec));
  while (static_cast<int32_t>(turns.size()) > cfg_.maxNumTurns) {
    caches_[static_cast<size_t>(turns.front().rank)]->unretain(turns.front().blocks);
    turns.pop_front();
  }
}

void SimExecutor::finalizeLocked(Req& r, FinishReason reason, const std::string& error, int64_t now, bool storeOutput) {
  const bool computed = r.state == State::kDecode || r.state == State::kPrefill;
  if (storeOutput && computed && r.rank >= 0 && r.seq.allocated) {
    // KV exists for the prompt and every output token but the last one.
    const int32_t kvTokens = std::max(r.done, static_cast<int32_t>(r.tokens.size()) - 1);
    extendHashes(r, kvTokens);
    caches_[static_cast<size_t>(r.rank)]->store(r.seq, r.hashes, r.tokens, cfg_.kvEventsIncludeTokens);
  }
  if (reason != FinishReason::kCancelled && reason != FinishReason::kError) recordTurnLocked(r);
  releaseLocked(r);
  if (r.rank >= 0) {
    for (auto* list : {&running_[static_cast<size_t>(r.rank)], &queued_[static_cast<size_t>(r.rank)]}) {
      list->erase(std::remove(list->begin(), list->end(), r.id), list->end());
    }
  }
  pending_.erase(std::remove(pending_.begin(), pending_.end(), r.id), pending_.end());

  Response resp;
  resp.requestId = r.id;
  resp.clientRequestId = r.spec.clientRequestId;
  const int32_t from = r.spec.streaming ? r.emitted : 0;
  if (r.outputLen() > from) resp.tokens.assign(r.tokens.begin() + r.promptLen + from, r.tokens.end());
  resp.finishReason = static_cast<int32_t>(reason);
  resp.isFinal = true;
  resp.errorMessage = error;
  resp.errorKind = static_cast<int32_t>(reason == FinishReason::kCancelled ? ErrorKind::kCancelled : ErrorKind::kNone);
  r.metrics.finishUs = now;
  r.metrics.outputTokens = std::max(0, r.outputLen());
  resp.metrics = r.metrics;
  stats_.totalPromptTokens += r.promptLen;
  stats_.totalReusedTokens += r.metrics.reusedTokens;
  stats_.totalGeneratedTokens += std::max(0, r.outputLen());
  ++stats_.completedRequests;
  --stats_.activeRequests;
  emitLocked(std::move(resp));
  reqs_.erase(r.id);
}

// ---------------------------------------------------------------------------------------------
// Context holds, cancellation, shutdown

bool SimExecutor::releaseHeldLocked(int64_t ctxRequestId) {
  auto h = held_.find(ctxRequestId);
  if (h == held_.end()) return false;
  held_.erase(h);
  auto it = reqs_.find(ctxRequestId);
  if (it != reqs_.end()) {
    recordTurnLocked(it->second);
    releaseLocked(it->second);
    reqs_.erase(it);
  }
  return true;
}

bool SimExecutor::releaseHeldContext(int64_t ctxRequestId) {
  std::lock_guard<std::mutex> lk(mu_);
  const bool released = releaseHeldLocked(ctxRequestId);
  if (released) wakeSchedulerLocked();
  return released;
}

void SimExecutor::wakeSchedulerLocked() {
  // The scheduler sleeps when no request can start (KV full, batch full, head of line blocked) until
  // the next enqueue or hold deadline. A change made outside its pass that may let a request start
  // (KV freed, a request ahead of others gone) wakes it, or the waiting requests wait for that
  // deadline with the room already free.
  workCv_.notify_all();
}

void SimExecutor::expireHoldsLocked(int64_t now) {
  std::vector<int64_t> expired;
  for (const auto& [id, deadline] : held_) {
    if (deadline <= now) expired.push_back(id);
  }
  for (const int64_t id : expired) releaseHeldLocked(id);
}

int64_t SimExecutor::nextWakeLocked() const {
  int64_t wake = -1;
  for (const auto& [id, deadline] : held_) wake = wake < 0 ? deadline : std::min(wake, deadline);
  return wake;
}

void SimExecutor::cancel(int64_t requestId) {
  std::lock_guard<std::mutex> lk(mu_);
  if (releaseHeldLocked(requestId)) {
    wakeSchedulerLocked();
    return;
  }
  auto it = reqs_.find(requestId);
  if (it == reqs_.end()) return;
  finalizeLocked(it->second, FinishReason::kCancelled, "cancelled", nowLocked(), false);
  wakeSchedulerLocked();
}

void SimExecutor::endConversation(const std::string& conversationId) {
  std::lock_guard<std::mutex> lk(mu_);
  if (conversationId.empty()) return;
  // A turn of it still running records nothing when it ends: the conversation is over.
  if (auto live = liveTurn_.find(conversationId); live != liveTurn_.end()) {
    if (auto r = reqs_.find(live->second); r != reqs_.end()) r->second.conversationTurn = false;
    liveTurn_.erase(live);
  }
  auto it = records_.find(conversationId);
  if (it == records_.end()) return;
  for (const TurnRecord& turn : it->second) caches_[static_cast<size_t>(turn.rank)]->unretain(turn.blocks);
  records_.erase(it);
}

void SimExecutor::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    workCv_.notify_all();
  }
  if (driver_.joinable()) driver_.join();
  std::lock_guard<std::mutex> lk(mu_);
  iter_ = Iteration{};
  const int64_t now = nowLocked();
  std::vector<int64_t> live;
  for (const auto& [id, r] : reqs_) live.push_back(id);
  for (const int64_t id : live) {
    if (releaseHeldLocked(id)) continue;
    auto it = reqs_.find(id);
    if (it != reqs_.end()) finalizeLocked(it->second, FinishReason::kCancelled, "executor shut down", now, false);
  }
  respCv_.notify_all();
}

}  // namespace affinity::sim
