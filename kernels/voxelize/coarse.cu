// Coarse raster: one thread per triangle (a warp per triangle spanning many
// tile columns) counts and emits the tiles of its footprint (core/tile_footprint.h, shared with the
// CPU reference).
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cmath>

#include "core/tile_footprint.h"
#include "kernels/common.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {
namespace {

// Adds 1 to counter[key] for each of the calling lanes, one atomic per distinct key among them (a
// file's neighbouring triangles mostly fall in one tile: per-lane atomics on that tile's counter
// serialise; measured on an H200, the 6.4M dragon's coarse raster took 0.76 ms with them, 0.39 with
// this). Returns the lane's slot: the old value plus the lanes below it with its key.
__device__ inline uint32_t warp_aggregated_increment(uint32_t* counter, uint32_t key) {
  const uint32_t lane = threadIdx.x & 31;
  const unsigned peers = __match_any_sync(__activemask(), key);
  const int leader = __ffs(int(peers)) - 1;
  uint32_t base = 0;
  if (lane == uint32_t(leader)) base = atomicAdd(&counter[key], uint32_t(__popc(peers)));
  return __shfl_sync(peers, base, leader) + uint32_t(__popc(peers & ((1u << lane) - 1u)));
}

// Triangles spanning more tile columns than this are enumerated by a whole warp.
constexpr uint32_t kLargeColumns = 32;

// What the emit pass does with a triangle (its plan): kCoarseNoPairs, kCoarseLoad, its one pair's key
// (tile << 2 | dominant axis), or the tiles of its 2 to 4 pairs (PlanTiles).
constexpr uint64_t kCoarseNoPairs = ~uint64_t(0);    // nothing (or the large-triangle kernels do it)
constexpr uint64_t kCoarseLoad = ~uint64_t(0) - 1;   // load the triangle again and enumerate its tiles

// A triangle of 2 to PlanTiles::cap tiles keeps them in its plan, so that the emit pass need not
// load it and enumerate its tiles again (in a shuffled or quarter-ordered file those reloads are
// scattered reads). Bits 61-63 hold 4 + (tiles - 2), then from bit 2 up the tiles, `bits` each (the
// bits of the largest tile index; the last tile lowest), and bits 0-1 the dominant axis (kCoarseNoPairs
// and kCoarseLoad have 7 in bits 61-63; one pair's key has 0 there below 2^59 tiles).
// At most 4 tiles, and only with indices of 29 bits or fewer (then 2 tiles fit, in bits 2 to 60).
struct PlanTiles {
  uint32_t bits, cap;
  explicit PlanTiles(const Int3& tiles)
      : bits(std::min(63u, uint32_t(bits_for(uint64_t(tiles.x) * uint64_t(tiles.y) * uint64_t(tiles.z))))),
        cap(bits <= 29 ? std::min(4u, 59 / bits) : 0u) {}
};
__device__ inline bool is_plan_of_tiles(uint64_t plan) {
  const uint64_t top = plan >> 61;
  return top >= 4 && top <= 6;
}

__global__ void count_kernel(CoarseParams p, PlanTiles plan, uint64_t* __restrict__ counts,
                             uint64_t* __restrict__ single, uint32_t* __restrict__ large,
                             uint32_t* __restrict__ num_large, uint32_t* __restrict__ tile_pairs) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t pos = p.tri_begin + i;
  const bool valid = pos < p.tri_end;  // (no lane returns before the vote below)
  uint64_t n = 0, todo = kCoarseNoPairs;
  TileFootprint fp;
  TriSetup t;
  if (valid) t = load_triangle(p.mesh, pos);
  if (valid && footprint_range(t, p.mode, p.dims, &fp)) {
    if (fp.single_tile()) {
      n = 1;
      const uint64_t tile = footprint_tile(fp, p.tiles, fp.tlo[0], fp.tlo[1], fp.tlo[2]);
      todo = (tile << 2) | uint64_t(t.dom);
      if (tile_pairs) warp_aggregated_increment(tile_pairs, uint32_t(tile));
    } else if (fp.columns() > kLargeColumns) {
      large[atomicAdd(num_large, 1u)] = pos;  // counted by large_count_kernel
    } else {
      // The tiles, `bits` each, the last in the lowest bits (a plan's, if they fit).
      uint64_t tiles = 0;
      for_each_tile_of(fp, t, p.tiles, [&](uint64_t tile) {
        tiles = tiles << plan.bits | tile;
        ++n;
        if (tile_pairs) atomicAdd(&tile_pairs[tile], 1u);
      });
      // (the tiles' depth test may leave none or one)
      todo = n == 0         ? kCoarseNoPairs
             : n > plan.cap ? kCoarseLoad
                            : (n == 1 ? 0 : uint64_t(n + 2) << 61) | tiles << 2 | uint64_t(t.dom);
    }
  }
  // A warp of the emit pass with a triangle to load again runs that load for all its lanes at once,
  // so there the others' plans of tiles save nothing and add their own step: they are loaded too.
  if (__any_sync(kFull, todo == kCoarseLoad) && is_plan_of_tiles(todo)) todo = kCoarseLoad;
  if (!valid) return;
  counts[i] = n;
  single[i] = todo;
}

// Writes pair (tile << 2 | dom, tri) at the tile's next slot (cursor: the scatter) or else at *o,
// which moves on; not past `capacity`, and its key only where keys is not null.
template <class KeyT>
__device__ inline void put_pair(uint32_t* cursor, uint64_t capacity, KeyT* keys, uint32_t* tris, uint64_t tile,
                                KeyT dom, uint32_t tri, uint64_t* o) {
  const uint64_t at = cursor ? atomicAdd(&cursor[tile], 1u) : (*o)++;
  if (at >= capacity) return;
  if (keys) keys[at] = (KeyT(tile) << 2) | dom;
  tris[at] = tri;
}

// Single-tile triangles (most, in a fine mesh) write the key the count pass kept, without reading
// the triangle again (in a file whose neighbouring triangles are far apart, those reads are most of
// the coarse raster's time).
// With a cursor (the scatter), pairs at slots past `capacity` are dropped, and keys may be null.
template <class KeyT>
__global__ void emit_kernel(CoarseParams p, PlanTiles plan, const uint64_t* __restrict__ offsets,
                            const uint64_t* __restrict__ single, uint32_t* __restrict__ cursor, uint64_t capacity,
                            KeyT* __restrict__ keys, uint32_t* __restrict__ tris) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  // (The index triple is read with the plan, not after it: a dependent read would wait twice.)
  const uint64_t todo = single[i];
  const uint32_t i0 = p.mesh.d_indices[3 * tri], i1 = p.mesh.d_indices[3 * tri + 1], i2 = p.mesh.d_indices[3 * tri + 2];
  if (todo == kCoarseNoPairs) return;
  if (is_plan_of_tiles(todo)) {
    const uint64_t mask = (uint64_t(1) << plan.bits) - 1;
    const KeyT dom = KeyT(todo & 3u);
    uint64_t o = offsets[i] - p.pair_base;
    const uint32_t k = uint32_t(todo >> 61) - 2;  // tiles
    for (uint32_t j = 1; j <= k; ++j)             // the first tile in the highest bits
      put_pair(cursor, capacity, keys, tris, (todo >> (2 + (k - j) * plan.bits)) & mask, dom, tri, &o);
    return;
  }
  if (todo != kCoarseLoad) {
    const uint64_t o = cursor ? warp_aggregated_increment(cursor, uint32_t(todo >> 2)) : offsets[i] - p.pair_base;
    if (o >= capacity) return;
    if (keys) keys[o] = KeyT(todo);
    tris[o] = tri;
    return;
  }
  const TriSetup t = setup_triangle(p.mesh.d_grid[i0], p.mesh.d_grid[i1], p.mesh.d_grid[i2]);
  TileFootprint fp;  // (the count pass found it non-empty, over several tiles, not large)
  footprint_range(t, p.mode, p.dims, &fp);
  uint64_t o = offsets[i] - p.pair_base;
  const KeyT dom = KeyT(t.dom);
  for_each_tile_of(fp, t, p.tiles, [&](uint64_t tile) { put_pair(cursor, capacity, keys, tris, tile, dom, tri, &o); });
}

// One warp per large triangle: lanes take tile columns; the warp sums their tile counts.
__global__ void large_count_kernel(CoarseParams p, const uint32_t* __restrict__ large,
                                   const uint32_t* __restrict__ num_large, uint64_t* __restrict__ counts,
                                   unsigned long long* __restrict__ large_pairs, uint32_t* __restrict__ tile_pairs) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < *num_large; w += warps) {
    const uint32_t pos = large[w];
    const TriSetup t = load_triangle(p.mesh, pos);
    TileFootprint fp;
    footprint_range(t, p.mode, p.dims, &fp);
    footprint_planes(t, &fp);
    const uint32_t cols = fp.columns();
    uint64_t n = 0;
    for (uint32_t k = lane; k < cols; k += 32) {
      int32_t ta, tb;
      footprint_column(fp, k, &ta, &tb);
      for_each_tile_in_column(fp, p.tiles, ta, tb, [&](uint64_t tile) {
        ++n;
        if (tile_pairs) atomicAdd(&tile_pairs[tile], 1u);
      });
    }
    for (int d = 16; d >= 1; d >>= 1) n += __shfl_down_sync(kFull, n, d);
    if (lane == 0) {
      counts[pos - p.tri_begin] = n;
      atomicAdd(large_pairs, static_cast<unsigned long long>(n));
    }
  }
}

// One warp per large triangle of the batch: chunks of 32 columns, lanes write at the warp's
// exclusive prefix of their column counts, so the order is the same as a single thread's.
template <class KeyT>
__global__ void large_emit_kernel(CoarseParams p, const uint32_t* __restrict__ large,
                                  const uint32_t* __restrict__ num_large, const uint64_t* __restrict__ offsets,
                                  uint32_t* __restrict__ cursor, uint64_t capacity, KeyT* __restrict__ keys,
                                  uint32_t* __restrict__ tris) {
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
      const uint32_t incl = warp_inclusive_sum(n);
      uint64_t mine = o + (incl - n);
      if (k < cols) {
        for_each_tile_in_column(fp, p.tiles, ta, tb,
                                [&](uint64_t tile) { put_pair(cursor, capacity, keys, tris, tile, dom, tri, &mine); });
      }
      o += __shfl_sync(kFull, incl, 31);
    }
  }
}

// Spreads the low 10 bits of x to every third bit.
__device__ inline uint32_t spread3(uint32_t x) {
  x &= 0x3ffu;
  x = (x | (x << 16)) & 0x030000ffu;
  x = (x | (x << 8)) & 0x0300f00fu;
  x = (x | (x << 4)) & 0x030c30c3u;
  x = (x | (x << 2)) & 0x09249249u;
  return x;
}

__device__ inline uint32_t morton_key(const MeshView& m, uint32_t tri, float s) {
  const Vec3f a = m.d_grid[m.d_indices[3 * tri]], b = m.d_grid[m.d_indices[3 * tri + 1]],
              c = m.d_grid[m.d_indices[3 * tri + 2]];
  auto q = [s](float v) {
    const float x = v * s;
    return x > 0.0f ? uint32_t(fminf(x, 1023.0f)) : 0u;  // NaN -> 0
  };
  const float third = 1.0f / 3.0f;
  return (spread3(q((a.x + b.x + c.x) * third)) << 2) | (spread3(q((a.y + b.y + c.y) * third)) << 1) |
         spread3(q((a.z + b.z + c.z) * third));
}

__global__ void morton_kernel(MeshView m, uint32_t n, float s, uint32_t* __restrict__ keys,
                              uint32_t* __restrict__ order) {
  const uint32_t tri = blockIdx.x * blockDim.x + threadIdx.x;
  if (tri >= n) return;
  keys[tri] = morton_key(m, tri, s);
  order[tri] = tri;
}

__global__ void gather_triangles_kernel(const uint32_t* __restrict__ indices, const uint32_t* __restrict__ order,
                                        uint32_t n, uint32_t* __restrict__ out) {
  const uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // one index of a triple each
  if (k >= 3 * uint64_t(n)) return;
  const uint64_t pos = k / 3;
  out[k] = indices[3 * uint64_t(order[pos]) + (k - 3 * pos)];
}

float morton_scale(Int3 dims) { return 1024.0f / float(std::max(1, std::max(dims.x, std::max(dims.y, dims.z)))); }

}  // namespace

void launch_triangle_order(const MeshView& mesh, uint32_t num_tris, Int3 dims, DeviceBuffer<uint32_t>& d_order,
                           DeviceBuffer<uint32_t>& d_indices, DeviceBuffer<uint32_t>& d_keys,
                           DeviceBuffer<uint32_t>& d_tmp, CubTemp& cub, cudaStream_t stream) {
  if (num_tris == 0) return;
  d_order.grow(num_tris);
  d_indices.grow(3 * uint64_t(num_tris));
  d_keys.grow(2 * size_t(num_tris));
  d_tmp.grow(num_tris);
  launch_1d(morton_kernel, num_tris, 256, stream, mesh, num_tris, morton_scale(dims), d_keys.data(), d_tmp.data());
  uint32_t* keys_in = d_keys.data();
  uint32_t* keys_out = d_keys.data() + num_tris;
  // The top 24 of the key's 30 bits: cells of 4 voxels at 1024^3 (3 radix passes instead of 4; the
  // sort is stable, so the mesh's order is kept within a cell). Cells of 64 voxels (2 passes) were
  // measured slower: the sort takes about as long (its time is the key's and the gather's random
  // reads) and the coarse raster of the shuffled 6.4M dragon 0.66 -> 0.94 ms (H200).
  cub.run([&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, d_tmp.data(), d_order.data(), int(num_tris),
                                           6, 30, stream);
  });
  launch_1d(gather_triangles_kernel, 3 * uint64_t(num_tris), 256, stream, mesh.d_indices, d_order.data(), num_tris,
            d_indices.data());
}

void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, uint64_t* d_single, uint32_t* d_large,
                         uint32_t* d_num_large, unsigned long long* d_large_pairs, uint32_t* d_tile_pairs, int num_sms,
                         cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  launch_1d(count_kernel, n, 128, stream, p, PlanTiles(p.tiles), d_counts, d_single, d_large, d_num_large,
            d_tile_pairs);
  large_count_kernel<<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_counts, d_large_pairs,
                                                                d_tile_pairs);
  VT_CUDA_CHECK_LAUNCH();
}

template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, const uint64_t* d_single,
                        const uint32_t* d_large, const uint32_t* d_num_large, uint32_t* d_tile_cursor,
                        uint64_t capacity, KeyT* d_keys, uint32_t* d_tris, int num_sms, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  launch_1d(emit_kernel<KeyT>, n, 128, stream, p, PlanTiles(p.tiles), d_offsets, d_single, d_tile_cursor, capacity,
            d_keys, d_tris);
  if (!d_large) return;  // (no large triangles)
  large_emit_kernel<KeyT><<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_offsets, d_tile_cursor,
                                                                     capacity, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
}

template void launch_coarse_emit<uint32_t>(const CoarseParams&, const uint64_t*, const uint64_t*, const uint32_t*,
                                           const uint32_t*, uint32_t*, uint64_t, uint32_t*, uint32_t*, int, cudaStream_t);
template void launch_coarse_emit<uint64_t>(const CoarseParams&, const uint64_t*, const uint64_t*, const uint32_t*,
                                           const uint32_t*, uint32_t*, uint64_t, uint64_t*, uint32_t*, int, cudaStream_t);

}  // namespace voxtile
