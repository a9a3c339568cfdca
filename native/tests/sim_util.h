// Helpers shared by the executor-level C++ tests: build specs, drive a virtual-clock executor,
// collect responses and KV events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "affinity/executor.h"
#include "check.h"

namespace testutil {

using affinity::Executor;
using affinity::KvCacheStats;
using affinity::KvEvent;
using affinity::KvEventType;
using affinity::RequestSpec;
using affinity::Response;

struct ExecDeleter {
  void operator()(Executor* e) const { affinity::destroyExecutor(e); }
};
using ExecPtr = std::unique_ptr<Executor, ExecDeleter>;

/// A sim executor, in a hand-off domain or (nullptr) none.
inline ExecPtr make(const std::string& json, const affinity::HandoffDomain* domain = nullptr) {
  return ExecPtr(affinity::createExecutor("sim", json, domain));
}

inline int32_t fin(affinity::FinishReason r) { return static_cast<int32_t>(r); }
inline int32_t kind(affinity::ErrorKind k) { return static_cast<int32_t>(k); }

/// n tokens start, start+1, ... (distinct prompts use distinct starts).
inline std::vector<int32_t> seqTokens(int32_t start, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = start + i;
  return t;
}

inline std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline RequestSpec spec(const std::vector<int32_t>& tokens, int32_t maxNew, int64_t clientId = 0) {
  RequestSpec s;
  s.setInputTokens(tokens.data(), static_cast<int32_t>(tokens.size()));
  s.setMaxNewTokens(maxNew);
  s.setClientRequestId(clientId);
  return s;
}

inline void setConv(RequestSpec& s, const std::string& conv) {
  s.setConversationId(conv.data(), static_cast<int32_t>(conv.size()));
}
inline void setAffinity(RequestSpec& s, const std::string& id) {
  s.setSubagentAffinityId(id.data(), static_cast<int32_t>(id.size()));
}

/// Every ready response, without blocking.
inline std::vector<Response> take(Executor& e) {
  std::vector<Response> all;
  affinity::ResponseBatch b;
  while (e.awaitResponses(b, 1000, 0) > 0) {
    for (auto& r : b.responses) all.push_back(std::move(r));
  }
  return all;
}

/// Runs one iteration (virtual clock). Returns false when idle.
inline bool step(Executor& e) {
  const int64_t t = e.nextIterationEndUs();
  if (t < 0) return false;
  e.advanceTo(t);
  return true;
}

/// Runs iterations until idle; returns the number run.
inline int runIdle(Executor& e, int maxSteps = 1000000) {
  int n = 0;
  while (n < maxSteps && step(e)) ++n;
  if (n >= maxSteps) throw check::Failure("executor did not become idle");
  return n;
}

/// Runs until idle and returns every response (in emission order).
inline std::vector<Response> runAll(Executor& e) {
  runIdle(e);
  return take(e);
}

/// The final response of each request id.
inline std::map<int64_t, Response> finals(const std::vector<Response>& rs) {
  std::map<int64_t, Response> m;
  for (const auto& r : rs) {
    if (!r.isFinal) continue;
    if (m.count(r.requestId) != 0) throw check::Failure("two final responses for request " + std::to_string(r.requestId));
    m[r.requestId] = r;
  }
  return m;
}

/// The only final response of request id.
inline Response finalOf(const std::vector<Response>& rs, int64_t id) {
  const auto m = finals(rs);
  auto it = m.find(id);
  if (it == m.end()) throw check::Failure("no final response for request " + std::to_string(id));
  return it->second;
}

/// All output tokens of request id (streamed chunks concatenated).
inline std::vector<int32_t> outputOf(const std::vector<Response>& rs, int64_t id) {
  std::vector<int32_t> out;
  for (const auto& r : rs) {
    if (r.requestId == id) out.insert(out.end(), r.tokens.begin(), r.tokens.end());
  }
  return out;
}

inline std::vector<KvEvent> events(Executor& e) {
  std::vector<KvEvent> all;
  affinity::KvEventBatch b;
  while (e.drainKvEvents(b, 1000) > 0) {
    for (auto& ev : b.events) all.push_back(std::move(ev));
  }
  return all;
}

inline std::vector<KvEvent> ofType(const std::vector<KvEvent>& evs, KvEventType t) {
  std::vector<KvEvent> out;
  for (const auto& e : evs) {
    if (e.type == static_cast<int32_t>(t)) out.push_back(e);
  }
  return out;
}

/// The hashes of every event of one type, concatenated in order.
inline std::vector<uint64_t> hashesOf(const std::vector<KvEvent>& evs, KvEventType t) {
  std::vector<uint64_t> out;
  for (const auto& e : ofType(evs, t)) out.insert(out.end(), e.blockHashes.begin(), e.blockHashes.end());
  return out;
}

inline KvCacheStats kvStats(Executor& e, int32_t rank = 0) {
  KvCacheStats s;
  e.getKvCacheStats(rank, s);
  return s;
}

inline bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

template <typename T>
bool containsAll(const std::vector<T>& hay, const std::vector<T>& needles) {
  for (const auto& n : needles) {
    if (std::find(hay.begin(), hay.end(), n) == hay.end()) return false;
  }
  return true;
}

}  // namespace testutil
