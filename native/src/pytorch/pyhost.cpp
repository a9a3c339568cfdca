// libaffinity_pyhost.so: CPython embedded on one host thread that runs an asyncio loop; Java and
// the facade never take the GIL, they queue commands and write an eventfd (docs/gpu.md, "How it
// works"). Compiled against Python.h, never linked to libpython: the facade loads libpython
// RTLD_GLOBAL first, then this library, whose Py* symbols resolve against it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "host_api.h"
#include "pyhost_driver_source.h"  // generated from driver.py: kDriverSource

namespace affinity::pyhost {
namespace {

constexpr int32_t kCreate = 0, kSubmit = 1, kCancel = 2, kDestroy = 3, kStop = 4, kCall = 5;

struct Command {
  int32_t kind = 0;
  int64_t engine = 0;
  int64_t requestId = 0;  // submit, cancel: the executor request id; call: the call id
  std::string text;       // create: configuration JSON; call: text
  RequestSpec request;    // submit
  int32_t op = 0;         // call: the operation
  std::vector<int32_t> tokens;  // call: tokens in
};

struct CallSlot {
  bool done = false;
  std::string error;
  std::string text;
  std::vector<int32_t> tokens;
};

struct EngineSlot {
  EngineSink* sink = nullptr;
  bool ready = false;
  bool destroying = false;
  bool destroyed = false;
  std::string error;
  std::string describe;
};

// The JVM's signal handlers, saved before the interpreter starts and restored after anything that
// may replace them (interpreter start, a library's signal.signal() while an LLM is built).
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGUSR2, SIGXFSZ};
struct SavedSignals {
  struct sigaction actions[sizeof(kSignals) / sizeof(kSignals[0])];
  void save() {
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) sigaction(kSignals[i], nullptr, &actions[i]);
  }
  int restore() {
    int restored = 0;
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
      struct sigaction now {};
      sigaction(kSignals[i], nullptr, &now);
      if (now.sa_handler != actions[i].sa_handler || now.sa_flags != actions[i].sa_flags) {
        sigaction(kSignals[i], &actions[i], nullptr);
        ++restored;
      }
    }
    return restored;
  }
};

/// The pending Python exception with its traceback (GIL held); clears it.
std::string fetchTraceback() {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* value = PyErr_GetRaisedException();
  if (value == nullptr) return "unknown Python error";
  PyObject* type = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(value)));
  PyObject* tb = PyException_GetTraceback(value);
#else
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  if (type == nullptr) return "unknown Python error";
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr && value != nullptr) PyException_SetTraceback(value, tb);
#endif
  std::string out;
  PyObject* mod = PyImport_ImportModule("traceback");
  PyObject* lines = mod ? PyObject_CallMethod(mod, "format_exception", "OOO", type, value ? value : Py_None,
                                              tb ? tb : Py_None)
                        : nullptr;
  PyObject* sep = PyUnicode_FromString("");
  PyObject* joined = lines && sep ? PyUnicode_Join(sep, lines) : nullptr;
  const char* s = joined ? PyUnicode_AsUTF8(joined) : nullptr;
  if (s != nullptr) {
    out = s;
  } else {
    PyErr_Clear();
    out = reinterpret_cast<PyTypeObject*>(type)->tp_name;
    PyObject* str = value ? PyObject_Str(value) : nullptr;
    const char* v = str ? PyUnicode_AsUTF8(str) : nullptr;
    if (v != nullptr) out += std::string(": ") + v;
    PyErr_Clear();
    Py_XDECREF(str);
  }
  Py_XDECREF(joined);
  Py_XDECREF(sep);
  Py_XDECREF(lines);
  Py_XDECREF(mod);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return out;
}

std::string statusError(const PyStatus& st) {
  std::string msg = "Python initialization failed";
  if (st.func != nullptr) msg += std::string(" in ") + st.func;
  if (st.err_msg != nullptr) msg += std::string(": ") + st.err_msg;
  return msg;
}

class HostImpl final : public Host {
 public:
  const char* builtFor() const override { return kBuiltFor; }

  std::string start(const HostStartConfig& config) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (state_ != State::kNew) {
      if (state_ == State::kRunning) {
        if (config.programName != config_.programName) {
          return "the Python host already runs " + config_.programName + " in this process; it cannot also run " +
                 config.programName + " (one interpreter per process)";
        }
        return "";
      }
      return startError_.empty() ? std::string("the Python host was stopped; it starts once per process (restart the JVM)")
                                 : startError_;
    }
    config_ = config;
    wakeFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakeFd_ < 0) return std::string("eventfd failed: ") + std::strerror(errno);
    state_ = State::kStarting;
    accepting_ = true;
    // Heap-allocated and never destroyed while joinable: a joinable std::thread destroyed at exit()
    // would call std::terminate.
    thread_ = new std::thread([this] {
      try {
        hostThread();
      } catch (...) {  // nothing may escape a thread: std::terminate would end the JVM
        std::lock_guard<std::mutex> g(mu_);
        if (startError_.empty()) startError_ = "the Python host thread failed with a C++ exception";
        accepting_ = false;
        state_ = State::kStopped;
        cv_.notify_all();
      }
    });
    cv_.wait(lk, [this] { return state_ != State::kStarting; });
    if (state_ != State::kRunning) {
      lk.unlock();
      thread_->join();
      return startError_;
    }
    return "";
  }

  std::string createEngine(int64_t engineId, const std::string& configJson, EngineSink* sink,
                           std::string* describeOut) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (state_ != State::kRunning || !accepting_) return "the Python host is not running";
    if (engines_.count(engineId) != 0) return "engine " + std::to_string(engineId) + " exists";
    engines_[engineId].sink = sink;
    Command c;
    c.kind = kCreate;
    c.engine = engineId;
    c.text = configJson;
    pushLocked(std::move(c));
    cv_.wait(lk, [&] { return engines_[engineId].ready || state_ != State::kRunning; });
    EngineSlot& slot = engines_[engineId];
    std::string error = slot.ready ? slot.error : std::string("the Python host stopped while the engine was created");
    if (describeOut != nullptr) *describeOut = slot.describe;
    if (!error.empty()) engines_.erase(engineId);
    return error;
  }

  int32_t submit(int64_t engineId, int64_t requestId, RequestSpec&& request) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_ != State::kRunning || !accepting_) return kSubmitStopped;
    auto it = engines_.find(engineId);
    if (it == engines_.end() || !it->second.ready || it->second.destroying) return kSubmitNoEngine;
    if (inflight_ >= maxInflight_) return kSubmitBusy;
    ++inflight_;
    Command c;
    c.kind = kSubmit;
    c.engine = engineId;
    c.requestId = requestId;
    c.request = std::move(request);
    pushLocked(std::move(c));
    return kSubmitOk;
  }

  void cancel(int64_t engineId, int64_t requestId) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_ != State::kRunning) return;
    Command c;
    c.kind = kCancel;
    c.engine = engineId;
    c.requestId = requestId;
    pushLocked(std::move(c));
  }

  std::string call(int64_t engineId, int32_t op, const std::string& text, const std::vector<int32_t>& tokensIn,
                   std::vector<int32_t>* tokensOut, std::string* textOut, int64_t timeoutMs) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (state_ != State::kRunning || !accepting_) return "the Python host is not running";
    auto it = engines_.find(engineId);
    if (it == engines_.end() || !it->second.ready || it->second.destroying) return "the engine is shut down";
    const int64_t id = nextCall_++;
    calls_[id];
    Command c;
    c.kind = kCall;
    c.engine = engineId;
    c.requestId = id;
    c.op = op;
    c.text = text;
    c.tokens = tokensIn;
    pushLocked(std::move(c));
    const bool done = cv_.wait_for(lk, std::chrono::milliseconds(timeoutMs),
                                   [&] { return calls_[id].done || state_ != State::kRunning; });
    CallSlot slot = std::move(calls_[id]);
    calls_.erase(id);  // a late reply finds no slot and is dropped
    if (!done) return "the Python host did not answer within " + std::to_string(timeoutMs) + " ms";
    if (!slot.done) return "the Python host stopped";
    if (tokensOut != nullptr) *tokensOut = std::move(slot.tokens);
    if (textOut != nullptr) *textOut = std::move(slot.text);
    return slot.error;
  }

  void reply(int64_t callId, std::string error, std::string text, std::vector<int32_t> tokens) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = calls_.find(callId);
    if (it == calls_.end()) return;
    it->second.done = true;
    it->second.error = std::move(error);
    it->second.text = std::move(text);
    it->second.tokens = std::move(tokens);
    cv_.notify_all();
  }

  void destroyEngine(int64_t engineId) override {
    std::unique_lock<std::mutex> lk(mu_);
    auto it = engines_.find(engineId);
    if (it == engines_.end()) return;
    if (state_ != State::kRunning) {
      engines_.erase(it);
      return;
    }
    if (!it->second.destroying) {
      it->second.destroying = true;
      Command c;
      c.kind = kDestroy;
      c.engine = engineId;
      pushLocked(std::move(c));
    }
    cv_.wait(lk, [&] {
      auto e = engines_.find(engineId);
      return e == engines_.end() || e->second.destroyed || state_ != State::kRunning;
    });
    engines_.erase(engineId);
  }

  int32_t stop(int64_t timeoutMs) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (state_ == State::kNew) return -3;
    if (state_ == State::kRunning && accepting_) {
      accepting_ = false;
      Command c;
      c.kind = kStop;
      pushLocked(std::move(c));
    }
    if (!cv_.wait_for(lk, std::chrono::milliseconds(timeoutMs), [this] { return state_ == State::kStopped; })) {
      return -2;
    }
    if (thread_ != nullptr && thread_->joinable()) {
      lk.unlock();
      thread_->join();
    }
    return finalizeRc_;
  }

  bool running() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return state_ == State::kRunning;
  }

  // ---- called by the _affinity_host module on the host thread (GIL held) ----------------------

  int wakeFd() const { return wakeFd_; }

  std::vector<Command> drain() {
    uint64_t v = 0;
    // Reset the eventfd before taking the queue, so a command pushed after the swap wakes us again.
    (void)!read(wakeFd_, &v, sizeof(v));
    std::vector<Command> batch;
    std::lock_guard<std::mutex> lk(mu_);
    batch.swap(in_);
    return batch;
  }

  EngineSink* sink(int64_t engineId) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = engines_.find(engineId);
    return it == engines_.end() ? nullptr : it->second.sink;
  }

  void finished() {
    std::lock_guard<std::mutex> lk(mu_);
    if (inflight_ > 0) --inflight_;
  }

  /// Answers a command that never reached Python (host thread).
  void failCommand(const Command& c, const std::string& why) {
    switch (c.kind) {
      case kSubmit: {
        Response r;
        r.requestId = c.requestId;
        r.finishReason = static_cast<int32_t>(FinishReason::kError);
        r.isFinal = true;
        r.errorMessage = why;
        r.errorKind = static_cast<int32_t>(ErrorKind::kBackendFailure);
        if (EngineSink* s = sink(c.engine)) s->onResponse(std::move(r));
        finished();
        break;
      }
      case kCreate: engineReady(c.engine, why, ""); break;
      case kCall: reply(c.requestId, why, "", {}); break;
      case kDestroy: engineDestroyed(c.engine); break;
      default: break;
    }
  }

  void loopReady() {
    std::lock_guard<std::mutex> lk(mu_);
    state_ = State::kRunning;
    cv_.notify_all();
  }

  void engineReady(int64_t engineId, std::string error, std::string describe) {
    signals_.restore();  // a library may have called signal.signal() while the LLM was built
    std::lock_guard<std::mutex> lk(mu_);
    auto it = engines_.find(engineId);
    if (it == engines_.end()) return;
    it->second.ready = true;
    it->second.error = std::move(error);
    it->second.describe = std::move(describe);
    cv_.notify_all();
  }

  void engineDestroyed(int64_t engineId) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = engines_.find(engineId);
    if (it != engines_.end()) {
      it->second.destroyed = true;
      it->second.sink = nullptr;
    }
    cv_.notify_all();
  }

 private:
  enum class State { kNew, kStarting, kRunning, kStopped };

  void pushLocked(Command&& c) {
    const bool wasEmpty = in_.empty();
    in_.push_back(std::move(c));
    if (wasEmpty) {
      uint64_t one = 1;
      (void)!write(wakeFd_, &one, sizeof(one));
    }
  }

  void hostThread();
  std::string initInterpreter();

#define AFFINITY_STR2(x) #x
#define AFFINITY_STR(x) AFFINITY_STR2(x)
  static constexpr const char* kBuiltFor = AFFINITY_STR(PY_MAJOR_VERSION) "." AFFINITY_STR(PY_MINOR_VERSION);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kNew;
  bool accepting_ = false;
  HostStartConfig config_;
  std::string startError_;
  int wakeFd_ = -1;
  std::vector<Command> in_;
  std::map<int64_t, EngineSlot> engines_;
  std::map<int64_t, CallSlot> calls_;
  int64_t nextCall_ = 1;
  int64_t inflight_ = 0;
  int64_t maxInflight_ = 65536;
  std::thread* thread_ = nullptr;
  int32_t finalizeRc_ = 0;
  SavedSignals signals_;
};

HostImpl& impl() {
  static HostImpl* h = new HostImpl();  // never destroyed: the host thread may outlive static destructors
  return *h;
}

// ---- the _affinity_host built-in module ------------------------------------------------------

PyObject* intList(const std::vector<int32_t>& v) {
  PyObject* l = PyList_New(static_cast<Py_ssize_t>(v.size()));
  for (size_t i = 0; l != nullptr && i < v.size(); ++i) {
    PyObject* x = PyLong_FromLong(v[i]);
    if (x == nullptr) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), x);
  }
  return l;
}

/// A Python str as UTF-8; unencodable characters (lone surrogates) become '?'. False with an error set
/// when obj is not a str.
bool utf8Of(PyObject* obj, std::string& out) {
  PyObject* bytes = PyUnicode_AsEncodedString(obj, "utf-8", "replace");
  if (bytes == nullptr) return false;
  out.assign(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return true;
}

PyObject* utf8OrNone(const std::string& s, bool present) {
  if (!present) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
}

/// A count or duration, None for kNone.
PyObject* longOrNone(int64_t v) {
  if (v == kNone) Py_RETURN_NONE;
  return PyLong_FromLongLong(static_cast<long long>(v));
}

/// The request's KV-cache retention as Engine._params reads it: None without one, else (ranges,
/// decode_retention_priority, decode_duration_ms|None) with ranges a list of (token_start, token_end|None,
/// priority, duration_ms|None), TensorRT-LLM's KvCacheRetentionConfig and TokenRangeRetentionConfig arguments
/// (cpp/tensorrt_llm/executor/kvCacheRetentionConfig.cpp).
PyObject* retentionTuple(const RequestSpec& r) {
  if (!r.hasRetention) Py_RETURN_NONE;
  PyObject* ranges = PyList_New(static_cast<Py_ssize_t>(r.retentionRanges.size()));
  for (size_t i = 0; ranges != nullptr && i < r.retentionRanges.size(); ++i) {
    const RequestSpec::RetentionRange& g = r.retentionRanges[i];
    PyObject* x = Py_BuildValue("(iNiN)", g.tokenStart, longOrNone(g.tokenEnd), g.priority, longOrNone(g.durationMs));
    if (x == nullptr) {
      Py_DECREF(ranges);
      return nullptr;
    }
    PyList_SET_ITEM(ranges, static_cast<Py_ssize_t>(i), x);
  }
  return Py_BuildValue("(NiN)", ranges, r.decodeRetentionPriority, longOrNone(r.decodeRetentionDurationMs));
}

/// The request as driver.py's Engine._params unpacks it, led by the executor request id.
PyObject* requestTuple(int64_t id, const RequestSpec& r) {
  PyObject* ctx;
  if (r.hasContextPhase) {
    ctx = Py_BuildValue("(LiNy#)", static_cast<long long>(r.ctxRequestId), r.ctxDpRank, intList(r.firstGenTokens),
                        r.opaqueState.data(), static_cast<Py_ssize_t>(r.opaqueState.size()));
  } else {
    ctx = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(LiiOiLiOdNNNNNNN)", static_cast<long long>(id), r.maxNewTokens, r.requestType,
                       r.streaming ? Py_True : Py_False, r.endId, static_cast<long long>(r.seed), r.adpRankHint,
                       r.adpRelax ? Py_True : Py_False, static_cast<double>(r.priority),
                       utf8OrNone(r.cacheSalt, r.hasCacheSalt), ctx, intList(r.inputTokens), intList(r.stopTokenIds),
                       utf8OrNone(r.conversationId, !r.conversationId.empty()),
                       utf8OrNone(r.subagentAffinityId, !r.subagentAffinityId.empty()), retentionTuple(r));
}

PyObject* mWakeFd(PyObject*, PyObject*) { return PyLong_FromLong(impl().wakeFd()); }

PyObject* mDrain(PyObject*, PyObject*) {
  std::vector<Command> batch = impl().drain();
  PyObject* out = PyList_New(0);
  if (out == nullptr) {
    for (const Command& c : batch) impl().failCommand(c, "the Python host ran out of memory");
    return nullptr;
  }
  for (const Command& c : batch) {
    PyObject* arg = nullptr;
    switch (c.kind) {
      case kSubmit: arg = requestTuple(c.requestId, c.request); break;
      case kCancel: arg = PyLong_FromLongLong(c.requestId); break;
      case kCreate: arg = PyUnicode_DecodeUTF8(c.text.data(), static_cast<Py_ssize_t>(c.text.size()), "replace"); break;
      case kCall:
        arg = Py_BuildValue("(LiNN)", static_cast<long long>(c.requestId), c.op,
                            PyUnicode_DecodeUTF8(c.text.data(), static_cast<Py_ssize_t>(c.text.size()), "replace"),
                            intList(c.tokens));
        break;
      default: arg = Py_NewRef(Py_None); break;
    }
    PyObject* item = arg != nullptr ? Py_BuildValue("(iLN)", c.kind, static_cast<long long>(c.engine), arg) : nullptr;
    if (item == nullptr || PyList_Append(out, item) != 0) {
      // Not handed to Python: answer it here, so that no caller waits for it.
      PyErr_Clear();
      impl().failCommand(c, "the Python host could not take the command (out of memory)");
    }
    Py_XDECREF(item);
  }
  return out;
}

bool readInts(PyObject* seq, std::vector<int32_t>& out) {
  PyObject* fast = PySequence_Fast(seq, "expected a sequence of token ids");
  if (fast == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = static_cast<int32_t>(PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i)));
  }
  Py_DECREF(fast);
  return !PyErr_Occurred();
}

bool readHashes(PyObject* seq, std::vector<uint64_t>& out) {
  PyObject* fast = PySequence_Fast(seq, "expected a sequence of block hashes");
  if (fast == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = PyLong_AsUnsignedLongLongMask(PySequence_Fast_GET_ITEM(fast, i));
  }
  Py_DECREF(fast);
  return !PyErr_Occurred();
}

// emit(engine, request_id, tokens, finish_reason, is_final, error|None, error_kind, ctx|None, reused, rank,
//      rank_source)
PyObject* mEmit(PyObject*, PyObject* args) {
  long long engine = 0, rid = 0;
  PyObject *tokens = nullptr, *isFinal = nullptr, *error = nullptr, *ctx = nullptr;
  int finish = 0, errorKind = 0, reused = -1, rank = -1, rankSource = 0;
  if (!PyArg_ParseTuple(args, "LLOiOOiOiii", &engine, &rid, &tokens, &finish, &isFinal, &error, &errorKind, &ctx,
                        &reused, &rank, &rankSource)) {
    return nullptr;
  }
  Response r;
  r.requestId = rid;
  r.finishReason = finish;
  const bool knownKind = errorKind >= 0 && errorKind <= static_cast<int>(ErrorKind::kBackendFailure);
  r.errorKind = knownKind ? errorKind : static_cast<int32_t>(ErrorKind::kBackendFailure);
  r.isFinal = PyObject_IsTrue(isFinal) == 1;
  if (!readInts(tokens, r.tokens)) return nullptr;
  if (error != Py_None && !utf8Of(error, r.errorMessage)) return nullptr;
  if (ctx != Py_None) {
    long long ctxId = 0;
    int ctxRank = -1;
    PyObject* first = nullptr;
    const char* opaque = nullptr;
    Py_ssize_t opaqueLen = 0;
    if (!PyArg_ParseTuple(ctx, "LiOy#", &ctxId, &ctxRank, &first, &opaque, &opaqueLen)) return nullptr;
    r.hasContextPhase = true;
    r.ctxRequestId = ctxId;
    r.ctxDpRank = ctxRank;
    if (!readInts(first, r.firstGenTokens)) return nullptr;
    r.opaqueState.assign(opaque, static_cast<size_t>(opaqueLen));
  }
  r.metrics.reusedTokens = reused;
  r.metrics.rank = rank;
  const bool knownSource = rankSource >= 0 && rankSource <= static_cast<int>(RankSource::kOnlyRank);
  r.metrics.rankSource = rank >= 0 && knownSource ? rankSource : static_cast<int32_t>(RankSource::kExecutor);
  const bool final = r.isFinal;
  if (EngineSink* s = impl().sink(engine)) s->onResponse(std::move(r));
  if (final) impl().finished();
  Py_RETURN_NONE;
}

// kv_events(engine, [(event_id, type, rank, window, parent|None, hashes, tokens, value, cache_level)])
PyObject* mKvEvents(PyObject*, PyObject* args) {
  long long engine = 0;
  PyObject* list = nullptr;
  if (!PyArg_ParseTuple(args, "LO", &engine, &list)) return nullptr;
  PyObject* fast = PySequence_Fast(list, "expected a list of events");
  if (fast == nullptr) return nullptr;
  std::vector<KvEvent> events;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  events.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long id = 0, value = 0;
    int type = 0, rank = 0, window = 0, level = 0;
    PyObject *parent = nullptr, *hashes = nullptr, *toks = nullptr;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "LiiiOOOLi", &id, &type, &rank, &window, &parent, &hashes,
                          &toks, &value, &level)) {
      Py_DECREF(fast);
      return nullptr;
    }
    KvEvent e;
    e.eventId = id;
    e.type = type;
    e.rank = rank;
    e.windowSize = window;
    e.value = value;
    e.cacheLevel = level;
    if (parent != Py_None) {
      e.hasParent = true;
      e.parentHash = PyLong_AsUnsignedLongLongMask(parent);
    }
    if (!readHashes(hashes, e.blockHashes) || !readInts(toks, e.tokens)) {
      Py_DECREF(fast);
      return nullptr;
    }
    events.push_back(std::move(e));
  }
  Py_DECREF(fast);
  if (EngineSink* s = impl().sink(engine)) s->onKvEvents(std::move(events));
  Py_RETURN_NONE;
}

// stats(engine, (iter, latency_ms, ctx_requests, gen_requests, ctx_tokens, queued,
//                [(rank, active, 9 KV values, the rank's ctx_tokens)]))
PyObject* mStats(PyObject*, PyObject* args) {
  long long engine = 0;
  HostIterationStats st;
  long long iter = -1, ctxTokens = -1;
  PyObject* ranks = nullptr;
  if (!PyArg_ParseTuple(args, "L(LdiiLiO)", &engine, &iter, &st.iterationLatencyMs, &st.contextRequests,
                        &st.generationRequests, &ctxTokens, &st.queuedRequests, &ranks)) {
    return nullptr;
  }
  st.iteration = iter;
  st.contextTokens = ctxTokens;
  PyObject* fast = PySequence_Fast(ranks, "expected a list of rank statistics");
  if (fast == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
    HostRankStats r;
    long long active = -1, rankCtxTokens = -1, v[8];
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "iLLLLLLLLLdL", &r.rank, &active, &v[0], &v[1], &v[2],
                          &v[3], &v[4], &v[5], &v[6], &v[7], &r.cacheHitRate, &rankCtxTokens)) {
      Py_DECREF(fast);
      return nullptr;
    }
    r.activeRequests = active;
    r.contextTokens = rankCtxTokens;
    r.maxNumBlocks = v[0];
    r.freeNumBlocks = v[1];
    r.usedNumBlocks = v[2];
    r.tokensPerBlock = v[3];
    r.allocTotalBlocks = v[4];
    r.allocNewBlocks = v[5];
    r.reusedBlocks = v[6];
    r.missedBlocks = v[7];
    st.ranks.push_back(r);
  }
  Py_DECREF(fast);
  if (EngineSink* s = impl().sink(engine)) s->onStats(st);
  Py_RETURN_NONE;
}

// rejected(engine, stream, n): items of an unexpected shape that the engine skipped
PyObject* mRejected(PyObject*, PyObject* args) {
  long long engine = 0, n = 0;
  const char* stream = nullptr;
  if (!PyArg_ParseTuple(args, "LsL", &engine, &stream, &n)) return nullptr;
  if (EngineSink* s = impl().sink(engine)) s->onRejected(stream, n);
  Py_RETURN_NONE;
}

// reply(call_id, error|None, text|None, tokens|None)
PyObject* mReply(PyObject*, PyObject* args) {
  long long id = 0;
  PyObject *error = nullptr, *text = nullptr, *tokens = nullptr;
  if (!PyArg_ParseTuple(args, "LOOO", &id, &error, &text, &tokens)) return nullptr;
  std::string err, out;
  std::vector<int32_t> toks;
  if (error != Py_None && !utf8Of(error, err)) return nullptr;
  if (text != Py_None && !utf8Of(text, out)) return nullptr;
  if (tokens != Py_None && !readInts(tokens, toks)) return nullptr;
  impl().reply(id, std::move(err), std::move(out), std::move(toks));
  Py_RETURN_NONE;
}

PyObject* mLoopReady(PyObject*, PyObject*) {
  impl().loopReady();
  Py_RETURN_NONE;
}

// engine_ready(engine, error|None, describe)
PyObject* mEngineReady(PyObject*, PyObject* args) {
  long long engine = 0;
  PyObject* error = nullptr;
  const char* describe = nullptr;
  if (!PyArg_ParseTuple(args, "LOs", &engine, &error, &describe)) return nullptr;
  std::string err;
  if (error != Py_None && !utf8Of(error, err)) return nullptr;
  impl().engineReady(engine, std::move(err), describe);
  Py_RETURN_NONE;
}

PyObject* mEngineDestroyed(PyObject*, PyObject* args) {
  long long engine = 0;
  if (!PyArg_ParseTuple(args, "L", &engine)) return nullptr;
  impl().engineDestroyed(engine);
  Py_RETURN_NONE;
}

/// A module function that turns any C++ exception into a Python exception: none may unwind through
/// the interpreter's C frames (the host thread runs Python code between these calls).
template <PyObject* (*F)(PyObject*, PyObject*)>
PyObject* guarded(PyObject* self, PyObject* args) noexcept {
  try {
    return F(self, args);
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in _affinity_host");
  }
  return nullptr;
}

PyMethodDef kMethods[] = {
    {"wake_fd", guarded<mWakeFd>, METH_NOARGS, "The eventfd that signals queued commands."},
    {"drain", guarded<mDrain>, METH_NOARGS, "Takes the queued commands: [(kind, engine, arg)]."},
    {"emit", guarded<mEmit>, METH_VARARGS, "Hands one response to the engine's executor."},
    {"kv_events", guarded<mKvEvents>, METH_VARARGS, "Hands KV-cache events to the engine's executor."},
    {"stats", guarded<mStats>, METH_VARARGS, "Hands one iteration's statistics to the engine's executor."},
    {"rejected", guarded<mRejected>, METH_VARARGS, "Counts stream items of an unexpected shape that were skipped."},
    {"reply", guarded<mReply>, METH_VARARGS, "Answers a tokenizer call."},
    {"loop_ready", guarded<mLoopReady>, METH_NOARGS, "The loop runs: start() may return."},
    {"engine_ready", guarded<mEngineReady>, METH_VARARGS, "An engine was built (or failed)."},
    {"engine_destroyed", guarded<mEngineDestroyed>, METH_VARARGS, "An engine shut down; its sink is forgotten."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_affinity_host", "Affinity's host bridge.", -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

PyObject* initModule() { return PyModule_Create(&kModule); }

std::string HostImpl::initInterpreter() {
  if (PyImport_AppendInittab("_affinity_host", &initModule) != 0) return "cannot register module _affinity_host";
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);  // ignores PYTHON* variables, no user site, no cwd on sys.path
  config.install_signal_handlers = 0;    // the JVM owns the signals
  config.faulthandler = 0;               // would take SIGSEGV from the JVM (which uses it on purpose)
  config.site_import = 1;                // a venv's site-packages
  const char* argv[] = {"affinity-pyhost"};
  PyStatus st = PyConfig_SetBytesArgv(&config, 1, const_cast<char* const*>(argv));
  if (!PyStatus_Exception(st) && !config_.programName.empty()) {
    st = PyConfig_SetBytesString(&config, &config.program_name, config_.programName.c_str());
  }
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) return statusError(st);  // never Py_ExitStatusException: it exits the JVM
  PyObject* path = PySys_GetObject("path");            // borrowed
  for (size_t i = 0; path != nullptr && i < config_.pythonPath.size(); ++i) {
    PyObject* p = PyUnicode_DecodeFSDefault(config_.pythonPath[i].c_str());
    if (p == nullptr || PyList_Insert(path, static_cast<Py_ssize_t>(i), p) != 0) {
      Py_XDECREF(p);
      return "cannot extend sys.path: " + fetchTraceback();
    }
    Py_DECREF(p);
  }
  return "";
}

void HostImpl::hostThread() {
  signals_.save();
  std::string error = initInterpreter();
  signals_.restore();
  PyObject* driver = nullptr;
  PyObject* hostObj = nullptr;
  if (error.empty()) {
    PyObject* code = Py_CompileString(kDriverSource, "affinity_pyhost_driver.py", Py_file_input);
    driver = code ? PyImport_ExecCodeModule("affinity_pyhost_driver", code) : nullptr;
    Py_XDECREF(code);
    hostObj = driver ? PyObject_CallMethod(driver, "Host", nullptr) : nullptr;
    if (hostObj == nullptr) error = "the Python host failed to start: " + fetchTraceback();
  }
  if (!error.empty()) {
    int rc = Py_IsInitialized() ? Py_FinalizeEx() : 0;
    Py_XDECREF(hostObj);
    std::lock_guard<std::mutex> lk(mu_);
    startError_ = error;
    finalizeRc_ = rc;
    accepting_ = false;
    state_ = State::kStopped;
    cv_.notify_all();
    return;
  }
  PyObject* r = PyObject_CallMethod(hostObj, "run", nullptr);  // returns after STOP (or a loop failure)
  std::string loopError;
  if (r == nullptr) loopError = fetchTraceback();
  Py_XDECREF(r);
  Py_DECREF(hostObj);
  Py_DECREF(driver);
  std::vector<EngineSink*> orphans;  // engines the loop did not shut down (it died): their requests end here
  {
    std::lock_guard<std::mutex> lk(mu_);
    accepting_ = false;
    if (!loopError.empty()) startError_ = "the Python host loop failed: " + loopError;
    for (auto& [id, slot] : engines_) {
      if (slot.sink != nullptr) orphans.push_back(slot.sink);
    }
  }
  // Sinks stay valid here: their executors wait in destroyEngine until the engine is marked destroyed.
  for (EngineSink* s : orphans) s->onHostStopped(startError_.empty() ? "the Python host stopped" : startError_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [id, slot] : engines_) {
      slot.sink = nullptr;
      slot.destroyed = true;
    }
    cv_.notify_all();
  }
  const int rc = Py_FinalizeEx();
  signals_.restore();
  std::lock_guard<std::mutex> lk(mu_);
  finalizeRc_ = rc;
  state_ = State::kStopped;
  for (auto& [id, slot] : engines_) {
    slot.sink = nullptr;
    slot.destroyed = true;
  }
  cv_.notify_all();
}

}  // namespace
}  // namespace affinity::pyhost

extern "C" {
__attribute__((visibility("default"))) int32_t affinity_pyhost_abi_version() {
  return affinity::pyhost::kHostAbiVersion;
}
__attribute__((visibility("default"))) affinity::pyhost::Host* affinity_pyhost_instance() {
  return &affinity::pyhost::impl();
}
}
