// A minimal test harness for the C++ tests: TEST(name) { CHECK(...); }, run by ctest. Prints one
// line per failure and "N passed, M failed" at the end; exits non-zero on any failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace check {

struct Case {
  const char* name;
  std::function<void()> fn;
};
inline std::vector<Case>& cases() {
  static std::vector<Case> c;
  return c;
}
inline int& failures() {
  static int f = 0;
  return f;
}
struct Registrar {
  Registrar(const char* name, std::function<void()> fn) { cases().push_back({name, std::move(fn)}); }
};
struct Failure : std::exception {
  std::string msg;
  explicit Failure(std::string m) : msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

template <typename A, typename B>
void checkEq(const A& a, const B& b, const char* ea, const char* eb, const char* file, int line) {
  if (!(a == b)) {
    std::ostringstream o;
    o << file << ":" << line << ": CHECK_EQ(" << ea << ", " << eb << ") failed: " << a << " != " << b;
    throw Failure(o.str());
  }
}

inline std::vector<std::string> readLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure("cannot open " + path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) lines.push_back(l);
  }
  return lines;
}

}  // namespace check

#define TEST(name)                                                  \
  static void name();                                               \
  static const check::Registrar registrar_##name(#name, name);      \
  static void name()

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) throw check::Failure(std::string(__FILE__) + ":" + std::to_string(__LINE__) +       \
                                      ": CHECK(" #cond ") failed");                                   \
  } while (0)

#define CHECK_EQ(a, b) check::checkEq((a), (b), #a, #b, __FILE__, __LINE__)

#define CHECK_THROWS(expr, substring)                                                                  \
  do {                                                                                                 \
    bool threw_ = false;                                                                               \
    try {                                                                                              \
      expr;                                                                                            \
    } catch (const std::exception& e_) {                                                               \
      threw_ = true;                                                                                   \
      if (std::string(e_.what()).find(substring) == std::string::npos)                                 \
        throw check::Failure(std::string(__FILE__) + ":" + std::to_string(__LINE__) +                  \
                             ": message '" + e_.what() + "' lacks '" + (substring) + "'");             \
    }                                                                                                  \
    if (!threw_) throw check::Failure(std::string(__FILE__) + ":" + std::to_string(__LINE__) +        \
                                      ": " #expr " did not throw");                                    \
  } while (0)

int main() {
  int passed = 0;
  for (const auto& c : check::cases()) {
    try {
      c.fn();
      ++passed;
    } catch (const std::exception& e) {
      ++check::failures();
      std::printf("FAIL %s: %s\n", c.name, e.what());
    }
  }
  std::printf("%d passed, %d failed\n", passed, check::failures());
  return check::failures() == 0 ? 0 : 1;
}
