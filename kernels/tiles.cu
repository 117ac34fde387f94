// Tile ranges from sorted (tile, triangle) pairs, and the split of crowded tiles into virtual
// tiles of at most max_per_tile triangles (merged back when the bricks are merged).
#include "kernels/common.cuh"
#include "kernels/stages.cuh"

namespace voxtile {
namespace {

template <class KeyT>
__global__ void heads_kernel(const KeyT* __restrict__ keys, uint64_t n, uint8_t* __restrict__ heads) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  heads[i] = i == 0 || (keys[i] >> 2) != (keys[i - 1] >> 2);
}

__device__ inline uint32_t tile_end(const uint32_t* begins, uint32_t t, uint32_t num_tiles, uint64_t num_pairs) {
  return t + 1 < num_tiles ? begins[t + 1] : uint32_t(num_pairs);
}

__global__ void virtual_counts_kernel(const uint32_t* __restrict__ begins, const uint32_t* __restrict__ num_tiles,
                                      uint64_t num_pairs, uint32_t max_per_tile, uint32_t* __restrict__ counts,
                                      uint64_t max_tiles) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= max_tiles) return;
  const uint32_t nt = *num_tiles;
  if (t >= nt) {
    counts[t] = 0;
    return;
  }
  const uint32_t len = tile_end(begins, uint32_t(t), nt, num_pairs) - begins[t];
  counts[t] = (len + max_per_tile - 1) / max_per_tile;
}

template <class KeyT>
__global__ void virtual_emit_kernel(const KeyT* __restrict__ keys, const uint32_t* __restrict__ begins,
                                    const uint32_t* __restrict__ num_tiles, uint64_t num_pairs, uint32_t max_per_tile,
                                    const uint32_t* __restrict__ offsets, VirtualTile* __restrict__ vtiles,
                                    uint64_t max_tiles) {
  const uint64_t t = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint32_t nt = *num_tiles;
  if (t >= max_tiles || t >= nt) return;
  const uint32_t begin = begins[t], end = tile_end(begins, uint32_t(t), nt, num_pairs);
  const uint64_t tile = uint64_t(keys[begin] >> 2);
  uint32_t o = offsets[t];
  for (uint32_t b = begin; b < end; b += max_per_tile) vtiles[o++] = {tile, b, min(end, b + max_per_tile)};
}

unsigned blocks_for(uint64_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace

template <class KeyT>
void launch_tile_heads(const KeyT* d_keys, uint64_t n, uint8_t* d_heads, cudaStream_t stream) {
  if (n == 0) return;
  heads_kernel<KeyT><<<blocks_for(n, 256), 256, 0, stream>>>(d_keys, n, d_heads);
  VT_CUDA_CHECK_LAUNCH();
}
template void launch_tile_heads<uint32_t>(const uint32_t*, uint64_t, uint8_t*, cudaStream_t);
template void launch_tile_heads<uint64_t>(const uint64_t*, uint64_t, uint8_t*, cudaStream_t);

void launch_virtual_counts(const uint32_t* d_begins, const uint32_t* d_num_tiles, uint64_t num_pairs,
                           uint32_t max_per_tile, uint32_t* d_counts, uint64_t max_tiles, cudaStream_t stream) {
  if (max_tiles == 0) return;
  virtual_counts_kernel<<<blocks_for(max_tiles, 256), 256, 0, stream>>>(d_begins, d_num_tiles, num_pairs, max_per_tile,
                                                                        d_counts, max_tiles);
  VT_CUDA_CHECK_LAUNCH();
}

template <class KeyT>
void launch_virtual_emit(const KeyT* d_keys, const uint32_t* d_begins, const uint32_t* d_num_tiles, uint64_t num_pairs,
                         uint32_t max_per_tile, const uint32_t* d_offsets, VirtualTile* d_vtiles, uint64_t max_tiles,
                         cudaStream_t stream) {
  if (max_tiles == 0) return;
  virtual_emit_kernel<KeyT><<<blocks_for(max_tiles, 256), 256, 0, stream>>>(d_keys, d_begins, d_num_tiles, num_pairs,
                                                                            max_per_tile, d_offsets, d_vtiles, max_tiles);
  VT_CUDA_CHECK_LAUNCH();
}
template void launch_virtual_emit<uint32_t>(const uint32_t*, const uint32_t*, const uint32_t*, uint64_t, uint32_t,
                                            const uint32_t*, VirtualTile*, uint64_t, cudaStream_t);
template void launch_virtual_emit<uint64_t>(const uint64_t*, const uint32_t*, const uint32_t*, uint64_t, uint32_t,
                                            const uint32_t*, VirtualTile*, uint64_t, cudaStream_t);

}  // namespace voxtile
