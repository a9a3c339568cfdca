// Affinity native facade: the executor interface and its factory.
//
// Every backend (the CPU simulator "sim", the PyTorch/TensorRT-LLM backend "pytorch") implements
// Executor. All methods are thread-safe. Errors in a request (bad tokens, unknown context, a prompt
// larger than the cache...) never throw: they come back as a final Response with FinishReason::kError,
// an ErrorKind and a message naming the problem. Methods throw (std::invalid_argument / std::runtime_error) only
// for misuse of the executor itself: bad configuration, a call after shutdown, a clock call in the
// wrong mode. JavaCPP turns those exceptions into Java RuntimeExceptions carrying the message.
#pragma once

#include <cstdint>
#include <string>

#include "affinity/handoff.h"
#include "affinity/types.h"

namespace affinity {

/// How the executor's clock advances.
enum class ClockMode : int32_t {
  kReal = 0,     ///< a driver thread runs iterations and waits their modelled duration (scaled)
  kVirtual = 1,  ///< the caller advances the clock (advanceTo); nothing runs on its own
};

class Executor {
 public:
  virtual ~Executor();

  /// Accepts one request and returns its executor request id (> 0). Invalid requests are accepted
  /// too and answered with an error response.
  virtual int64_t enqueue(const RequestSpec& spec) = 0;
  /// Accepts every request of the batch; writes batch.size() ids to idsOut.
  virtual void enqueueBatch(const RequestBatch& batch, int64_t* idsOut) = 0;

  /// Moves up to maxResponses ready responses into out (out is cleared first). Blocks up to
  /// timeoutUs microseconds (0 = do not block, < 0 = until a response or shutdown) while none is
  /// ready. Returns out.size().
  virtual int32_t awaitResponses(ResponseBatch& out, int32_t maxResponses, int64_t timeoutUs) = 0;

  /// Cancels a live request: it ends with FinishReason::kCancelled and frees its KV. A context_only
  /// request whose KV is held for a generation pull releases that hold. Unknown ids are a no-op.
  virtual void cancel(int64_t requestId) = 0;

  /// A client ended a conversation (its session is final): what the executor keeps for it becomes
  /// evictable first. The CPU executor with block_reuse.policy per_conversation drops the turns it
  /// retains for the conversation at once (blocks other conversations retain or running requests use
  /// stay), and a turn of it still running records nothing when it ends. Other backends and policies
  /// keep nothing per conversation: a no-op (the default). Unknown ids are a no-op.
  virtual void endConversation(const std::string& conversationId);

  /// Moves up to maxEvents buffered KV-cache events into out (out is cleared first).
  virtual int32_t drainKvEvents(KvEventBatch& out, int32_t maxEvents) = 0;

  virtual void getIterationStats(IterationStats& out) = 0;
  /// Throws std::out_of_range for a rank outside [0, numRanks()).
  virtual void getKvCacheStats(int32_t rank, KvCacheStats& out) = 0;

  virtual int32_t numRanks() const = 0;
  virtual int32_t tokensPerBlock() const = 0;
  /// The configuration actually in effect, defaults filled in, as JSON.
  virtual std::string describe() const = 0;

  /// The model's tokenizer, for backends that run a real model ("pytorch": the LLM's own tokenizer
  /// and chat template). mode 0: text (special tokens added as the model does); mode 1: a JSON array
  /// of chat messages ({"role", "content"}), rendered with the model's chat template and a generation
  /// prompt. Writes at most capacity ids to out and returns the full count (call again with a larger
  /// buffer when it exceeds capacity). Backends without a tokenizer throw std::logic_error. Blocking.
  virtual int32_t tokenize(const std::string& text, int32_t mode, int32_t* out, int32_t capacity);
  /// Token ids to text with the model's tokenizer (special tokens skipped); std::logic_error without one.
  virtual std::string detokenize(const int32_t* tokens, int32_t n);

  virtual int32_t clockMode() const = 0;
  /// Current time of the executor's clock, in microseconds since it was created.
  virtual int64_t nowUs() = 0;
  /// Virtual mode only: runs every iteration that ends at or before timeUs, then sets the clock to
  /// timeUs. Throws std::logic_error in real mode or when timeUs is in the past.
  virtual void advanceTo(int64_t timeUs) = 0;
  /// Virtual mode only: when the current (or next, starting now) iteration ends; -1 when idle.
  virtual int64_t nextIterationEndUs() = 0;

  /// Stops the executor: every live request receives one final response (kCancelled, "executor
  /// shut down"), the driver thread stops, and later enqueues throw. Idempotent.
  virtual void shutdown() = 0;
  virtual bool isShutdown() const = 0;

 protected:
  Executor();
};

/// Creates an executor. backend: "sim" (the CPU executor) or "pytorch" (TensorRT-LLM's PyTorch
/// executor in an embedded CPython; docs/gpu.md). configJson: a JSON object (may be "" or
/// "{}" for defaults). Throws std::invalid_argument naming the unknown backend or the bad key.
Executor* createExecutor(const std::string& backend, const std::string& configJson);
/// The same, in a hand-off domain (affinity/handoff.h): executors of one domain take over each
/// other's held contexts in process. nullptr: no domain (a generation_only request for a context
/// held by another executor of this process is then answered with ErrorKind::kContextNotFound).
/// Only "sim" uses the domain; "pytorch" hands off through TensorRT-LLM's cache transceiver.
Executor* createExecutor(const std::string& backend, const std::string& configJson, const HandoffDomain* domain);
/// Validates a configuration without creating the executor (no thread, no Python, no model):
/// throws what createExecutor would throw for a bad backend name or a bad key.
void checkExecutorConfig(const std::string& backend, const std::string& configJson);
/// Shuts down (if needed) and deletes an executor created by createExecutor.
void destroyExecutor(Executor* executor);
/// Number of live facade objects that Java allocates and must free: executors, hand-off domains,
/// request / response / KV-event batches, statistics. Plain values (RequestSpec, Response) are not
/// counted. For leak tests.
int64_t liveObjectCount();
/// The names of the compiled-in backends, comma-separated.
std::string availableBackends();
/// Stops the process-wide backend runtimes: the pytorch backend's Python host (every engine, then
/// the interpreter, which starts only once per process). For a shutdown hook. Returns 0 when Python
/// finalized cleanly, -3 when it never started, -2 on timeout, else Py_FinalizeEx's result.
int32_t shutdownBackends(int64_t timeoutMs);
/// Facade version string.
std::string nativeVersion();

}  // namespace affinity
