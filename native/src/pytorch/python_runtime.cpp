#include "python_runtime.h"

#include <dlfcn.h>

#include <stdexcept>

namespace affinity::pytorch {
namespace {

std::string majorMinor(const std::string& version) {
  const auto first = version.find('.');
  if (first == std::string::npos) return version;
  const auto second = version.find_first_not_of("0123456789", first + 1);
  return version.substr(0, second);
}

}  // namespace

PythonRuntime& PythonRuntime::instance() {
  static PythonRuntime* r = new PythonRuntime();  // never destroyed: the host thread may outlive statics
  return *r;
}

pyhost::Host& PythonRuntime::host(const PyTorchConfig& cfg) {
  std::lock_guard<std::mutex> lk(mu_);
  if (host_ == nullptr) {
    if (libpython_ == nullptr) {
      // Global: the interpreter's extension modules (lib-dynload) have no DT_NEEDED on libpython.
      libpython_ = dlopen(cfg.libpython.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (libpython_ == nullptr) throw std::runtime_error(std::string("cannot load libpython: ") + dlerror());
      libpythonPath_ = cfg.libpython;
    }
    auto pyVersion = reinterpret_cast<const char* (*)()>(dlsym(libpython_, "Py_GetVersion"));
    if (pyVersion == nullptr) throw std::runtime_error(cfg.libpython + " is not a libpython (no Py_GetVersion)");
    if (hostLib_ == nullptr) {
      hostLib_ = dlopen(cfg.hostLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (hostLib_ == nullptr) throw std::runtime_error(std::string("cannot load the Python host library: ") + dlerror());
      hostPath_ = cfg.hostLibrary;
    }
    auto abi = reinterpret_cast<int32_t (*)()>(dlsym(hostLib_, "affinity_pyhost_abi_version"));
    auto get = reinterpret_cast<pyhost::Host* (*)()>(dlsym(hostLib_, "affinity_pyhost_instance"));
    if (abi == nullptr || get == nullptr) throw std::runtime_error(cfg.hostLibrary + " is not an Affinity Python host library");
    if (abi() != pyhost::kHostAbiVersion) {
      throw std::runtime_error(cfg.hostLibrary + " has host ABI " + std::to_string(abi()) + ", this facade needs " +
                               std::to_string(pyhost::kHostAbiVersion) + " (rebuild both from one checkout)");
    }
    pyhost::Host* h = get();
    const std::string runtimeVersion = majorMinor(pyVersion());
    if (runtimeVersion != h->builtFor()) {
      throw std::runtime_error(std::string("the Python host library was built for Python ") + h->builtFor() + " but " +
                               cfg.libpython + " is Python " + runtimeVersion +
                               " (build the host against that Python: -DPython3_EXECUTABLE=" + cfg.python + ")");
    }
    host_ = h;
  } else if (cfg.libpython != libpythonPath_) {
    throw std::runtime_error("this process already runs Python from " + libpythonPath_ + "; it cannot also load " +
                             cfg.libpython + " (one interpreter per process)");
  } else if (cfg.hostLibrary != hostPath_) {
    throw std::runtime_error("this process already runs the Python host " + hostPath_ + "; it cannot also load " +
                             cfg.hostLibrary);
  }
  // Starts the interpreter once; later calls check that they ask for the same one.
  pyhost::HostStartConfig start;
  start.programName = cfg.python;
  start.pythonPath = cfg.pythonPath;
  const std::string error = host_->start(start);
  if (!error.empty()) throw std::runtime_error("the Python host did not start: " + error);
  return *host_;
}

int32_t PythonRuntime::stop(int64_t timeoutMs) {
  std::lock_guard<std::mutex> lk(mu_);
  if (host_ == nullptr) return -3;
  return host_->stop(timeoutMs);
}

}  // namespace affinity::pytorch
