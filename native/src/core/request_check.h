// The checks every backend makes before it accepts a request. A bad request is never thrown: the
// executor accepts it and answers it with one final error response carrying the kind and message.
#pragma once

#include <sstream>
#include <string>
#include <utility>

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
  return {};
}

}  // namespace affinity
