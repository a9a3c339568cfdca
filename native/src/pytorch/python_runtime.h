// The process-wide Python runtime of the "pytorch" backend: loads libpython (RTLD_GLOBAL, so that
// the interpreter's own C extension modules resolve their Py* symbols) and the host library, and
// starts the host once. The facade library never links libpython: a CPU-only process never loads it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "host_api.h"
#include "pytorch_config.h"

namespace affinity::pytorch {

class PythonRuntime {
 public:
  static PythonRuntime& instance();

  /// Loads and starts the host for cfg (first call) or checks that cfg matches the running one.
  /// Throws std::runtime_error with the reason (missing library, ABI or version mismatch, traceback).
  pyhost::Host& host(const PyTorchConfig& cfg);
  /// Stops the host (every engine first) and finalizes Python; -3 when it never started.
  int32_t stop(int64_t timeoutMs);

 private:
  PythonRuntime() = default;
  std::mutex mu_;
  void* libpython_ = nullptr;
  void* hostLib_ = nullptr;
  pyhost::Host* host_ = nullptr;
  std::string libpythonPath_;
  std::string hostPath_;
};

}  // namespace affinity::pytorch
