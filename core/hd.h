// Host/device annotations for math shared by the CPU reference (g++) and the kernels (nvcc).
#pragma once

#if defined(__CUDACC__)
#define VT_HD __host__ __device__
#else
#define VT_HD
#endif

#include <cstdint>

namespace voxtile {
// Set bits of a 64-bit word, on either side.
VT_HD inline int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}
}  // namespace voxtile
