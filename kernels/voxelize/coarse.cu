// Coarse raster: one thread per triangle (a warp per triangle spanning many
// tile columns) counts and emits the tiles of its footprint (core/tile_footprint.h, shared with the
// CPU reference).
#include <cmath>

#include "core/tile_footprint.h"
#include "kernels/common.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace {

__device__ inline TriSetup load_triangle(const MeshView& m, uint32_t tri) {
  const uint32_t i0 = m.d_indices[3 * tri], i1 = m.d_indices[3 * tri + 1], i2 = m.d_indices[3 * tri + 2];
  return setup_triangle(m.d_grid[i0], m.d_grid[i1], m.d_grid[i2]);
}

// Triangles spanning more tile columns than this are enumerated by a whole warp.
constexpr uint32_t kLargeColumns = 32;

__global__ void count_kernel(CoarseParams p, uint64_t* __restrict__ counts, uint32_t* __restrict__ large,
                             uint32_t* __restrict__ num_large) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  const TriSetup t = load_triangle(p.mesh, tri);
  TileFootprint fp;
  uint64_t n = 0;
  if (footprint_range(t, p.mode, p.dims, &fp)) {
    if (fp.single_tile()) {
      n = 1;
    } else if (fp.columns() > kLargeColumns) {
      large[atomicAdd(num_large, 1u)] = tri;  // counted by large_count_kernel
    } else {
      for_each_tile_of(fp, t, p.tiles, [&](uint64_t) { ++n; });
    }
  }
  counts[i] = n;
}

template <class KeyT>
__global__ void emit_kernel(CoarseParams p, const uint64_t* __restrict__ offsets, KeyT* __restrict__ keys,
                            uint32_t* __restrict__ tris) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  const TriSetup t = load_triangle(p.mesh, tri);
  TileFootprint fp;
  if (!footprint_range(t, p.mode, p.dims, &fp)) return;
  if (!fp.single_tile() && fp.columns() > kLargeColumns) return;  // emitted by large_emit_kernel
  uint64_t o = offsets[i] - p.pair_base;
  const KeyT dom = KeyT(t.dom);
  for_each_tile_of(fp, t, p.tiles, [&](uint64_t tile) {
    keys[o] = (KeyT(tile) << 2) | dom;
    tris[o] = tri;
    ++o;
  });
}

constexpr unsigned kFull = 0xffffffffu;

// One warp per large triangle: lanes take tile columns; the warp sums their tile counts.
__global__ void large_count_kernel(CoarseParams p, const uint32_t* __restrict__ large,
                                   const uint32_t* __restrict__ num_large, uint64_t* __restrict__ counts) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < *num_large; w += warps) {
    const uint32_t tri = large[w];
    const TriSetup t = load_triangle(p.mesh, tri);
    TileFootprint fp;
    footprint_range(t, p.mode, p.dims, &fp);
    footprint_planes(t, &fp);
    const uint32_t cols = fp.columns();
    uint64_t n = 0;
    for (uint32_t k = lane; k < cols; k += 32) {
      int32_t ta, tb;
      footprint_column(fp, k, &ta, &tb);
      for_each_tile_in_column(fp, p.tiles, ta, tb, [&](uint64_t) { ++n; });
    }
    for (int d = 16; d >= 1; d >>= 1) n += __shfl_down_sync(kFull, n, d);
    if (lane == 0) counts[tri - p.tri_begin] = n;
  }
}

// One warp per large triangle of the batch: chunks of 32 columns, lanes write at the warp's
// exclusive prefix of their column counts, so the order is the same as a single thread's.
template <class KeyT>
__global__ void large_emit_kernel(CoarseParams p, const uint32_t* __restrict__ large,
                                  const uint32_t* __restrict__ num_large, const uint64_t* __restrict__ offsets,
                                  KeyT* __restrict__ keys, uint32_t* __restrict__ tris) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < *num_large; w += warps) {
    const uint32_t tri = large[w];
    if (tri < p.tri_begin || tri >= p.tri_end) continue;
    const TriSetup t = load_triangle(p.mesh, tri);
    TileFootprint fp;
    footprint_range(t, p.mode, p.dims, &fp);
    footprint_planes(t, &fp);
    const KeyT dom = KeyT(t.dom);
    const uint32_t cols = fp.columns();
    uint64_t o = offsets[tri - p.tri_begin] - p.pair_base;
    for (uint32_t k0 = 0; k0 < cols; k0 += 32) {
      const uint32_t k = k0 + lane;
      int32_t ta = 0, tb = 0;
      uint32_t n = 0;
      if (k < cols) {
        footprint_column(fp, k, &ta, &tb);
        for_each_tile_in_column(fp, p.tiles, ta, tb, [&](uint64_t) { ++n; });
      }
      uint32_t incl = n;
      for (int d = 1; d < 32; d <<= 1) {
        const uint32_t x = __shfl_up_sync(kFull, incl, d);
        if (lane >= uint32_t(d)) incl += x;
      }
      uint64_t mine = o + (incl - n);
      if (k < cols) {
        for_each_tile_in_column(fp, p.tiles, ta, tb, [&](uint64_t tile) {
          keys[mine] = (KeyT(tile) << 2) | dom;
          tris[mine] = tri;
          ++mine;
        });
      }
      o += __shfl_sync(kFull, incl, 31);
    }
  }
}

}  // namespace

void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, uint32_t* d_large, uint32_t* d_num_large,
                         int num_sms, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  VT_CUDA_CHECK(cudaMemsetAsync(d_num_large, 0, sizeof(uint32_t), stream));
  launch_1d(count_kernel, n, 128, stream, p, d_counts, d_large, d_num_large);
  large_count_kernel<<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_counts);
  VT_CUDA_CHECK_LAUNCH();
}

template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, const uint32_t* d_large,
                        const uint32_t* d_num_large, KeyT* d_keys, uint32_t* d_tris, int num_sms, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  launch_1d(emit_kernel<KeyT>, n, 128, stream, p, d_offsets, d_keys, d_tris);
  large_emit_kernel<KeyT><<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_offsets, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
}

template void launch_coarse_emit<uint32_t>(const CoarseParams&, const uint64_t*, const uint32_t*, const uint32_t*,
                                           uint32_t*, uint32_t*, int, cudaStream_t);
template void launch_coarse_emit<uint64_t>(const CoarseParams&, const uint64_t*, const uint32_t*, const uint32_t*,
                                           uint64_t*, uint32_t*, int, cudaStream_t);

}  // namespace voxtile
