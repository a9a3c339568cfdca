// SimExecutor: the CPU executor behind backend "sim". It behaves like TensorRT-LLM's PyTorch
// executor wherever routing can tell: per-rank paged KV caches with prefix reuse and eviction, ADP
// rank choice, in-flight batching with chunked prefill, the context -> generation handoff with a
// KV transfer time, and a calibrated timing model, in real or virtual time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "adp_router.h"
#include "affinity/executor.h"
#include "config.h"
#include "../core/handoff_registry.h"
#include "../core/request_check.h"
#include "kv_cache.h"
#include "timing.h"

namespace affinity::sim {

class SimExecutor final : public Executor, public detail::ContextHolder {
 public:
  /// domain: the hand-off domain the executor joins (affinity/handoff.h), or nullptr for none.
  explicit SimExecutor(const SimConfig& cfg, std::shared_ptr<detail::HandoffRegistry> domain = nullptr);
  ~SimExecutor() override;

  int64_t enqueue(const RequestSpec& spec) override;
  void enqueueBatch(const RequestBatch& batch, int64_t* idsOut) override;
  int32_t awaitResponses(ResponseBatch& out, int32_t maxResponses, int64_t timeoutUs) override;
  void cancel(int64_t requestId) override;
  void endConversation(const std::string& conversationId) override;
  int32_t drainKvEvents(KvEventBatch& out, int32_t maxEvents) override;
  void getIterationStats(IterationStats& out) override;
  void getKvCacheStats(int32_t rank, KvCacheStats& out) override;
  int32_t numRanks() const override { return cfg_.numRanks; }
  int32_t tokensPerBlock() const override { return cfg_.tokensPerBlock; }
  std::string describe() const override;
  int32_t clockMode() const override;
  int64_t nowUs() override;
  void advanceTo(int64_t timeUs) override;
  int64_t nextIterationEndUs() override;
  void shutdown() override;
  bool isShutdown() const override;

  /// Frees the KV a context_only request holds for a generation pull. False if not held here.
  bool releaseHeldContext(int64_t ctxRequestId) override;
  uint64_t uid() const { return uid_; }
  const SimConfig& config() const { return cfg_; }

  /// Whether an executor uid was made in this process (its upper 32 bits are this process's tag).
  static bool madeInThisProcess(uint64_t uid);
  /// Opaque state written into context phase params: identifies this executor and the request.
  static std::string encodeOpaqueState(uint64_t uid, int64_t requestId, int32_t rank, int32_t promptTokens);
  struct OpaqueState {
    uint64_t uid = 0;
    int64_t requestId = 0;
    int32_t rank = -1;
    int32_t promptTokens = 0;
  };
  static std::optional<OpaqueState> decodeOpaqueState(const std::string& s);

 private:
  enum class State { kPending, kQueued, kTransferring, kPrefill, kDecode, kHeld };

  struct Req {
    int64_t id = 0;
    RequestSpec spec;
    RequestType type = RequestType::kContextAndGeneration;
    State state = State::kPending;
    int32_t rank = -1;
    int32_t promptLen = 0;
    std::optional<uint64_t> saltId;
    std::vector<int32_t> tokens;    ///< prompt, then generated output
    std::vector<uint64_t> hashes;   ///< v1 chain over the full blocks of tokens
    int32_t done = 0;               ///< prompt tokens whose KV exists (reused + computed)
    int32_t emitted = 0;            ///< output tokens already sent (streaming)
    bool conversationTurn = false;  ///< owns its conversation's per_conversation record
    Sequence seq;
    RequestMetrics metrics;
    int64_t transferDoneUs = 0;
    int64_t holdDeadlineUs = 0;

    int32_t outputLen() const { return static_cast<int32_t>(tokens.size()) - promptLen; }
  };

  struct PlanItem {
    int64_t id;
    int32_t prefillTokens;  ///< > 0: a prefill chunk; 0: one decode step
  };
  struct Iteration {
    bool active = false;
    int64_t startUs = 0;
    int64_t endUs = 0;
    std::vector<PlanItem> items;
  };

  // Everything below runs with mu_ held.
  int64_t nowLocked() const;
  RequestError validateLocked(const RequestSpec& spec) const;
  /// Checks a generation_only request's context against the hand-off domain (no lock held).
  RequestError pullContext(const RequestSpec& spec);
  int64_t acceptLocked(const RequestSpec& spec, const RequestError& pullError);
  void emitLocked(Response&& r);
  void emitErrorLocked(int64_t id, const RequestSpec& spec, const RequestError& error, int64_t now);
  void routePendingLocked();
  void admitLocked(int32_t rank, int64_t now);
  void startIterationLocked(int64_t now);
  void completeIterationLocked();
  void finishPrefillLocked(Req& r, int64_t now);
  bool appendTokenLocked(Req& r, int32_t token, int64_t now);  ///< true when the request finished
  void finalizeLocked(Req& r, FinishReason reason, const std::string& error, int64_t now, bool storeOutput);
  void flushStreamLocked(Req& r);
  void recordTurnLocked(Req& r);
  void releaseLocked(Req& r);
  void eraseLocked(int64_t id);
  void expireHoldsLocked(int64_t now);
  bool releaseHeldLocked(int64_t ctxRequestId);
  void wakeSchedulerLocked();
  int64_t nextWakeLocked() const;
  void extendHashes(Req& r, int32_t computedTokens) const;
  /// Each of a request's blocks' retention, from its KvCacheRetentionConfig.
  std::vector<BlockRetention> blockRetention(const RequestSpec& spec, int32_t promptLen, int32_t totalBlocks) const;
  int32_t tokenAt(const Req& r, int32_t outputPos) const;
  void driverLoop();

  const SimConfig cfg_;
  const TimingModel timing_;
  const uint64_t uid_;
  const std::shared_ptr<detail::HandoffRegistry> domain_;  ///< may be null: no in-process hand-off
  mutable std::mutex mu_;
  std::condition_variable respCv_;
  std::condition_variable workCv_;
  bool shutdown_ = false;
  int64_t nextId_ = 1;
  int64_t virtualNow_ = 0;
  std::chrono::steady_clock::time_point wallStart_;

  std::map<int64_t, Req> reqs_;  // id order = arrival order
  std::vector<int64_t> pending_;
  std::vector<std::vector<int64_t>> queued_;   // per rank, waiting for admission
  std::vector<std::vector<int64_t>> running_;  // per rank, admitted (prefill, decode, transfer)
  std::vector<int64_t> contextTokensComputed_;  // per rank, prompt tokens prefilled by ended iterations
  std::unordered_map<int64_t, int64_t> held_;  // ctx request id -> deadline
  std::vector<std::unique_ptr<KvCacheManager>> caches_;
  AdpRouter router_;
  Iteration iter_;

  // per_conversation bookkeeping, keyed by each request's own conversation id
  std::unordered_map<std::string, int64_t> liveTurn_;
  struct TurnRecord {
    int32_t rank;
    std::vector<RetainedBlock> blocks;
  };
  std::unordered_map<std::string, std::deque<TurnRecord>> records_;

  std::deque<Response> ready_;
  std::deque<KvEvent> events_;
  std::vector<int64_t> nextEventIds_;  ///< per rank
  int64_t droppedEvents_ = 0;
  IterationStats stats_;

  std::thread driver_;
};

}  // namespace affinity::sim
