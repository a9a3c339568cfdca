// The ready-queue steps every executor backend shares: waiting as awaitResponses specifies, and
// moving queued items out in one batch.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace affinity {

/// Waits on cv until ready(): timeoutUs < 0 without limit, > 0 for at most that long, 0 not at all.
template <typename Pred>
void waitReady(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, int64_t timeoutUs, Pred ready) {
  if (timeoutUs < 0) {
    cv.wait(lk, ready);
  } else if (timeoutUs > 0) {
    cv.wait_for(lk, std::chrono::microseconds(timeoutUs), ready);
  }
}

/// Moves up to max items (none when max <= 0) from the front of from to the back of to.
template <typename T>
void takeFront(std::deque<T>& from, std::vector<T>& to, int32_t max) {
  const size_t n = std::min(from.size(), static_cast<size_t>(std::max(0, max)));
  to.reserve(to.size() + n);
  for (size_t i = 0; i < n; ++i) {
    to.push_back(std::move(from.front()));
    from.pop_front();
  }
}

}  // namespace affinity
