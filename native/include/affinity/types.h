// Affinity native facade: flat value types shared by every executor backend.
//
// This header and executor.h are the only C++ that Java sees (through JavaCPP). Everything here is
// deliberately flat: ids, int32 token arrays, byte strings, and small structs of primitives. Byte
// strings (conversation ids, cache salts, opaque KV state) cross the boundary as (pointer, length)
// pairs so that any byte sequence, including non-ASCII UTF-8, survives unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace affinity {

/// Request phase, as TensorRT-LLM's RequestType.
enum class RequestType : int32_t { kContextAndGeneration = 0, kContextOnly = 1, kGenerationOnly = 2 };

/// Why a request stopped producing tokens.
enum class FinishReason : int32_t {
  kNotFinished = 0,
  kEndId = 1,
  kStop = 2,
  kLength = 3,
  kCancelled = 4,
  kError = 5,
};

/// What kind of error ended a request (Response::errorKind). kNone unless the request ended with
/// FinishReason::kError or kCancelled. Java mirrors the codes (dev.affinity.executor.ExecutorErrorKind).
enum class ErrorKind : int32_t {
  kNone = 0,
  /// The request itself is invalid: no or negative tokens, max_new_tokens <= 0, an unknown request
  /// type, a rank hint out of range, generation_only without context phase params; or the model
  /// refused its arguments (pytorch: a ValueError / TypeError from generate_async).
  kBadRequest = 1,
  /// generation_only: the context phase params name no context this executor can take over (expired,
  /// cancelled, already pulled, held outside its hand-off domain, or state that does not match the
  /// request).
  kContextNotFound = 2,
  /// The executor cannot take the request: it can never fit (prompt plus new tokens beyond a rank's KV
  /// cache, a prompt over max_num_tokens without chunked prefill), or too many requests are in flight.
  kCapacity = 3,
  /// Cancelled, or the executor shut down (FinishReason::kCancelled).
  kCancelled = 4,
  /// The backend failed: an exception in the model's runtime, or its host stopped or lost the request.
  kBackendFailure = 5,
};

/// KV-cache event kinds, in the shape of TensorRT-LLM's /kv_cache_events.
enum class KvEventType : int32_t { kCreated = 0, kStored = 1, kRemoved = 2, kUpdated = 3 };

/// Where a response's rank (RequestMetrics::rank) comes from. kExecutor unless the executor could not
/// say and the backend inferred it (the pytorch backend, on releases whose context output has no
/// ctx_dp_rank); Java mirrors the codes (dev.affinity.executor.RankSource).
enum class RankSource : int32_t {
  kExecutor = 0,  ///< reported by the executor (or no rank at all)
  kHint = 1,      ///< the rank the request was pinned to (a hint that is not relaxed)
  kKvEvents = 2,  ///< the rank whose KV events hold the request's prompt blocks
  kOnlyRank = 3,  ///< the executor has a single rank
};

/// Sentinel for "no rank" / "no end id".
constexpr int32_t kNone = -1;

/// One request, filled field by field (Java calls the setters once per request). Every member is
/// inline and copying is the default member-wise copy, so that both native libraries (the facade and
/// the pytorch backend's Python host, loaded RTLD_LOCAL) can use it: the one declaration of a
/// request's fields on the C++ side. A plain value: not counted by liveObjectCount().
class RequestSpec {
 public:

  void setClientRequestId(int64_t v) { clientRequestId = v; }
  void setMaxNewTokens(int32_t v) { maxNewTokens = v; }
  void setRequestType(int32_t v) { requestType = v; }
  void setStreaming(bool v) { streaming = v; }
  void setEndId(int32_t v) { endId = v; }
  void setSeed(int64_t v) { seed = v; }
  void setAdpRankHint(int32_t rank, bool relax) {
    adpRankHint = rank;
    adpRelax = relax;
  }
  void setPriority(float v) { priority = v; }
  void setInputTokens(const int32_t* data, int32_t n) { assign(inputTokens, data, n); }
  void setStopTokenIds(const int32_t* data, int32_t n) { assign(stopTokenIds, data, n); }
  void setConversationId(const char* data, int32_t n) { assign(conversationId, data, n); }
  void setSubagentAffinityId(const char* data, int32_t n) { assign(subagentAffinityId, data, n); }
  /// An empty salt is a salt, distinct from none (clearCacheSalt).
  void setCacheSalt(const char* data, int32_t n) {
    assign(cacheSalt, data, n);
    hasCacheSalt = true;
  }
  void clearCacheSalt() {
    cacheSalt.clear();
    hasCacheSalt = false;
  }
  /// Context phase params of a generation_only request (from the context_only response).
  void setContextPhase(int64_t ctxId, int32_t ctxRank, const int32_t* first, int32_t nFirst,
                       const char* opaque, int32_t nOpaque) {
    hasContextPhase = true;
    ctxRequestId = ctxId;
    ctxDpRank = ctxRank;
    assign(firstGenTokens, first, nFirst);
    assign(opaqueState, opaque, nOpaque);
  }
  /// One token range of the request's KV-cache retention (TensorRT-LLM's
  /// KvCacheRetentionConfig::TokenRangeRetentionConfig, executor.h): the prompt blocks whose first token lies in
  /// [tokenStart, tokenEnd) (tokenEnd kNone: to the end of the prompt) take `rangePriority` (0 to 100; the default is
  /// 35), which reverts to the default `durationMs` after the block is released (kNone: never).
  void addRetentionRange(int32_t tokenStart, int32_t tokenEnd, int32_t rangePriority, int64_t durationMs) {
    retentionRanges.push_back({tokenStart, tokenEnd, rangePriority, durationMs});
    hasRetention = true;
  }
  /// The retention of the blocks the request allocates beyond its prompt (KvCacheRetentionConfig's
  /// decodeRetentionPriority and decodeDurationMs; durationMs kNone: never).
  void setDecodeRetention(int32_t decodePriority, int64_t durationMs) {
    decodeRetentionPriority = decodePriority;
    decodeRetentionDurationMs = durationMs;
    hasRetention = true;
  }
  /// Resets every field to its default so that one spec can be reused for the next request.
  void reset() { *this = RequestSpec(); }

  /// A token range of the KV-cache retention (addRetentionRange).
  struct RetentionRange {
    int32_t tokenStart = 0;
    int32_t tokenEnd = kNone;
    int32_t priority = 35;
    int64_t durationMs = kNone;
  };

  int64_t clientRequestId = 0;
  int32_t maxNewTokens = 0;
  int32_t requestType = 0;
  bool streaming = false;
  int32_t endId = kNone;
  int64_t seed = 0;
  int32_t adpRankHint = kNone;
  bool adpRelax = true;
  float priority = 0.5f;
  bool hasCacheSalt = false;
  bool hasContextPhase = false;
  int64_t ctxRequestId = 0;
  int32_t ctxDpRank = kNone;
  std::vector<int32_t> inputTokens;
  std::vector<int32_t> stopTokenIds;
  std::vector<int32_t> firstGenTokens;
  std::string conversationId;
  std::string subagentAffinityId;
  std::string cacheSalt;
  std::string opaqueState;
  /// Whether the request carries a KV-cache retention config (without one, TensorRT-LLM's defaults apply:
  /// prompt blocks keep the priority they have, new blocks get 35, no duration).
  bool hasRetention = false;
  std::vector<RetentionRange> retentionRanges;
  int32_t decodeRetentionPriority = 35;
  int64_t decodeRetentionDurationMs = kNone;

 private:
  template <typename C, typename T>
  static void assign(C& dst, const T* data, int32_t n) {
    if (data == nullptr || n <= 0) {
      dst.clear();
    } else {
      dst.assign(data, data + n);
    }
  }
};

/// A group of requests for one enqueue call.
class RequestBatch {
 public:
  RequestBatch();
  ~RequestBatch();
  RequestBatch(const RequestBatch&) = delete;
  RequestBatch& operator=(const RequestBatch&) = delete;
  void add(const RequestSpec& spec) { specs.push_back(spec); }
  int32_t size() const { return static_cast<int32_t>(specs.size()); }
  void clear() { specs.clear(); }
  std::vector<RequestSpec> specs;
};

/// Per-request metrics, in the executor's clock (microseconds). -1 where not reached.
struct RequestMetrics {
  int64_t arrivalUs = -1;
  int64_t scheduledUs = -1;
  int64_t firstTokenUs = -1;
  int64_t finishUs = -1;
  int32_t promptTokens = 0;
  int32_t reusedTokens = 0;  ///< prompt tokens served from the KV cache (prefix hit)
  int32_t rank = kNone;      ///< the ADP rank that served the request
  int32_t outputTokens = 0;
  int64_t transferUs = 0;  ///< KV transfer time charged to a generation_only request
  int32_t rankSource = 0;  ///< RankSource: where `rank` comes from
};

/// One response: a streamed chunk, a final result or an error.
struct Response {
  int64_t requestId = 0;
  int64_t clientRequestId = 0;
  std::vector<int32_t> tokens;  ///< new tokens since the previous response of this request
  int32_t finishReason = 0;
  bool isFinal = false;
  std::string errorMessage;
  int32_t errorKind = 0;         ///< ErrorKind; kNone unless finishReason is kError or kCancelled
  bool hasContextPhase = false;  ///< set on the final response of a context_only request
  int64_t ctxRequestId = 0;
  int32_t ctxDpRank = kNone;
  std::vector<int32_t> firstGenTokens;
  std::string opaqueState;
  RequestMetrics metrics;
};

/// Responses handed to Java in one call. Numeric fields are packed with a fixed stride so that a
/// whole batch crosses JNI in a few copies (see copyLongs).
class ResponseBatch {
 public:
  /// Layout of copyLongs: kLongStride values per response, in this order.
  enum Field : int32_t {
    kRequestId = 0,
    kClientRequestId,
    kFinishReason,
    kIsFinal,
    kTokenOffset,
    kTokenCount,
    kHasContextPhase,
    kCtxRequestId,
    kCtxDpRank,
    kFirstGenOffset,
    kFirstGenCount,
    kArrivalUs,
    kScheduledUs,
    kFirstTokenUs,
    kFinishUs,
    kPromptTokens,
    kReusedTokens,
    kRank,
    kOutputTokens,
    kTransferUs,
    kErrorKind,
    kRankSource,
    kLongStride
  };

  ResponseBatch();
  ~ResponseBatch();
  ResponseBatch(const ResponseBatch&) = delete;
  ResponseBatch& operator=(const ResponseBatch&) = delete;

  int32_t size() const { return static_cast<int32_t>(responses.size()); }
  void clear() { responses.clear(); }
  /// Total new tokens of all responses (size of the copyTokens buffer).
  int32_t totalTokens() const;
  /// Total first-generation tokens of all context phase params (size of copyFirstGenTokens).
  int32_t totalFirstGenTokens() const;
  /// Writes size() * kLongStride values.
  void copyLongs(int64_t* out) const;
  /// Writes totalTokens() values: every response's tokens, concatenated in order.
  void copyTokens(int32_t* out) const;
  void copyFirstGenTokens(int32_t* out) const;
  int32_t errorMessageSize(int32_t i) const;
  void copyErrorMessage(int32_t i, char* out) const;
  int32_t opaqueStateSize(int32_t i) const;
  void copyOpaqueState(int32_t i, char* out) const;

  std::vector<Response> responses;
};

/// One KV-cache event (TensorRT-LLM's KVCacheEvent, flattened).
struct KvEvent {
  int64_t eventId = 0;
  int32_t type = 0;
  int32_t rank = 0;        ///< attention-DP rank whose cache changed
  int32_t windowSize = 0;  ///< attention window (tokens); full attention reports max context
  bool hasParent = false;  ///< stored: whether parentHash is set
  uint64_t parentHash = 0;
  std::vector<uint64_t> blockHashes;  ///< stored / removed / updated
  std::vector<int32_t> tokens;        ///< stored: tokens of every block, tokensPerBlock each
  int64_t value = 0;      ///< created: blocks per cache level; updated: new priority
  int32_t cacheLevel = 0;
};

/// Events handed to Java in one call, packed like ResponseBatch.
class KvEventBatch {
 public:
  enum Field : int32_t {
    kEventId = 0,
    kType,
    kRank,
    kWindowSize,
    kHasParent,
    kParentHash,
    kHashOffset,
    kHashCount,
    kTokenOffset,
    kTokenCount,
    kValue,
    kCacheLevel,
    kLongStride
  };
  KvEventBatch();
  ~KvEventBatch();
  KvEventBatch(const KvEventBatch&) = delete;
  KvEventBatch& operator=(const KvEventBatch&) = delete;

  int32_t size() const { return static_cast<int32_t>(events.size()); }
  void clear() { events.clear(); }
  int32_t totalHashes() const;
  int32_t totalTokens() const;
  void copyLongs(int64_t* out) const;
  /// Block hashes as raw 64-bit patterns (Java reads them as unsigned longs).
  void copyHashes(int64_t* out) const;
  void copyTokens(int32_t* out) const;

  std::vector<KvEvent> events;
};

/// KV-cache statistics of one attention-DP rank.
struct KvCacheStats {
  KvCacheStats();
  ~KvCacheStats();
  KvCacheStats(const KvCacheStats& other);
  KvCacheStats& operator=(const KvCacheStats& other) = default;
  int64_t maxNumBlocks = 0;
  int64_t freeNumBlocks = 0;    ///< never used or evicted: holds no reusable content
  int64_t usedNumBlocks = 0;    ///< referenced by at least one live request (or held for handoff)
  int64_t cachedNumBlocks = 0;  ///< unreferenced but reusable (evictable, LRU)
  int64_t tokensPerBlock = 0;
  int64_t allocTotalBlocks = 0;
  int64_t allocNewBlocks = 0;
  int64_t reusedBlocks = 0;
  int64_t missedBlocks = 0;
  int64_t evictedBlocks = 0;
  int64_t activeRequests = 0;  ///< requests assigned to this rank and not finished
  int64_t queuedRequests = 0;  ///< of those, waiting for admission
  double cacheHitRate = 0.0;   ///< reusedBlocks / (reusedBlocks + missedBlocks)
  /// Prompt tokens the rank has computed (prefilled, not reused) since it started, counted when their iteration
  /// ends; cumulative, as the sum of TensorRT-LLM's per-iteration inflightBatchingStats.numCtxTokens. -1: the
  /// backend does not report it.
  int64_t contextTokensComputed = -1;
};

/// Executor-wide counters and the shape of the last iteration.
struct IterationStats {
  IterationStats();
  ~IterationStats();
  IterationStats(const IterationStats& other);
  IterationStats& operator=(const IterationStats& other) = default;
  int64_t iterations = 0;
  int64_t lastIterationStartUs = -1;
  int64_t lastIterationDurationUs = 0;
  int32_t lastContextRequests = 0;
  int32_t lastGenerationRequests = 0;
  int64_t lastContextTokens = 0;  ///< uncached prompt tokens computed in the last iteration
  int32_t activeRequests = 0;     ///< accepted and not finished
  int32_t pendingRequests = 0;    ///< accepted but not yet assigned to a rank
  int32_t heldContexts = 0;       ///< context_only results whose KV waits for a generation pull
  int64_t completedRequests = 0;
  int64_t totalPromptTokens = 0;
  int64_t totalReusedTokens = 0;
  int64_t totalGeneratedTokens = 0;
  int64_t busyUs = 0;  ///< sum of iteration durations
  int64_t rejectedPollItems = 0;  ///< KV events and statistics rows of an unexpected shape, skipped (pytorch)
};

}  // namespace affinity
