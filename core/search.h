// Binary search over sorted 64-bit keys, shared by the CPU and the kernels.
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace voxtile {

// The first index in keys[0, n) whose key is not below `target` (n when none is).
template <class K>
VT_HD inline uint64_t lower_bound_index(const K* keys, uint64_t n, K target) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const uint64_t mid = (lo + hi) / 2;
    if (keys[mid] < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace voxtile
