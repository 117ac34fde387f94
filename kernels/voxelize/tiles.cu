// The split of crowded tiles (runs of sorted (tile, triangle) pairs, found by select_run_starts, or
// the scattered pairs' counts per tile) into virtual tiles of at most max_per_tile triangles (merged
// back when the bricks are merged).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/compact.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace {

// A tile of len pairs makes virtual_tiles_of(len, per) virtual tiles of at most per pairs;
// emit_virtual_tiles writes those of pairs [begin, end) of tile `tile` at vtiles[o], vtiles[o + 1], ...
__device__ inline uint32_t virtual_tiles_of(uint32_t len, uint32_t per) { return (len + per - 1) / per; }
__device__ inline void emit_virtual_tiles(uint64_t tile, uint32_t begin, uint32_t end, uint32_t per, uint32_t o,
                                          VirtualTile* vtiles) {
  for (uint32_t b = begin; b < end; b += per) vtiles[o++] = {tile, b, min(end, b + per)};
}

__device__ inline uint32_t tile_end(const uint32_t* begins, uint32_t t, uint32_t num_tiles, uint64_t num_pairs) {
  return t + 1 < num_tiles ? begins[t + 1] : uint32_t(num_pairs);
}

// Virtual tiles of tile t (d_begins: *num_tiles first-pair indices), 0 past the last tile: the
// scan's input, computed as it is read.
struct VirtualCount {
  const uint32_t* begins;
  const uint64_t* num_tiles;
  uint64_t num_pairs;
  uint32_t max_per_tile;
  __device__ uint32_t operator()(uint64_t t) const {
    const uint32_t nt = uint32_t(*num_tiles);
    if (t >= nt) return 0;
    return virtual_tiles_of(tile_end(begins, uint32_t(t), nt, num_pairs) - begins[t], max_per_tile);
  }
};

template <class KeyT>
__global__ void virtual_emit_kernel(const KeyT* __restrict__ keys, const uint32_t* __restrict__ begins,
                                    const uint64_t* __restrict__ num_tiles, uint64_t num_pairs,
                                    uint32_t max_per_tile, const uint32_t* __restrict__ offsets,
                                    VirtualTile* __restrict__ vtiles, uint64_t* __restrict__ tile_stat) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // launched for tile_bound >= *num_tiles
  const uint32_t nt = uint32_t(*num_tiles);
  if (t == 0 && tile_stat) *tile_stat = nt;
  if (t >= nt) return;
  const uint32_t begin = begins[t], end = tile_end(begins, uint32_t(t), nt, num_pairs);
  emit_virtual_tiles(uint64_t(keys[begin] >> 2), begin, end, max_per_tile, offsets[t], vtiles);
}

// The scattered pairs' virtual tiles per tile of the grid (launch_scattered_virtual_tiles).
struct ScatteredVirtualCount {
  const uint32_t* tile_pairs;
  uint32_t num_tiles;
  const uint64_t* num_pairs;
  uint64_t capacity;
  uint32_t max_tile;
  uint64_t teams;
  __device__ uint32_t operator()(uint64_t t) const {
    const uint64_t n = *num_pairs;
    if (t >= num_tiles || n > capacity) return 0;
    const uint32_t len = tile_pairs[t];
    if (len == 0) return 0;  // (most tiles of a grid: no division)
    return virtual_tiles_of(len, virtual_tile_size(n, max_tile, teams));
  }
};

__global__ void scattered_virtual_emit_kernel(ScatteredVirtualCount c, const uint32_t* __restrict__ tile_ends,
                                              const uint32_t* __restrict__ offsets, VirtualTile* __restrict__ vtiles,
                                              uint64_t* __restrict__ tile_stat) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t n = *c.num_pairs;
  const uint32_t len = t < c.num_tiles && n <= c.capacity ? c.tile_pairs[t] : 0u;
  // Non-empty tiles: one atomic per warp (every lane of the launch's last warp takes part).
  const unsigned any = __ballot_sync(kFull, len > 0);
  if ((threadIdx.x & 31) == 0 && any) atomicAdd(reinterpret_cast<unsigned long long*>(tile_stat), __popc(any));
  if (len == 0) return;
  const uint32_t end = tile_ends[t];
  emit_virtual_tiles(t, end - len, end, virtual_tile_size(n, c.max_tile, c.teams), offsets[t], vtiles);
}

}  // namespace

void launch_scattered_virtual_tiles(const uint32_t* d_tile_pairs, const uint32_t* d_tile_ends, uint32_t num_tiles,
                                    const uint64_t* d_num_pairs, uint64_t capacity, uint32_t max_tile, uint64_t teams,
                                    uint32_t* d_offsets, VirtualTile* d_vtiles, uint64_t* d_tile_stat, CubTemp& cub,
                                    cudaStream_t stream) {
  const ScatteredVirtualCount count{d_tile_pairs, num_tiles, d_num_pairs, capacity, max_tile, teams};
  scan_counts<uint32_t>(count, d_offsets, num_tiles, kBlockScanMax, cub, stream);
  launch_1d(scattered_virtual_emit_kernel, std::max<uint32_t>(num_tiles, 1), 256, stream, count, d_tile_ends, d_offsets,
            d_vtiles, d_tile_stat);
}

void launch_virtual_offsets(const uint32_t* d_begins, const uint64_t* d_num_tiles, uint32_t tile_bound,
                            uint64_t num_pairs, uint32_t max_per_tile, uint32_t* d_offsets, CubTemp& cub,
                            cudaStream_t stream) {
  const VirtualCount count{d_begins, d_num_tiles, num_pairs, max_per_tile};
  scan_counts<uint32_t>(count, d_offsets, tile_bound, kBlockScanMax, cub, stream);
}

template <class KeyT>
void launch_virtual_emit(const KeyT* d_keys, const uint32_t* d_begins, const uint64_t* d_num_tiles,
                         uint32_t tile_bound, uint64_t num_pairs, uint32_t max_per_tile, const uint32_t* d_offsets,
                         VirtualTile* d_vtiles, uint64_t* d_tile_stat, cudaStream_t stream) {
  launch_1d(virtual_emit_kernel<KeyT>, std::max<uint32_t>(tile_bound, 1), 256, stream, d_keys, d_begins, d_num_tiles,
            num_pairs, max_per_tile, d_offsets, d_vtiles, d_tile_stat);
}
template void launch_virtual_emit<uint32_t>(const uint32_t*, const uint32_t*, const uint64_t*, uint32_t, uint64_t,
                                            uint32_t, const uint32_t*, VirtualTile*, uint64_t*, cudaStream_t);
template void launch_virtual_emit<uint64_t>(const uint64_t*, const uint32_t*, const uint64_t*, uint32_t, uint64_t,
                                            uint32_t, const uint32_t*, VirtualTile*, uint64_t*, cudaStream_t);

}  // namespace voxtile
