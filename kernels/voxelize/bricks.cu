// Brick merge: after the bricks are sorted by key, each run of equal keys (from virtual tiles of
// one tile, or from triangle batches) becomes one brick: OR of the masks, the target's blend of
// the values (add, max of codes, 64-bit fixed-point add), decoded into the output values.
#include "core/sparse_grid.h"
#include "core/voxelize.h"
#include "kernels/common.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace {

template <Target kTarget, Blend kBlend>
__global__ void merge_kernel(const uint64_t* __restrict__ keys_in, const uint32_t* __restrict__ perm,
                             const uint32_t* __restrict__ starts, uint64_t num_unique, uint64_t n,
                             const uint32_t* __restrict__ masks_in, const uint32_t* __restrict__ values_in,
                             uint64_t* __restrict__ keys_out, uint32_t* __restrict__ masks_out,
                             uint32_t* __restrict__ values_out, ShadeConsts consts) {
  constexpr Word kWord = word_kind(kTarget, kBlend);
  constexpr int kAcc = acc_channels(kTarget, kBlend);
  constexpr int kOut = out_channels(kTarget);
  constexpr int kIn = brick_value_words({kTarget, kBlend});
  const uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (u >= num_unique) return;
  const uint32_t start = starts[u], end = u + 1 < num_unique ? starts[u + 1] : uint32_t(n);
  if (lane < kBrickMaskWords) {
    uint32_t word = 0;
    for (uint32_t r = start; r < end; ++r)
      word = blend32<Word::kBit>(word, masks_in[uint64_t(perm[r]) * kBrickMaskWords + lane]);
    masks_out[u * kBrickMaskWords + lane] = word;
  }
  if (lane == 0) keys_out[u] = keys_in[perm[start]];
  for (int w = 0; w < (kWord == Word::kBit ? 0 : 16); ++w) {
    const int off = w * 32 + lane;
    uint32_t out[3];
    if constexpr (kWord == Word::kAdd64) {
      uint64_t acc[3] = {0, 0, 0};
      for (uint32_t r = start; r < end; ++r) {
        const uint64_t* in = reinterpret_cast<const uint64_t*>(values_in + uint64_t(perm[r]) * kIn);
        for (int c = 0; c < kAcc; ++c) acc[c] += in[c * kBrickVoxels + off];
      }
      decode64<kTarget, kBlend>(acc, consts, out);
    } else {
      uint32_t acc = 0;  // add (count), or max of codes (0 = empty)
      for (uint32_t r = start; r < end; ++r) {
        const uint32_t v = values_in[uint64_t(perm[r]) * kIn + off];
        acc = blend32<kWord>(acc, v);
      }
      decode32<kTarget, kBlend>(acc, out);
    }
    for (int c = 0; c < kOut; ++c) values_out[(u * kBrickVoxels + off) * kOut + c] = out[c];
  }
}

__global__ void iota_kernel(uint32_t* d, uint64_t n) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) d[i] = uint32_t(i);
}

__global__ void brick_sort_keys_kernel(const uint64_t* __restrict__ keys, uint64_t n, Int3 bricks,
                                       uint32_t* __restrict__ out, uint32_t* __restrict__ iota) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint64_t key = keys[i], m = (uint64_t(1) << kBrickKeyBits) - 1;
  out[i] = uint32_t(((key >> (2 * kBrickKeyBits)) * uint64_t(bricks.y) + ((key >> kBrickKeyBits) & m)) * uint64_t(bricks.z) +
                    (key & m));
  iota[i] = uint32_t(i);
}

}  // namespace

void launch_iota(uint32_t* d, uint64_t n, cudaStream_t stream) { launch_1d(iota_kernel, n, 256, stream, d, n); }

void launch_brick_sort_keys(const uint64_t* d_keys, uint64_t n, const Int3& bricks, uint32_t* d_out, uint32_t* d_iota,
                            cudaStream_t stream) {
  launch_1d(brick_sort_keys_kernel, n, 256, stream, d_keys, n, bricks, d_out, d_iota);
}

void launch_brick_merge(const uint64_t* d_keys_in, const uint32_t* d_perm, const uint32_t* d_starts, uint64_t num_unique,
                        uint64_t n, const uint32_t* d_masks_in, const uint32_t* d_values_in, uint64_t* d_keys_out,
                        uint32_t* d_masks_out, uint32_t* d_values_out, const TargetSpec& target,
                        const ShadeConsts& consts, cudaStream_t stream) {
  if (num_unique == 0) return;
  with_target(target, [&](auto t, auto b) {  // a warp per merged brick
    launch_1d(merge_kernel<decltype(t)::value, decltype(b)::value>, num_unique * 32, 256, stream, d_keys_in, d_perm,
              d_starts, num_unique, n, d_masks_in, d_values_in, d_keys_out, d_masks_out, d_values_out, consts);
  });
}

}  // namespace voxtile
