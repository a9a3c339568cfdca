// The state behind a HandoffDomain (affinity/handoff.h): the domain's live executors that hold
// contexts, and the ones that are gone. Shared (std::shared_ptr) by the domain handle and every
// executor created in it, so that no executor outlives it.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace affinity::detail {

/// An executor that holds context KV for generation pulls (the sim executor).
class ContextHolder {
 public:
  /// Frees the KV that context_only request ctxRequestId holds; false if it holds none (expired,
  /// cancelled, already pulled or unknown).
  virtual bool releaseHeldContext(int64_t ctxRequestId) = 0;

 protected:
  ~ContextHolder() = default;
};

class HandoffRegistry {
 public:
  /// What a pull of a context found.
  enum class Pull {
    kReleased,  ///< held by a live executor of the domain, now freed
    kNotHeld,   ///< that executor holds no such context (expired, cancelled, already pulled)
    kGone,      ///< that executor was destroyed (which freed its KV)
    kForeign,   ///< no executor of the domain ever had that id
  };

  /// Registers a live executor under its uid.
  void add(uint64_t uid, ContextHolder* holder) {
    std::lock_guard<std::mutex> lk(mu_);
    live_[uid] = holder;
  }

  /// Unregisters an executor that is being destroyed; once this returns no pull reaches it.
  void remove(uint64_t uid) {
    std::lock_guard<std::mutex> lk(mu_);
    if (live_.erase(uid) > 0) gone_.insert(uid);
  }

  /// Frees context ctxRequestId on executor uid, if the domain has it. Lock order: the domain, then
  /// the holding executor (a caller holds no executor lock).
  Pull pull(uint64_t uid, int64_t ctxRequestId) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = live_.find(uid);
    if (it != live_.end()) return it->second->releaseHeldContext(ctxRequestId) ? Pull::kReleased : Pull::kNotHeld;
    return gone_.count(uid) != 0 ? Pull::kGone : Pull::kForeign;
  }

  int32_t size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int32_t>(live_.size());
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, ContextHolder*> live_;
  std::unordered_set<uint64_t> gone_;
};

}  // namespace affinity::detail
