// Host/device annotations for math shared by the CPU reference (g++) and the kernels (nvcc).
#pragma once

#if defined(__CUDACC__)
#define VT_HD __host__ __device__
#else
#define VT_HD
#endif

#include <cstdint>

namespace voxtile {
// Set bits of a 64-bit word, on either side. On a host compiled for x86-64 without POPCNT (the
// default target), __builtin_popcountll is a library call (libgcc's __popcountdi2: 12.6% of the CPU
// marching cubes' time); the bit-parallel sum inlines instead.
VT_HD inline int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#elif defined(__POPCNT__) || !defined(__x86_64__)
  return __builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return int((x * 0x0101010101010101ull) >> 56);
#endif
}
// The index of the lowest set bit of a nonzero word, on either side.
VT_HD inline int ctz64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ffsll((long long)x) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
// The low 21 bits of x spread to every third bit (a Morton code's one axis).
VT_HD inline uint64_t spread3(uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 32) & 0x1f00000000ffffull;
  x = (x | x << 16) & 0x1f0000ff0000ffull;
  x = (x | x << 8) & 0x100f00f00f00f00full;
  x = (x | x << 4) & 0x10c30c30c30c30c3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}
// Set bits below bit `off` of an 8^3 brick's mask (8 words, bit off & 63 of word off >> 6): an
// active voxel's place among its brick's active voxels, where its values are.
VT_HD inline uint32_t mask_rank(const uint64_t* w, int off) {
  uint32_t r = uint32_t(popcount64(w[off >> 6] & ((uint64_t(1) << (off & 63)) - 1)));
  for (int q = 0; q < (off >> 6); ++q) r += uint32_t(popcount64(w[q]));
  return r;
}
}  // namespace voxtile
