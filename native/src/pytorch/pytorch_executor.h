// PyTorchExecutor: backend "pytorch". Drives one tensorrt_llm.LLM (TensorRT-LLM's PyTorch executor)
// through the process's embedded Python host: requests go to the host's queue, responses come back
// on the host thread into this executor's queue, so Java threads never hold the GIL. KV events and
// iteration statistics are polled from the LLM by the host and buffered here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "affinity/executor.h"
#include "host_api.h"
#include "pytorch_config.h"

namespace affinity::pytorch {

class PyTorchExecutor final : public Executor, private pyhost::EngineSink {
 public:
  explicit PyTorchExecutor(const PyTorchConfig& cfg);
  ~PyTorchExecutor() override;

  int64_t enqueue(const RequestSpec& spec) override;
  void enqueueBatch(const RequestBatch& batch, int64_t* idsOut) override;
  int32_t awaitResponses(ResponseBatch& out, int32_t maxResponses, int64_t timeoutUs) override;
  void cancel(int64_t requestId) override;
  int32_t drainKvEvents(KvEventBatch& out, int32_t maxEvents) override;
  void getIterationStats(IterationStats& out) override;
  void getKvCacheStats(int32_t rank, KvCacheStats& out) override;
  int32_t numRanks() const override { return cfg_.numRanks; }
  int32_t tokensPerBlock() const override { return cfg_.tokensPerBlock; }
  std::string describe() const override;
  int32_t tokenize(const std::string& text, int32_t mode, int32_t* out, int32_t capacity) override;
  std::string detokenize(const int32_t* tokens, int32_t n) override;
  int32_t clockMode() const override { return static_cast<int32_t>(ClockMode::kReal); }
  int64_t nowUs() override;
  void advanceTo(int64_t timeUs) override;
  int64_t nextIterationEndUs() override;
  void shutdown() override;
  bool isShutdown() const override;

 private:
  struct Live {
    int64_t clientRequestId = 0;
    int32_t promptTokens = 0;
    int32_t outputTokens = 0;
    int32_t rank = kNone;  ///< the rank it runs on, once known (pinned by a strict hint, or reported)
    int32_t rankSource = 0;
    int64_t arrivalUs = 0;
    int64_t firstTokenUs = -1;
  };

  // EngineSink: called on the host thread.
  void onResponse(Response&& response) override;
  void onKvEvents(std::vector<KvEvent>&& events) override;
  void onStats(const pyhost::HostIterationStats& stats) override;
  void onRejected(const std::string& stream, int64_t n) override;
  void onHostStopped(const std::string& why) override;
  /// Ends every live request with one final response (ids in order).
  void failAllLocked(FinishReason reason, ErrorKind kind, const std::string& message);

  int64_t nowLocked() const;
  void pushErrorLocked(int64_t id, int64_t clientId, FinishReason reason, ErrorKind kind, const std::string& message);

  const PyTorchConfig cfg_;
  const int64_t engineId_;
  pyhost::Host* host_ = nullptr;
  std::string engineDescribe_;
  const std::chrono::steady_clock::time_point start_;

  mutable std::mutex mu_;
  std::condition_variable respCv_;
  bool shutdown_ = false;
  int64_t nextId_ = 1;
  std::unordered_map<int64_t, Live> live_;
  std::deque<Response> ready_;
  std::deque<KvEvent> events_;
  int64_t droppedEvents_ = 0;
  std::map<std::string, int64_t> rejected_;  ///< stream -> items of an unexpected shape that the driver skipped
  std::map<int32_t, pyhost::HostRankStats> rankStats_;
  std::map<int32_t, int64_t> rankContextTokens_;  ///< per rank, numCtxTokens summed over the rows received
  int32_t queued_ = 0;  ///< the LLM's waiting queue, from its statistics
  IterationStats stats_;
};

}  // namespace affinity::pytorch
