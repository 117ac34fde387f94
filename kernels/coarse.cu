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

// Calls f(linear tile index) for each tile the triangle may write.
template <class F>
__device__ void for_each_tile(const TriSetup& t, const CoarseParams& p, F&& f) {
  VoxelBox box;
  if (!triangle_voxel_range(t, p.mode, p.dims, &box)) return;
  int32_t tlo[3], thi[3];
  for (int a = 0; a < 3; ++a) {
    tlo[a] = box.lo[a] >> kTileLog2;
    thi[a] = box.hi[a] >> kTileLog2;
  }
  auto tile = [&](int32_t x, int32_t y, int32_t z) {
    return (uint64_t(x) * uint64_t(p.tiles.y) + uint64_t(y)) * uint64_t(p.tiles.z) + uint64_t(z);
  };
  if (tlo[0] == thi[0] && tlo[1] == thi[1] && tlo[2] == thi[2]) {
    f(tile(tlo[0], tlo[1], tlo[2]));
    return;
  }
  const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
  double v[3][3];
  for (int i = 0; i < 3; ++i) {
    v[i][0] = t.v[i].x;
    v[i][1] = t.v[i].y;
    v[i][2] = t.v[i].z;
  }
  double e1[3], e2[3], n[3];
  for (int k = 0; k < 3; ++k) {
    e1[k] = v[1][k] - v[0][k];
    e2[k] = v[2][k] - v[0][k];
  }
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  // The fine raster orients edges by the float normal; when float and double disagree (a sliver
  // near degeneracy) the 2D trim is skipped rather than risk dropping a tile the fine raster needs.
  const float nc_float = component(t.n, c);
  const double s = nc_float >= 0.0f ? 1.0 : -1.0;
  const bool trim_2d = nc_float != 0.0f && (n[c] >= 0.0) == (nc_float >= 0.0f) && n[c] != 0.0;
  double ena[3], enb[3];
  for (int i = 0; i < 3; ++i) {
    const int j = i == 2 ? 0 : i + 1;
    ena[i] = -(v[j][b] - v[i][b]) * s;
    enb[i] = (v[j][a] - v[i][a]) * s;
  }
  // Depth of the plane along c as a linear function of (a, b).
  const double ka = n[c] != 0.0 ? n[a] / n[c] : 0.0, kb = n[c] != 0.0 ? n[b] / n[c] : 0.0;
  int32_t ijk[3];
  for (int32_t ta = tlo[a]; ta <= thi[a]; ++ta) {
    // Voxel extent of this tile column within the triangle's range, widened by one voxel.
    const double a0 = double(max(ta << kTileLog2, box.lo[a])) - 1.0;
    const double a1 = double(min((ta + 1) << kTileLog2, box.hi[a] + 1)) + 1.0;
    for (int32_t tb = tlo[b]; tb <= thi[b]; ++tb) {
      const double b0 = double(max(tb << kTileLog2, box.lo[b])) - 1.0;
      const double b1 = double(min((tb + 1) << kTileLog2, box.hi[b] + 1)) + 1.0;
      bool inside = true;
      for (int i = 0; i < 3 && inside && trim_2d; ++i)
        inside = ena[i] * ((ena[i] > 0 ? a1 : a0) - v[i][a]) + enb[i] * ((enb[i] > 0 ? b1 : b0) - v[i][b]) >= 0.0;
      if (!inside) continue;
      int32_t c0 = tlo[c], c1 = thi[c];
      if (n[c] != 0.0) {
        double dmin = 1e300, dmax = -1e300;
        for (int corner = 0; corner < 4; ++corner) {
          const double ca = corner & 1 ? a1 : a0, cb = corner & 2 ? b1 : b0;
          const double d = v[0][c] - (ka * (ca - v[0][a]) + kb * (cb - v[0][b]));
          dmin = fmin(dmin, d);
          dmax = fmax(dmax, d);
        }
        const double lo_t = floor((dmin - 2.0) / kTileDim), hi_t = floor((dmax + 2.0) / kTileDim);
        if (lo_t > double(c0)) c0 = lo_t > double(c1) ? c1 + 1 : int32_t(lo_t);
        if (hi_t < double(c1)) c1 = hi_t < double(c0) ? c0 - 1 : int32_t(hi_t);
      }
      for (int32_t tc = c0; tc <= c1; ++tc) {
        ijk[a] = ta;
        ijk[b] = tb;
        ijk[c] = tc;
        f(tile(ijk[0], ijk[1], ijk[2]));
      }
    }
  }
}

__global__ void count_kernel(CoarseParams p, uint64_t* __restrict__ counts) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  uint64_t n = 0;
  for_each_tile(load_triangle(p.mesh, tri), p, [&](uint64_t) { ++n; });
  counts[i] = n;
}

template <class KeyT>
__global__ void emit_kernel(CoarseParams p, const uint64_t* __restrict__ offsets, KeyT* __restrict__ keys,
                            uint32_t* __restrict__ tris) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t tri = p.tri_begin + i;
  if (tri >= p.tri_end) return;
  uint64_t o = offsets[i] - p.pair_base;
  const TriSetup t = load_triangle(p.mesh, tri);
  const KeyT dom = KeyT(t.dom);
  for_each_tile(t, p, [&](uint64_t tile) {
    keys[o] = (KeyT(tile) << 2) | dom;
    tris[o] = tri;
    ++o;
  });
}

unsigned blocks_for(uint64_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace

void launch_transform(const Vec3f* d_world, Vec3f* d_grid, uint64_t n, Vec3d origin, Vec3d size, cudaStream_t stream) {
  if (n == 0) return;
  transform_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(d_world, d_grid, n, origin, size);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  count_kernel<<<blocks_for(n, 128), 128, 0, stream>>>(p, d_counts);
  VT_CUDA_CHECK_LAUNCH();
}

template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, KeyT* d_keys, uint32_t* d_tris,
                        cudaStream_t stream) {
  const uint64_t n = p.tri_end - p.tri_begin;
  if (n == 0) return;
  emit_kernel<KeyT><<<blocks_for(n, 128), 128, 0, stream>>>(p, d_offsets, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
}

template void launch_coarse_emit<uint32_t>(const CoarseParams&, const uint64_t*, uint32_t*, uint32_t*, cudaStream_t);
template void launch_coarse_emit<uint64_t>(const CoarseParams&, const uint64_t*, uint64_t*, uint32_t*, cudaStream_t);

}  // namespace voxtile
