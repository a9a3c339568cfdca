// Affinity native facade: the in-process context hand-off of one fleet.
//
// A context_only request leaves its KV held on its executor until a generation_only request with its
// context phase params pulls it. When both executors run in this process and were created in the
// same HandoffDomain, the pull frees the context executor's KV at once (what TensorRT-LLM's cache
// transceiver does between processes). One domain per fleet (an embedded deployment, a simulated
// fleet), passed to createExecutor: two fleets in one process never see each other's contexts.
#pragma once

#include <cstdint>
#include <memory>

namespace affinity {

namespace detail {
class HandoffRegistry;
}  // namespace detail

/// The hand-off of one fleet. Executors created in the domain keep its state alive, so the handle
/// may be destroyed before them: they go on handing off among themselves, and an executor created
/// later cannot join. Thread-safe. Counted by liveObjectCount().
///
/// What a generation_only request of a sim executor finds, by where its context was made:
///  - on the same executor: pulled under the executor's own lock;
///  - on another executor of the domain: pulled (freed) there at once; if that executor was destroyed
///    meanwhile (its KV freed at shutdown), the request is served like a remote worker's context;
///  - on an executor of this process outside the domain (another fleet, or no domain at all):
///    ErrorKind::kContextNotFound;
///  - in another process: trusted; that worker frees the KV when the generation side reports the pull
///    (the Java worker process's /release_context), or on its own hold timeout.
class HandoffDomain {
 public:
  HandoffDomain();
  ~HandoffDomain();
  HandoffDomain(const HandoffDomain&) = delete;
  HandoffDomain& operator=(const HandoffDomain&) = delete;

  /// Executors of the domain that are alive now.
  int32_t executorCount() const;
  /// The state the domain's executors share (used by the factory).
  const std::shared_ptr<detail::HandoffRegistry>& registry() const { return registry_; }

 private:
  std::shared_ptr<detail::HandoffRegistry> registry_;
};

}  // namespace affinity
