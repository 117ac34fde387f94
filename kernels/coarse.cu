// Coarse raster: vertex transform, then one thread per triangle counts and emits the tiles its
// voxels may fall in (bounding box per tile column of the dominant projection, trimmed by a 2D
// edge test and the plane's depth range in double, widened by margins so it stays a superset of
// what the fine raster's float tests accept).
#include <cmath>

#include "kernels/common.cuh"
#include "kernels/stages.cuh"

namespace voxtile {
namespace {

__global__ void transform_kernel(const Vec3f* __restrict__ world, Vec3f* __restrict__ grid, uint64_t n, Vec3d origin,
                                 Vec3d size) {
  const uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Vec3f p = world[i];
  grid[i] = {static_cast<float>((double(p.x) - origin.x) / size.x), static_cast<float>((double(p.y) - origin.y) / size.y),
             static_cast<float>((double(p.z) - origin.z) / size.z)};
}

__device__ inline TriSetup load_triangle(const MeshView& m, uint32_t tri) {
  const uint32_t i0 = m.d_indices[3 * tri], i1 = m.d_indices[3 * tri + 1], i2 = m.d_indices[3 * tri + 2];
  return setup_triangle(m.d_grid[i0], m.d_grid[i1], m.d_grid[i2]);
}

// Everything the tile enumeration of one triangle needs: its voxel range in tiles, and in double
// its dominant-projection edges and its plane's depth along the dominant axis.
struct TileSetup {
  VoxelBox box;        // voxel range (clipped to the grid)
  int32_t tlo[3], thi[3];
  int c, a, b;
  double v[3][3];
  double ena[3], enb[3];
  double ka, kb;       // depth = v0c - (ka (x_a - v0a) + kb (x_b - v0b))
  bool has_depth, trim_2d;
  __device__ uint32_t columns() const { return uint32_t(thi[a] - tlo[a] + 1) * uint32_t(thi[b] - tlo[b] + 1); }
};

// The voxel range in tiles; true when the triangle may write anything.
__device__ inline bool tile_range(const TriSetup& t, const CoarseParams& p, TileSetup* ts) {
  if (!triangle_voxel_range(t, p.mode, p.dims, &ts->box)) return false;
  for (int k = 0; k < 3; ++k) {
    ts->tlo[k] = ts->box.lo[k] >> kTileLog2;
    ts->thi[k] = ts->box.hi[k] >> kTileLog2;
  }
  return true;
}
__device__ inline bool single_tile(const TileSetup& ts) {
  return ts.tlo[0] == ts.thi[0] && ts.tlo[1] == ts.thi[1] && ts.tlo[2] == ts.thi[2];
}

// The double-precision part of the setup (after tile_range).
__device__ void tile_setup_planes(const TriSetup& t, TileSetup* ts) {
  const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
  ts->c = c;
  ts->a = a;
  ts->b = b;
  for (int i = 0; i < 3; ++i) {
    ts->v[i][0] = t.v[i].x;
    ts->v[i][1] = t.v[i].y;
    ts->v[i][2] = t.v[i].z;
  }
  double e1[3], e2[3], n[3];
  for (int k = 0; k < 3; ++k) {
    e1[k] = ts->v[1][k] - ts->v[0][k];
    e2[k] = ts->v[2][k] - ts->v[0][k];
  }
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  // The fine raster orients edges by the float normal; when float and double disagree (a sliver
  // near degeneracy) the 2D trim is skipped rather than risk dropping a tile the fine raster needs.
  const float nc_float = component(t.n, c);
  const double s = nc_float >= 0.0f ? 1.0 : -1.0;
  ts->trim_2d = nc_float != 0.0f && (n[c] >= 0.0) == (nc_float >= 0.0f) && n[c] != 0.0;
  for (int i = 0; i < 3; ++i) {
    const int j = i == 2 ? 0 : i + 1;
    ts->ena[i] = -(ts->v[j][b] - ts->v[i][b]) * s;
    ts->enb[i] = (ts->v[j][a] - ts->v[i][a]) * s;
  }
  ts->has_depth = n[c] != 0.0;
  ts->ka = ts->has_depth ? n[a] / n[c] : 0.0;
  ts->kb = ts->has_depth ? n[b] / n[c] : 0.0;
}

__device__ inline bool tile_setup(const TriSetup& t, const CoarseParams& p, TileSetup* ts) {
  if (!tile_range(t, p, ts)) return false;
  tile_setup_planes(t, ts);
  return true;
}

__device__ inline uint64_t tile_index(const CoarseParams& p, int32_t x, int32_t y, int32_t z) {
  return (uint64_t(x) * uint64_t(p.tiles.y) + uint64_t(y)) * uint64_t(p.tiles.z) + uint64_t(z);
}

// Calls f(linear tile index) for the tiles of tile column (ta, tb) the triangle may write: the
// column's voxel extent (widened by one voxel) must pass the 2D edge test, and the plane's depth
// range over it (widened by two voxels) selects the tiles along the dominant axis.
template <class F>
__device__ void for_each_tile_in_column(const TileSetup& ts, const CoarseParams& p, int32_t ta, int32_t tb, F&& f) {
  const int a = ts.a, b = ts.b, c = ts.c;
  const double a0 = double(max(ta << kTileLog2, ts.box.lo[a])) - 1.0;
  const double a1 = double(min((ta + 1) << kTileLog2, ts.box.hi[a] + 1)) + 1.0;
  const double b0 = double(max(tb << kTileLog2, ts.box.lo[b])) - 1.0;
  const double b1 = double(min((tb + 1) << kTileLog2, ts.box.hi[b] + 1)) + 1.0;
  if (ts.trim_2d) {
    for (int i = 0; i < 3; ++i)
      if (ts.ena[i] * ((ts.ena[i] > 0 ? a1 : a0) - ts.v[i][a]) + ts.enb[i] * ((ts.enb[i] > 0 ? b1 : b0) - ts.v[i][b]) < 0.0)
        return;
  }
  int32_t c0 = ts.tlo[c], c1 = ts.thi[c];
  if (ts.has_depth) {
    double dmin = 1e300, dmax = -1e300;
    for (int corner = 0; corner < 4; ++corner) {
      const double ca = corner & 1 ? a1 : a0, cb = corner & 2 ? b1 : b0;
      const double d = ts.v[0][c] - (ts.ka * (ca - ts.v[0][a]) + ts.kb * (cb - ts.v[0][b]));
      dmin = fmin(dmin, d);
      dmax = fmax(dmax, d);
    }
    const double lo_t = floor((dmin - 2.0) / kTileDim), hi_t = floor((dmax + 2.0) / kTileDim);
    if (lo_t > double(c0)) c0 = lo_t > double(c1) ? c1 + 1 : int32_t(lo_t);
    if (hi_t < double(c1)) c1 = hi_t < double(c0) ? c0 - 1 : int32_t(hi_t);
  }
  int32_t ijk[3];
  ijk[a] = ta;
  ijk[b] = tb;
  for (int32_t tc = c0; tc <= c1; ++tc) {
    ijk[c] = tc;
    f(tile_index(p, ijk[0], ijk[1], ijk[2]));
  }
}

// Column k (row-major over the tile columns of the bounding box).
__device__ inline void column_of(const TileSetup& ts, uint32_t k, int32_t* ta, int32_t* tb) {
  const uint32_t nb = uint32_t(ts.thi[ts.b] - ts.tlo[ts.b] + 1);
  *ta = ts.tlo[ts.a] + int32_t(k / nb);
  *tb = ts.tlo[ts.b] + int32_t(k % nb);
}

// Triangles spanning more tile columns than this are enumerated by a whole warp.
constexpr uint32_t kLargeColumns = 32;

__global__ void count_kernel(CoarseParams p, uint64_t* __restrict__ counts, uint32_t* __restrict__ large,
                             uint32_t* __restrict__ num_large) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  TileSetup ts;
  uint64_t n = 0;
  const TriSetup t = load_triangle(p.mesh, tri);
  if (tile_range(t, p, &ts) && single_tile(ts)) {
    n = 1;
  } else if (tile_setup(t, p, &ts)) {
    const uint32_t cols = ts.columns();
    if (cols > kLargeColumns) {
      large[atomicAdd(num_large, 1u)] = tri;  // counted by large_count_kernel
    } else {
      for (uint32_t k = 0; k < cols; ++k) {
        int32_t ta, tb;
        column_of(ts, k, &ta, &tb);
        for_each_tile_in_column(ts, p, ta, tb, [&](uint64_t) { ++n; });
      }
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
  TileSetup ts;
  if (!tile_range(t, p, &ts)) return;
  uint64_t o = offsets[i] - p.pair_base;
  const KeyT dom = KeyT(t.dom);
  if (single_tile(ts)) {
    keys[o] = (KeyT(tile_index(p, ts.tlo[0], ts.tlo[1], ts.tlo[2])) << 2) | dom;
    tris[o] = tri;
    return;
  }
  tile_setup_planes(t, &ts);
  const uint32_t cols = ts.columns();
  if (cols > kLargeColumns) return;  // emitted by large_emit_kernel
  for (uint32_t k = 0; k < cols; ++k) {
    int32_t ta, tb;
    column_of(ts, k, &ta, &tb);
    for_each_tile_in_column(ts, p, ta, tb, [&](uint64_t tile) {
      keys[o] = (KeyT(tile) << 2) | dom;
      tris[o] = tri;
      ++o;
    });
  }
}

constexpr unsigned kFull = 0xffffffffu;

// One warp per large triangle: lanes take tile columns; the warp sums their tile counts.
__global__ void large_count_kernel(CoarseParams p, const uint32_t* __restrict__ large,
                                   const uint32_t* __restrict__ num_large, uint64_t* __restrict__ counts) {
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  for (uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < *num_large; w += warps) {
    const uint32_t tri = large[w];
    TileSetup ts;
    tile_setup(load_triangle(p.mesh, tri), p, &ts);
    const uint32_t cols = ts.columns();
    uint64_t n = 0;
    for (uint32_t k = lane; k < cols; k += 32) {
      int32_t ta, tb;
      column_of(ts, k, &ta, &tb);
      for_each_tile_in_column(ts, p, ta, tb, [&](uint64_t) { ++n; });
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
    TileSetup ts;
    tile_setup(t, p, &ts);
    const KeyT dom = KeyT(t.dom);
    const uint32_t cols = ts.columns();
    uint64_t o = offsets[tri - p.tri_begin] - p.pair_base;
    for (uint32_t k0 = 0; k0 < cols; k0 += 32) {
      const uint32_t k = k0 + lane;
      int32_t ta = 0, tb = 0;
      uint32_t n = 0;
      if (k < cols) {
        column_of(ts, k, &ta, &tb);
        for_each_tile_in_column(ts, p, ta, tb, [&](uint64_t) { ++n; });
      }
      uint32_t incl = n;
      for (int d = 1; d < 32; d <<= 1) {
        const uint32_t x = __shfl_up_sync(kFull, incl, d);
        if (lane >= uint32_t(d)) incl += x;
      }
      uint64_t mine = o + (incl - n);
      if (k < cols) {
        for_each_tile_in_column(ts, p, ta, tb, [&](uint64_t tile) {
          keys[mine] = (KeyT(tile) << 2) | dom;
          tris[mine] = tri;
          ++mine;
        });
      }
      o += __shfl_sync(kFull, incl, 31);
    }
  }
}

unsigned blocks_for(uint64_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace

void launch_transform(const Vec3f* d_world, Vec3f* d_grid, uint64_t n, Vec3d origin, Vec3d size, cudaStream_t stream) {
  if (n == 0) return;
  transform_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(d_world, d_grid, n, origin, size);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, uint32_t* d_large, uint32_t* d_num_large,
                         int num_sms, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  VT_CUDA_CHECK(cudaMemsetAsync(d_num_large, 0, sizeof(uint32_t), stream));
  count_kernel<<<blocks_for(n, 128), 128, 0, stream>>>(p, d_counts, d_large, d_num_large);
  VT_CUDA_CHECK_LAUNCH();
  large_count_kernel<<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_counts);
  VT_CUDA_CHECK_LAUNCH();
}

template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, const uint32_t* d_large,
                        const uint32_t* d_num_large, KeyT* d_keys, uint32_t* d_tris, int num_sms, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  emit_kernel<KeyT><<<blocks_for(n, 128), 128, 0, stream>>>(p, d_offsets, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
  large_emit_kernel<KeyT><<<unsigned(num_sms * 8), 256, 0, stream>>>(p, d_large, d_num_large, d_offsets, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
}

template void launch_coarse_emit<uint32_t>(const CoarseParams&, const uint64_t*, const uint32_t*, const uint32_t*,
                                           uint32_t*, uint32_t*, int, cudaStream_t);
template void launch_coarse_emit<uint64_t>(const CoarseParams&, const uint64_t*, const uint32_t*, const uint32_t*,
                                           uint64_t*, uint32_t*, int, cudaStream_t);

}  // namespace voxtile
