// The interface between the "pytorch" backend (PyTorchExecutor, in the facade library, which never
// sees Python) and the Python host library (libaffinity_pyhost.so, compiled against Python.h but not
// linked to libpython; loaded with dlopen only when a pytorch executor is created).
//
// Both libraries are built by the same CMake run, so C++ types cross this boundary. Only types whose
// members are all inline cross it (RequestSpec, Response, KvEvent and the structs below): the
// facade's IterationStats / KvCacheStats have out-of-line constructors (live-object accounting) that
// the host library could not resolve (both libraries are loaded RTLD_LOCAL).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "affinity/types.h"

namespace affinity::pyhost {

/// Bumped whenever anything in this header (or a type it passes: RequestSpec, Response, KvEvent)
/// changes; the facade refuses a host of another version.
constexpr int32_t kHostAbiVersion = 3;

/// Statistics one engine reports (from the LLM's iteration stats), per attention-DP rank where the
/// LLM reports them per rank. Fields the LLM does not report stay -1.
struct HostRankStats {
  int32_t rank = 0;
  /// The rank's own load: its scheduled and paused requests (inflightBatchingStats). Never the row's
  /// numActiveRequests, which TensorRT-LLM copies into every rank's row from one base row.
  int64_t activeRequests = -1;
  int64_t maxNumBlocks = -1;
  int64_t freeNumBlocks = -1;
  int64_t usedNumBlocks = -1;
  int64_t tokensPerBlock = -1;
  int64_t allocTotalBlocks = -1;
  int64_t allocNewBlocks = -1;
  int64_t reusedBlocks = -1;
  int64_t missedBlocks = -1;
  double cacheHitRate = -1;
  /// The context tokens the rank computed in the iteration (its own inflightBatchingStats.numCtxTokens); -1: absent.
  int64_t contextTokens = -1;
};
struct HostIterationStats {
  int64_t iteration = -1;
  double iterationLatencyMs = -1;
  int32_t contextRequests = -1;
  int32_t generationRequests = -1;
  int64_t contextTokens = -1;
  int32_t queuedRequests = -1;  ///< waiting for admission (rank 0's row reports it)
  std::vector<HostRankStats> ranks;
};

/// Implemented by the facade's executor; called on the host's Python thread (with the GIL held), so
/// every method must return quickly and must not call back into the host.
class EngineSink {
 public:
  virtual ~EngineSink() = default;
  /// One response of a request (a streamed chunk or its one final response).
  virtual void onResponse(Response&& response) = 0;
  virtual void onKvEvents(std::vector<KvEvent>&& events) = 0;
  virtual void onStats(const HostIterationStats& stats) = 0;
  /// The engine skipped n items of an unexpected shape in one of the LLM's streams ("kv_events",
  /// "stats"); the poller goes on.
  virtual void onRejected(const std::string& stream, int64_t n) = 0;
  /// The host's loop ended without shutting this engine down (it failed): no response will come for
  /// the engine's live requests, which must be ended here.
  virtual void onHostStopped(const std::string& why) = 0;
};

/// The host's settings, fixed for the life of the process (the interpreter starts once).
struct HostStartConfig {
  std::string programName;              ///< the interpreter whose libpython is loaded (a venv's bin/python)
  std::vector<std::string> pythonPath;  ///< extra sys.path entries, first first
};

/// Tokenizer operations of Host::call.
constexpr int32_t kCallTokenize = 0;
constexpr int32_t kCallTokenizeChat = 1;
constexpr int32_t kCallDetokenize = 2;

/// Submit results.
constexpr int32_t kSubmitOk = 0;
constexpr int32_t kSubmitStopped = -1;  ///< the host is not running (stopped, or never started)
constexpr int32_t kSubmitBusy = -2;     ///< max_inflight requests are accepted and not finished
constexpr int32_t kSubmitNoEngine = -3; ///< the engine is unknown (destroyed)

/// The host: one interpreter and one thread running an asyncio loop, serving any number of engines
/// (one tensorrt_llm.LLM each). Every method is thread-safe and none takes the GIL on the caller's
/// thread: commands travel through a queue and an eventfd to the loop thread.
class Host {
 public:
  virtual ~Host() = default;
  /// Python's "major.minor" this library was compiled for.
  virtual const char* builtFor() const = 0;
  /// Starts the interpreter and the loop thread once per process. Returns "" or the error (with the
  /// Python traceback where there is one). A second call with the same settings returns "".
  virtual std::string start(const HostStartConfig& config) = 0;
  /// Creates engine `engineId` (imports tensorrt_llm, builds the LLM) and blocks until it is ready or
  /// failed. Returns "" or the error text (a traceback). configJson is the engine's JSON settings.
  virtual std::string createEngine(int64_t engineId, const std::string& configJson, EngineSink* sink,
                                   std::string* describeOut) = 0;
  /// Queues one request under its executor request id; returns a kSubmit* code. Exactly one final
  /// response (with that request id) follows kSubmitOk.
  virtual int32_t submit(int64_t engineId, int64_t requestId, RequestSpec&& request) = 0;
  virtual void cancel(int64_t engineId, int64_t requestId) = 0;
  /// Runs a tokenizer operation on the engine's LLM (kCallTokenize / kCallTokenizeChat: text in,
  /// tokensOut; kCallDetokenize: tokensIn in, textOut) and waits up to timeoutMs for it. Returns ""
  /// or the error (a traceback).
  virtual std::string call(int64_t engineId, int32_t op, const std::string& text, const std::vector<int32_t>& tokensIn,
                           std::vector<int32_t>* tokensOut, std::string* textOut, int64_t timeoutMs) = 0;
  /// Cancels the engine's live requests (each gets a final kCancelled response), shuts its LLM down
  /// and forgets its sink; blocks until done. No sink call happens after this returns.
  virtual void destroyEngine(int64_t engineId) = 0;
  /// Stops the loop (destroying every engine first) and finalizes the interpreter, waiting up to
  /// timeoutMs for the loop thread. Returns Py_FinalizeEx's result, or -2 on timeout, -3 if never started.
  virtual int32_t stop(int64_t timeoutMs) = 0;
  virtual bool running() const = 0;
};

}  // namespace affinity::pyhost

extern "C" {
/// The host library's single entry point: its ABI version.
int32_t affinity_pyhost_abi_version();
/// The process-wide host.
affinity::pyhost::Host* affinity_pyhost_instance();
}
