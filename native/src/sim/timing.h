// The calibrated timing model (docs/timing-model.md). An iteration of an instance lasts
//   overhead + max over ranks (prefill cost + decode cost)
// since all attention-DP ranks advance in lockstep. Per rank:
//   prefill = sum over chunks of  L * c + Q * ((p + c)^2 - p^2)   (c new tokens after p cached/done)
//   decode  = base + perSeq * n + perKvToken * sum(context lengths)   when n > 0 sequences decode
#pragma once

#include <cstdint>

#include "config.h"

namespace affinity::sim {

class TimingModel {
 public:
  explicit TimingModel(const TimingParams& p) : p_(p) {}

  double prefillChunkUs(int64_t done, int64_t chunk) const {
    const double a = static_cast<double>(done), b = static_cast<double>(done + chunk);
    return p_.prefillUsPerToken * static_cast<double>(chunk) + p_.prefillUsPerTokenSq * (b * b - a * a);
  }
  double decodeUs(int64_t sequences, int64_t contextTokens) const {
    if (sequences <= 0) return 0.0;
    return p_.decodeBaseUs + p_.decodeUsPerSeq * static_cast<double>(sequences) +
           p_.decodeUsPerKvToken * static_cast<double>(contextTokens);
  }
  double iterationUs(double slowestRankUs) const { return p_.iterationOverheadUs + slowestRankUs; }
  double transferUs(int64_t tokens) const {
    return p_.transferLatencyUs + p_.kvBytesPerToken * static_cast<double>(tokens) / p_.transferBandwidthBytesPerS * 1e6;
  }
  /// Time to prefill a whole prompt of n uncached tokens in one iteration (anchor tests).
  double prefillPromptUs(int64_t n) const { return iterationUs(prefillChunkUs(0, n)); }
  const TimingParams& params() const { return p_; }

 private:
  TimingParams p_;
};

}  // namespace affinity::sim
