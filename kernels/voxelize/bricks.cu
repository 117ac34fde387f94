// Brick merge: after the bricks are sorted by key, each run of equal keys (from virtual tiles of
// one tile, or from triangle batches) becomes one brick: OR of the masks, the target's blend of
// the values (add, max of codes, 64-bit fixed-point add), decoded into the output values of its
// active voxels only (core/sparse_grid.h's layout of values: the host downloads them as they are). Binary
// bricks may skip the sort: a bitmap of the grid's bricks ranks them (launch_bitmap_merge).
#include <algorithm>

#include "core/sparse_grid.h"
#include "core/voxelize.h"
#include "kernels/common.cuh"
#include "kernels/compact.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace {

// A warp per merged brick (a run of equal keys in the sorted order perm, from starts[u]): the OR of
// its masks and its key.
__global__ void merge_masks_kernel(const uint64_t* __restrict__ keys_in, const uint32_t* __restrict__ perm,
                                   const uint32_t* __restrict__ starts, uint64_t num_unique, uint64_t n,
                                   const uint32_t* __restrict__ masks_in, uint64_t* __restrict__ keys_out,
                                   uint32_t* __restrict__ masks_out) {
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
}

// A warp per merged brick: the target's blend of its run's values, decoded, for its active voxels
// only (masks_out: the merged masks), written in ascending offset from active_begin[u] (their
// exclusive scan), so that the host downloads no inactive voxel.
template <Target kTarget, Blend kBlend>
__global__ void merge_values_kernel(const uint32_t* __restrict__ perm, const uint32_t* __restrict__ starts,
                                    uint64_t num_unique, uint64_t n, const uint32_t* __restrict__ masks_out,
                                    const uint32_t* __restrict__ values_in, const uint64_t* __restrict__ active_begin,
                                    uint32_t* __restrict__ values_out, ShadeConsts consts) {
  constexpr Word kWord = word_kind(kTarget, kBlend);
  constexpr int kAcc = acc_channels(kTarget, kBlend);
  constexpr int kOut = out_channels(kTarget);
  constexpr int kIn = brick_value_words({kTarget, kBlend});
  const uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (u >= num_unique) return;
  const uint32_t start = starts[u], end = u + 1 < num_unique ? starts[u + 1] : uint32_t(n);
  uint64_t at = active_begin[u];
  for (int w = 0; w < kBrickMaskWords; ++w) {
    const uint32_t word = masks_out[u * kBrickMaskWords + w];
    if ((word >> lane) & 1u) {
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
        for (uint32_t r = start; r < end; ++r) acc = blend32<kWord>(acc, values_in[uint64_t(perm[r]) * kIn + off]);
        decode32<kTarget, kBlend>(acc, out);
      }
      const uint64_t k = at + uint64_t(__popc(word & ((1u << lane) - 1u)));
      for (int c = 0; c < kOut; ++c) values_out[k * kOut + c] = out[c];
    }
    at += uint64_t(__popc(word));
  }
}

__global__ void iota_kernel(uint32_t* d, uint64_t n) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) d[i] = uint32_t(i);
}

// The linear (x-major) index of a brick key among the grid's `bricks`: the order and equality of keys.
__device__ inline uint32_t brick_linear_index(uint64_t key, const Int3& bricks) {
  const uint64_t m = (uint64_t(1) << kBrickKeyBits) - 1;
  return uint32_t(((key >> (2 * kBrickKeyBits)) * uint64_t(bricks.y) + ((key >> kBrickKeyBits) & m)) * uint64_t(bricks.z) +
                  (key & m));
}

__global__ void brick_sort_keys_kernel(const uint64_t* __restrict__ keys, uint64_t n, Int3 bricks,
                                       uint32_t* __restrict__ out, uint32_t* __restrict__ iota) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = brick_linear_index(keys[i], bricks);
  iota[i] = uint32_t(i);
}

// The bricks to merge: n, or the count the fine raster left on the device (at most n).
__device__ inline uint64_t bricks_to_merge(const unsigned long long* d_n, uint64_t n) {
  return d_n ? min(uint64_t(*d_n), n) : n;
}

// Flags each brick in the bitmap and clears its slot of the output masks (slots 0 to num_unique - 1
// are among them): grid-stride, since the count may be known on the device only.
__global__ void brick_flags_kernel(const uint64_t* __restrict__ keys, uint64_t bound, const unsigned long long* d_n,
                                   Int3 bricks, uint32_t* __restrict__ bitmap, uint32_t* __restrict__ masks_out) {
  const uint64_t n = bricks_to_merge(d_n, bound);
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * kBrickMaskWords; i += stride) {
    masks_out[i] = 0;
    if (i < n) {
      const uint32_t idx = brick_linear_index(keys[i], bricks);
      atomicOr(&bitmap[idx >> 5], 1u << (idx & 31));
    }
  }
}

struct WordPopcount {  // the set bits of bitmap word i, 0 past the last word
  const uint32_t* bitmap;
  uint64_t num_words;
  __device__ uint32_t operator()(uint64_t i) const { return i < num_words ? uint32_t(__popc(bitmap[i])) : 0u; }
};

// Half a warp per unmerged brick: its slot is the number of flagged bricks before it.
__global__ void bitmap_merge_kernel(const uint64_t* __restrict__ keys_in, uint64_t bound, const unsigned long long* d_n,
                                    Int3 bricks, const uint32_t* __restrict__ bitmap,
                                    const uint32_t* __restrict__ word_rank, const uint32_t* __restrict__ masks_in,
                                    uint64_t* __restrict__ keys_out, uint32_t* __restrict__ masks_out) {
  static_assert(kBrickMaskWords == 16, "half a warp per brick mask");
  const uint64_t n = bricks_to_merge(d_n, bound);
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t g = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < n * kBrickMaskWords; g += stride) {
    const uint64_t i = g >> 4;
    const uint32_t w = uint32_t(g & 15);
    const uint64_t key = keys_in[i];
    const uint32_t idx = brick_linear_index(key, bricks);
    const uint64_t slot = word_rank[idx >> 5] + uint32_t(__popc(bitmap[idx >> 5] & ((1u << (idx & 31)) - 1u)));
    const uint32_t word = masks_in[i * kBrickMaskWords + w];
    if (word != 0) atomicOr(&masks_out[slot * kBrickMaskWords + w], word);
    if (w == 0) keys_out[slot] = key;  // (every brick of the slot writes the same key)
  }
}

}  // namespace

void launch_iota(uint32_t* d, uint64_t n, cudaStream_t stream) { launch_1d(iota_kernel, n, 256, stream, d, n); }

void launch_brick_sort_keys(const uint64_t* d_keys, uint64_t n, const Int3& bricks, uint32_t* d_out, uint32_t* d_iota,
                            cudaStream_t stream) {
  launch_1d(brick_sort_keys_kernel, n, 256, stream, d_keys, n, bricks, d_out, d_iota);
}

uint64_t bitmap_merge_words(const Int3& bricks) {
  return (uint64_t(bricks.x) * uint64_t(bricks.y) * uint64_t(bricks.z) + 31) / 32;
}

void launch_bitmap_merge(const uint64_t* d_keys_in, uint64_t n, const unsigned long long* d_n, const Int3& bricks,
                         uint32_t* d_bitmap, uint32_t* d_word_rank, CubTemp& cub, const uint32_t* d_masks_in,
                         uint64_t* d_keys_out, uint32_t* d_masks_out, int num_sms, cudaStream_t stream) {
  const uint64_t words = bitmap_merge_words(bricks);
  VT_CUDA_CHECK(cudaMemsetAsync(d_bitmap, 0, words * sizeof(uint32_t), stream));
  // Two passes over n * 16 mask words, grid-stride: at most 8 blocks of 256 threads per SM.
  const uint64_t threads = std::max<uint64_t>(1, n * kBrickMaskWords);
  const unsigned blocks = unsigned(std::min<uint64_t>((threads + 255) / 256, uint64_t(num_sms) * 8));
  brick_flags_kernel<<<blocks, 256, 0, stream>>>(d_keys_in, n, d_n, bricks, d_bitmap, d_masks_out);
  VT_CUDA_CHECK_LAUNCH();
  scan_counts<uint32_t>(WordPopcount{d_bitmap, words}, d_word_rank, words, kBlockScanMax, cub, stream);
  bitmap_merge_kernel<<<blocks, 256, 0, stream>>>(d_keys_in, n, d_n, bricks, d_bitmap, d_word_rank, d_masks_in,
                                                  d_keys_out, d_masks_out);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_brick_merge(const uint64_t* d_keys_in, const uint32_t* d_perm, const uint32_t* d_starts,
                        uint64_t num_unique, uint64_t n, const uint32_t* d_masks_in, const uint32_t* d_values_in,
                        uint64_t* d_keys_out, uint32_t* d_masks_out, uint64_t* d_active_begin, uint32_t* d_values_out,
                        const TargetSpec& target, const ShadeConsts& consts, CubTemp& cub, cudaStream_t stream) {
  if (num_unique == 0) return;
  launch_1d(merge_masks_kernel, num_unique * 32, 256, stream, d_keys_in, d_perm, d_starts, num_unique, n, d_masks_in,
            d_keys_out, d_masks_out);
  if (target.target == Target::kBinary) return;
  scan_counts<uint64_t>(BrickPopcount{d_masks_out, num_unique}, d_active_begin, num_unique, kBlockScanMax, cub, stream);
  with_target(target, [&](auto t, auto b) {  // a warp per merged brick
    launch_1d(merge_values_kernel<decltype(t)::value, decltype(b)::value>, num_unique * 32, 256, stream, d_perm,
              d_starts, num_unique, n, d_masks_out, d_values_in, d_active_begin, d_values_out, consts);
  });
}

}  // namespace voxtile
