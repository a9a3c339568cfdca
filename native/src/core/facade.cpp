// The facade's shared pieces: live-object accounting, batch packing, and the backend factory.
#include <atomic>
#include <stdexcept>

#include "affinity/executor.h"
#include "affinity/handoff.h"
#include "handoff_registry.h"
#include "../pytorch/pytorch_config.h"
#include "../pytorch/pytorch_executor.h"
#include "../pytorch/python_runtime.h"
#include "../sim/config.h"
#include "../sim/sim_executor.h"

namespace affinity {
namespace {
std::atomic<int64_t> gLive{0};
}  // namespace

int64_t liveObjectCount() { return gLive.load(); }

Executor::Executor() { ++gLive; }
Executor::~Executor() { --gLive; }
void Executor::endConversation(const std::string&) {}

int32_t Executor::tokenize(const std::string&, int32_t, int32_t*, int32_t) {
  throw std::logic_error("this backend has no model tokenizer (only backends that run a model, such as pytorch, do)");
}
std::string Executor::detokenize(const int32_t*, int32_t) {
  throw std::logic_error("this backend has no model tokenizer (only backends that run a model, such as pytorch, do)");
}
RequestBatch::RequestBatch() { ++gLive; }
RequestBatch::~RequestBatch() { --gLive; }
ResponseBatch::ResponseBatch() { ++gLive; }
ResponseBatch::~ResponseBatch() { --gLive; }
KvEventBatch::KvEventBatch() { ++gLive; }
KvEventBatch::~KvEventBatch() { --gLive; }
KvCacheStats::KvCacheStats() { ++gLive; }
KvCacheStats::KvCacheStats(const KvCacheStats& o) : KvCacheStats() { *this = o; }
KvCacheStats::~KvCacheStats() { --gLive; }
IterationStats::IterationStats() { ++gLive; }
IterationStats::IterationStats(const IterationStats& o) : IterationStats() { *this = o; }
IterationStats::~IterationStats() { --gLive; }
HandoffDomain::HandoffDomain() : registry_(std::make_shared<detail::HandoffRegistry>()) { ++gLive; }
HandoffDomain::~HandoffDomain() { --gLive; }
int32_t HandoffDomain::executorCount() const { return registry_->size(); }

int32_t ResponseBatch::totalTokens() const {
  size_t n = 0;
  for (const auto& r : responses) n += r.tokens.size();
  return static_cast<int32_t>(n);
}

int32_t ResponseBatch::totalFirstGenTokens() const {
  size_t n = 0;
  for (const auto& r : responses) n += r.firstGenTokens.size();
  return static_cast<int32_t>(n);
}

void ResponseBatch::copyLongs(int64_t* out) const {
  int64_t tokenOffset = 0, firstOffset = 0;
  for (const auto& r : responses) {
    int64_t* o = out;
    o[kRequestId] = r.requestId;
    o[kClientRequestId] = r.clientRequestId;
    o[kFinishReason] = r.finishReason;
    o[kIsFinal] = r.isFinal ? 1 : 0;
    o[kTokenOffset] = tokenOffset;
    o[kTokenCount] = static_cast<int64_t>(r.tokens.size());
    o[kHasContextPhase] = r.hasContextPhase ? 1 : 0;
    o[kCtxRequestId] = r.ctxRequestId;
    o[kCtxDpRank] = r.ctxDpRank;
    o[kFirstGenOffset] = firstOffset;
    o[kFirstGenCount] = static_cast<int64_t>(r.firstGenTokens.size());
    o[kArrivalUs] = r.metrics.arrivalUs;
    o[kScheduledUs] = r.metrics.scheduledUs;
    o[kFirstTokenUs] = r.metrics.firstTokenUs;
    o[kFinishUs] = r.metrics.finishUs;
    o[kPromptTokens] = r.metrics.promptTokens;
    o[kReusedTokens] = r.metrics.reusedTokens;
    o[kRank] = r.metrics.rank;
    o[kOutputTokens] = r.metrics.outputTokens;
    o[kTransferUs] = r.metrics.transferUs;
    o[kErrorKind] = r.errorKind;
    o[kRankSource] = r.metrics.rankSource;
    tokenOffset += static_cast<int64_t>(r.tokens.size());
    firstOffset += static_cast<int64_t>(r.firstGenTokens.size());
    out += kLongStride;
  }
}

void ResponseBatch::copyTokens(int32_t* out) const {
  for (const auto& r : responses) out = std::copy(r.tokens.begin(), r.tokens.end(), out);
}

void ResponseBatch::copyFirstGenTokens(int32_t* out) const {
  for (const auto& r : responses) out = std::copy(r.firstGenTokens.begin(), r.firstGenTokens.end(), out);
}

static const Response& at(const std::vector<Response>& v, int32_t i) {
  if (i < 0 || static_cast<size_t>(i) >= v.size()) {
    throw std::out_of_range("response index " + std::to_string(i) + " out of range [0, " + std::to_string(v.size()) + ")");
  }
  return v[static_cast<size_t>(i)];
}

int32_t ResponseBatch::errorMessageSize(int32_t i) const { return static_cast<int32_t>(at(responses, i).errorMessage.size()); }
void ResponseBatch::copyErrorMessage(int32_t i, char* out) const {
  const auto& s = at(responses, i).errorMessage;
  std::copy(s.begin(), s.end(), out);
}
int32_t ResponseBatch::opaqueStateSize(int32_t i) const { return static_cast<int32_t>(at(responses, i).opaqueState.size()); }
void ResponseBatch::copyOpaqueState(int32_t i, char* out) const {
  const auto& s = at(responses, i).opaqueState;
  std::copy(s.begin(), s.end(), out);
}

int32_t KvEventBatch::totalHashes() const {
  size_t n = 0;
  for (const auto& e : events) n += e.blockHashes.size();
  return static_cast<int32_t>(n);
}

int32_t KvEventBatch::totalTokens() const {
  size_t n = 0;
  for (const auto& e : events) n += e.tokens.size();
  return static_cast<int32_t>(n);
}

void KvEventBatch::copyLongs(int64_t* out) const {
  int64_t hashOffset = 0, tokenOffset = 0;
  for (const auto& e : events) {
    out[kEventId] = e.eventId;
    out[kType] = e.type;
    out[kRank] = e.rank;
    out[kWindowSize] = e.windowSize;
    out[kHasParent] = e.hasParent ? 1 : 0;
    out[kParentHash] = static_cast<int64_t>(e.parentHash);
    out[kHashOffset] = hashOffset;
    out[kHashCount] = static_cast<int64_t>(e.blockHashes.size());
    out[kTokenOffset] = tokenOffset;
    out[kTokenCount] = static_cast<int64_t>(e.tokens.size());
    out[kValue] = e.value;
    out[kCacheLevel] = e.cacheLevel;
    hashOffset += static_cast<int64_t>(e.blockHashes.size());
    tokenOffset += static_cast<int64_t>(e.tokens.size());
    out += kLongStride;
  }
}

void KvEventBatch::copyHashes(int64_t* out) const {
  for (const auto& e : events) {
    for (const uint64_t h : e.blockHashes) *out++ = static_cast<int64_t>(h);
  }
}

void KvEventBatch::copyTokens(int32_t* out) const {
  for (const auto& e : events) out = std::copy(e.tokens.begin(), e.tokens.end(), out);
}

Executor* createExecutor(const std::string& backend, const std::string& configJson) {
  return createExecutor(backend, configJson, nullptr);
}

Executor* createExecutor(const std::string& backend, const std::string& configJson, const HandoffDomain* domain) {
  if (backend == "sim") {
    return new sim::SimExecutor(sim::parseSimConfig(configJson), domain == nullptr ? nullptr : domain->registry());
  }
  if (backend == "pytorch") {
    // TensorRT-LLM's cache transceiver moves and frees the KV between LLMs: the domain has no part.
    return new pytorch::PyTorchExecutor(pytorch::parsePyTorchConfig(configJson));
  }
  throw std::invalid_argument("unknown executor backend \"" + backend + "\" (available: " + availableBackends() + ")");
}

void checkExecutorConfig(const std::string& backend, const std::string& configJson) {
  if (backend == "sim") {
    sim::parseSimConfig(configJson);
  } else if (backend == "pytorch") {
    pytorch::parsePyTorchConfig(configJson);
  } else {
    throw std::invalid_argument("unknown executor backend \"" + backend + "\" (available: " + availableBackends() + ")");
  }
}

void destroyExecutor(Executor* executor) {
  if (executor == nullptr) return;
  executor->shutdown();
  delete executor;
}

std::string availableBackends() { return "sim,pytorch"; }

int32_t shutdownBackends(int64_t timeoutMs) { return pytorch::PythonRuntime::instance().stop(timeoutMs); }

std::string nativeVersion() { return "affinity-native 0.1.0"; }

}  // namespace affinity
