// Wall-clock milliseconds for stage timings and reports.
#pragma once

#include <chrono>

namespace voxtile {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace voxtile
