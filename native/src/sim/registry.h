// Process-wide registry of sim executors, so that a generation_only request can pull (free) the KV
// that a context_only request holds on another in-process executor.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace affinity::sim {

class SimExecutor;

class Registry {
 public:
  static Registry& instance() {
    static Registry r;
    return r;
  }
  void add(uint64_t uid, SimExecutor* e) {
    std::lock_guard<std::mutex> lk(mu_);
    map_[uid] = e;
  }
  void remove(uint64_t uid) {
    std::lock_guard<std::mutex> lk(mu_);
    map_.erase(uid);
  }
  /// Runs fn on the executor while it cannot be destroyed; false when uid is unknown.
  bool withExecutor(uint64_t uid, const std::function<bool(SimExecutor&)>& fn) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(uid);
    return it != map_.end() && fn(*it->second);
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, SimExecutor*> map_;
};

}  // namespace affinity::sim
