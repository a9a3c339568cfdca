// The checks every backend makes before it accepts a request. A bad request is never thrown: the
// executor accepts it and answers it with one final error response carrying the kind and message.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "affinity/types.h"

namespace affinity {

/// What a request is answered with when it cannot run: the kind and a message naming the problem.
struct RequestError {
  ErrorKind kind = ErrorKind::kNone;
  std::string message;

  RequestError() = default;
  RequestError(ErrorKind k, std::string m) : kind(k), message(std::move(m)) {}
  bool any() const { return kind != ErrorKind::kNone; }
};

/// The parts, streamed into one string.
template <typename... Parts>
std::string concatMessage(const Parts&... parts) {
  std::ostringstream o;
  (o << ... << parts);
  return o.str();
}

/// A retention config's token ranges in order of their start (KvCacheRetentionConfig sorts them so).
inline std::vector<RequestSpec::RetentionRange> sortedRetention(const RequestSpec& s) {
  std::vector<RequestSpec::RetentionRange> r = s.retentionRanges;
  std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.tokenStart < b.tokenStart; });
  return r;
}

/// kBadRequest for a retention config TensorRT-LLM refuses (tensorrt_llm/executor/kvCacheRetentionConfig.cpp):
/// a priority outside [0, 100], a negative start, an empty range, an open range that is not the last, overlapping
/// ranges, or a negative duration.
inline RequestError checkRetention(const RequestSpec& s) {
  auto bad = [](std::string m) { return RequestError(ErrorKind::kBadRequest, std::move(m)); };
  if (!s.hasRetention) return {};
  const auto ranges = sortedRetention(s);
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    if (r.priority < 0 || r.priority > 100) {
      return bad(concatMessage("kv_cache_retention_config: priority ", r.priority, " is outside [0, 100]"));
    }
    if (r.tokenStart < 0) return bad(concatMessage("kv_cache_retention_config: token_start ", r.tokenStart, " is negative"));
    if (r.tokenEnd != kNone && r.tokenEnd <= r.tokenStart) {
      return bad(concatMessage("kv_cache_retention_config: the range [", r.tokenStart, ", ", r.tokenEnd,
                               ") must have a positive, non-zero length"));
    }
    if (r.tokenEnd == kNone && i + 1 < ranges.size()) {
      return bad("kv_cache_retention_config: only the last token range may be open-ended");
    }
    if (i + 1 < ranges.size() && r.tokenEnd > ranges[i + 1].tokenStart) {
      return bad(concatMessage("kv_cache_retention_config: token ranges [", r.tokenStart, ", ", r.tokenEnd, ") and [",
                               ranges[i + 1].tokenStart, ", ...) overlap"));
    }
    if (r.durationMs < kNone) {
      return bad(concatMessage("kv_cache_retention_config: duration_ms ", r.durationMs, " is negative"));
    }
  }
  if (s.decodeRetentionPriority < 0 || s.decodeRetentionPriority > 100) {
    return bad(concatMessage("kv_cache_retention_config: decode_retention_priority ", s.decodeRetentionPriority,
                             " is outside [0, 100]"));
  }
  if (s.decodeRetentionDurationMs < kNone) {
    return bad(concatMessage("kv_cache_retention_config: decode_duration_ms ", s.decodeRetentionDurationMs, " is negative"));
  }
  return {};
}

/// kBadRequest for a request no executor of numRanks ranks can run; none otherwise.
inline RequestError checkRequest(const RequestSpec& s, int32_t numRanks) {
  auto bad = [](std::string m) { return RequestError(ErrorKind::kBadRequest, std::move(m)); };
  if (s.inputTokens.empty()) return bad("input_token_ids is empty");
  if (s.maxNewTokens <= 0) return bad(concatMessage("max_new_tokens must be > 0, got ", s.maxNewTokens));
  if (s.requestType < 0 || s.requestType > 2) {
    return bad(concatMessage("request_type ", s.requestType,
                             " is not one of 0 (context_and_generation), 1 (context_only), 2 (generation_only)"));
  }
  for (size_t i = 0; i < s.inputTokens.size(); ++i) {
    if (s.inputTokens[i] < 0) return bad(concatMessage("token id ", s.inputTokens[i], " at position ", i, " is negative"));
  }
  if (s.adpRankHint < -1 || s.adpRankHint >= numRanks) {
    return bad(concatMessage("attention_dp_rank ", s.adpRankHint, " is out of range [0, ", numRanks, ")"));
  }
  if (static_cast<RequestType>(s.requestType) == RequestType::kGenerationOnly && !s.hasContextPhase) {
    return bad("generation_only request without context phase params");
  }
  if (!(s.priority >= 0.0f && s.priority <= 1.0f)) {  // TensorRT-LLM's GenerationRequest refuses it (ValueError)
    return bad(concatMessage("priority must be in [0, 1], got ", s.priority));
  }
  return checkRetention(s);
}

}  // namespace affinity
