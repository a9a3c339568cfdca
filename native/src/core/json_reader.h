// Strict reading of JSON configuration objects (the sim and pytorch backends' settings).
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace affinity {

using json = nlohmann::json;

/// Reads the keys of one JSON object, rejecting unknown ones: an unknown key, a wrong type or an
/// out-of-range value is a std::invalid_argument "<label>: '<key path>': <problem>".
class JsonObjectReader {
 public:
  JsonObjectReader(const json& obj, std::string path, std::string label)
      : obj_(obj), path_(std::move(path)), label_(std::move(label)) {
    if (!obj_.is_object()) {
      fail_(path_.empty() ? "<root>" : path_, "expected an object, found " + std::string(obj_.type_name()));
    }
  }
  ~JsonObjectReader() noexcept(false) {
    if (std::uncaught_exceptions() > 0) return;
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (seen_.count(it.key()) == 0) {
        std::string known;
        for (const auto& k : known_) known += (known.empty() ? "" : ", ") + k;
        fail_(key(it.key()), "unknown key (known: " + known + ")");
      }
    }
  }
  std::string key(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const json* find(const std::string& k) {
    known_.insert(k);
    seen_.insert(k);
    auto it = obj_.find(k);
    return it == obj_.end() ? nullptr : &*it;
  }
  template <typename T>
  void integer(const std::string& k, T& out, int64_t min, int64_t max) {
    const json* v = find(k);
    if (v == nullptr) return;
    if (!v->is_number_integer()) fail_(key(k), "expected an integer, found " + v->dump());
    const int64_t x = v->get<int64_t>();
    if (x < min || x > max) {
      fail_(key(k), "expected a value in [" + std::to_string(min) + ", " + std::to_string(max) +
                       "], found " + std::to_string(x));
    }
    out = static_cast<T>(x);
  }
  void number(const std::string& k, double& out, double min) {
    const json* v = find(k);
    if (v == nullptr) return;
    if (!v->is_number()) fail_(key(k), "expected a number, found " + v->dump());
    const double x = v->get<double>();
    if (!(x >= min)) fail_(key(k), "expected a number >= " + std::to_string(min) + ", found " + v->dump());
    out = x;
  }
  void boolean(const std::string& k, bool& out) {
    const json* v = find(k);
    if (v == nullptr) return;
    if (!v->is_boolean()) fail_(key(k), "expected true or false, found " + v->dump());
    out = v->get<bool>();
  }
  void string(const std::string& k, std::string& out) {
    const json* v = find(k);
    if (v == nullptr) return;
    if (!v->is_string()) fail_(key(k), "expected a string, found " + v->dump());
    out = v->get<std::string>();
  }
  template <typename E>
  void choice(const std::string& k, E& out, const std::map<std::string, E>& options) {
    std::string s;
    const json* v = find(k);
    if (v == nullptr) return;
    if (!v->is_string()) fail_(key(k), "expected a string, found " + v->dump());
    s = v->get<std::string>();
    auto it = options.find(s);
    if (it == options.end()) {
      std::string names;
      for (const auto& [n, _] : options) names += (names.empty() ? "" : ", ") + n;
      fail_(key(k), "expected one of " + names + ", found \"" + s + "\"");
    }
    out = it->second;
  }

 [[noreturn]] void fail_(const std::string& keyPath, const std::string& msg) const {
    throw std::invalid_argument(label_ + ": '" + keyPath + "': " + msg);
  }

 private:
  const json& obj_;
  std::string path_;
  std::set<std::string> seen_;
  std::set<std::string> known_;
  std::string label_;
};

}  // namespace affinity
