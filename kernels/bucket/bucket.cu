// A-buffer bucketing kernels (VoxelPipe section 4.2): triangle classification, fragment emission
// by small-triangle threads and large-triangle warps with warp-aggregated atomics, voxel run heads,
// and per-fragment attributes.
#include <cooperative_groups.h>

#include "core/bucket.h"
#include "kernels/common.cuh"
#include "kernels/bucket/stages.cuh"

namespace voxtile {
namespace {

namespace cg = cooperative_groups;


// Rows (scanlines of the dominant projection) of the triangle's clipped bounds; 0 if it emits nothing.
__device__ inline uint32_t triangle_rows(const TriSetup& t, VoxelMode mode, const VoxelBox& clip, VoxelBox* r) {
  const bool any = mode == VoxelMode::kConservative ? conservative_bounds(t, clip, r) : thin_bounds(t, clip, r);
  const int b = vt_axis_b(t.dom);
  return any ? uint32_t(r->hi[b] - r->lo[b] + 1) : 0u;
}

__global__ void classify_kernel(BucketParams p, uint32_t* __restrict__ desc, uint32_t* __restrict__ ids,
                                uint32_t* __restrict__ counters) {
  const uint32_t tri = blockIdx.x * blockDim.x + threadIdx.x;
  if (tri >= p.num_tris) return;
  const TriSetup t = load_triangle(p.mesh, tri);
  VoxelBox r;
  const uint32_t rows = triangle_rows(t, p.mode, p.clip, &r);
  uint32_t d = kBucketCulled;
  const int a = vt_axis_a(t.dom);
  const uint32_t cols = rows ? uint32_t(r.hi[a] - r.lo[a] + 1) : 0u;
  if (rows > kBucketLargeRows || uint64_t(rows) * cols > kBucketLargeArea) {
    d = 32u | (uint32_t(t.dom) << 3) | (component(t.n, t.dom) >= 0.0f ? 4u : 0u);
    atomicAdd(&counters[1], 1u);
  } else if (rows > 0) {
    auto log2c = [](uint32_t x) { return x <= 1 ? 0u : (x <= 2 ? 1u : (x <= 4 ? 2u : 3u)); };
    d = (uint32_t(t.dom) << 3) | (log2c(rows) << 1) | (cols > 2 ? 1u : 0u);
    atomicAdd(&counters[0], 1u);
  }
  desc[tri] = d;
  ids[tri] = tri;
}

// Appends one fragment: the lanes that emit together share one global atomic.
__device__ inline void append(const BucketParams& p, uint64_t voxel, uint32_t tri) {
  cg::coalesced_group g = cg::coalesced_threads();
  unsigned long long base = 0;
  if (g.thread_rank() == 0) base = atomicAdd(p.d_count, static_cast<unsigned long long>(g.size()));
  base = g.shfl(base, 0);
  const unsigned long long idx = base + g.thread_rank();
  if (idx < p.capacity) {
    p.d_keys[idx] = p.tri_bits ? (voxel << p.tri_bits) | tri : voxel;
    p.d_tris[idx] = tri;
  }
}

__device__ inline void emit_row(const BucketParams& p, const TriSetup& t, const VoxelBox& r, int32_t row, uint32_t tri) {
  auto emit = [&](int32_t i, int32_t j, int32_t k) { append(p, voxel_linear_index(i, j, k, p.dims), tri); };
  if (p.mode == VoxelMode::kConservative) conservative_row(setup_conservative(t), r, row, emit);
  else thin_row(t, setup_diamond_edges(t, t.dom), r, row, component(p.dims, t.dom), emit);
}

// 32-row chunks of each large triangle (sorted[num_small + l]); d_chunks[num_large] = 0 for the scan.
__global__ void chunks_kernel(BucketParams p, const uint32_t* __restrict__ sorted, uint32_t num_small, uint32_t num_large,
                              uint32_t* __restrict__ chunks) {
  const uint32_t l = blockIdx.x * blockDim.x + threadIdx.x;
  if (l > num_large) return;
  if (l == num_large) {
    chunks[l] = 0;
    return;
  }
  const TriSetup t = load_triangle(p.mesh, sorted[num_small + l]);
  VoxelBox r;
  chunks[l] = (triangle_rows(t, p.mode, p.clip, &r) + 31) / 32;
}

// Warps [0, small_warps): a small triangle per thread. Then a warp per 32-row chunk of a large
// triangle (chunk_offsets: exclusive scan of the chunks), a row per lane, so a wall spanning the
// grid keeps many warps busy instead of one.
__global__ void emit_kernel(BucketParams p, const uint32_t* __restrict__ sorted, uint32_t num_small, uint32_t num_large,
                            const uint32_t* __restrict__ chunk_offsets, uint32_t num_chunks) {
  const uint64_t warp = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const uint64_t small_warps = (uint64_t(num_small) + 31) / 32;
  if (warp < small_warps) {
    const uint64_t s = warp * 32 + lane;
    if (s >= num_small) return;
    const uint32_t tri = sorted[s];
    const TriSetup t = load_triangle(p.mesh, tri);
    VoxelBox r;
    if (!triangle_rows(t, p.mode, p.clip, &r)) return;
    const int b = vt_axis_b(t.dom);
    for (int32_t row = r.lo[b]; row <= r.hi[b]; ++row) emit_row(p, t, r, row, tri);
  } else {
    const uint64_t c = warp - small_warps;
    if (c >= num_chunks) return;
    uint32_t lo = 0, hi = num_large;  // last l with chunk_offsets[l] <= c
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (chunk_offsets[mid] <= c) lo = mid;
      else hi = mid;
    }
    const uint32_t tri = sorted[num_small + lo];
    const TriSetup t = load_triangle(p.mesh, tri);
    VoxelBox r;
    if (!triangle_rows(t, p.mode, p.clip, &r)) return;
    const int b = vt_axis_b(t.dom);
    const int32_t row = r.lo[b] + int32_t(c - chunk_offsets[lo]) * 32 + lane;
    if (row <= r.hi[b]) emit_row(p, t, r, row, tri);
  }
}

__device__ inline uint64_t voxel_of(const BucketParams& p, uint64_t key) { return p.tri_bits ? key >> p.tri_bits : key; }

__global__ void voxels_kernel(BucketParams p, uint64_t num_voxels, uint64_t n, const uint64_t* __restrict__ keys,
                              const uint32_t* __restrict__ starts, int32_t* __restrict__ ijk, int64_t* __restrict__ offsets) {
  const uint64_t v = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v > num_voxels) return;
  if (v == num_voxels) {
    offsets[v] = int64_t(n);
    return;
  }
  const uint32_t s = starts[v];
  voxel_from_linear(voxel_of(p, keys[s]), p.dims, &ijk[3 * v]);
  offsets[v] = int64_t(s);
}

__global__ void fragments_kernel(BucketParams p, BucketAttrs a, uint64_t n, const uint64_t* __restrict__ keys,
                                 const uint32_t* __restrict__ tris) {
  const uint64_t f = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (f >= n) return;
  const uint64_t key = keys[f];
  const uint32_t tri = p.tri_bits ? uint32_t(key & ((uint64_t(1) << p.tri_bits) - 1)) : tris[f];
  a.triangle[f] = int32_t(tri);
  if (!(a.attrs & (kAttrBary | kAttrNormal | kAttrUv | kAttrMaterial))) return;
  int32_t ijk[3];
  voxel_from_linear(voxel_of(p, key), p.dims, ijk);
  const int32_t i = ijk[0], j = ijk[1], k = ijk[2];
  const uint32_t* idx = p.mesh.d_indices + 3 * uint64_t(tri);
  const Vec3f tv[3] = {p.mesh.d_grid[idx[0]], p.mesh.d_grid[idx[1]], p.mesh.d_grid[idx[2]]};
  float b[3];
  voxel_barycentrics(tv, i, j, k, a.voxel_size, b);
  if (a.attrs & kAttrBary)
    for (int c = 0; c < 3; ++c) a.bary[3 * f + c] = b[c];
  if (a.attrs & kAttrNormal) {
    Vec3f vn[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    if (a.normals)
      for (int q = 0; q < 3; ++q) vn[q] = a.normals[idx[q]];
    const Vec3f nrm = interpolate_normal(vn, b, world_normal(tv, a.voxel_size));
    a.normal[3 * f] = nrm.x;
    a.normal[3 * f + 1] = nrm.y;
    a.normal[3 * f + 2] = nrm.z;
  }
  if (a.attrs & kAttrUv) {
    const Vec2f uv[3] = {a.uvs[idx[0]], a.uvs[idx[1]], a.uvs[idx[2]]};
    const Vec2f q = interpolate_uv(uv, b);
    a.uv[2 * f] = q.x;
    a.uv[2 * f + 1] = q.y;
  }
  if (a.attrs & kAttrMaterial) a.material[f] = a.materials ? int32_t(a.materials[tri]) : 0;
}

}  // namespace

void launch_bucket_classify(const BucketParams& p, uint32_t* d_desc, uint32_t* d_ids, uint32_t* d_counters,
                            cudaStream_t stream) {
  VT_CUDA_CHECK(cudaMemsetAsync(d_counters, 0, 2 * sizeof(uint32_t), stream));
  if (p.num_tris == 0) return;
  classify_kernel<<<blocks_for(p.num_tris, 256), 256, 0, stream>>>(p, d_desc, d_ids, d_counters);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_bucket_chunks(const BucketParams& p, const uint32_t* d_sorted, uint32_t num_small, uint32_t num_large,
                          uint32_t* d_chunks, cudaStream_t stream) {
  chunks_kernel<<<blocks_for(uint64_t(num_large) + 1, 256), 256, 0, stream>>>(p, d_sorted, num_small, num_large, d_chunks);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_bucket_emit(const BucketParams& p, const uint32_t* d_sorted, uint32_t num_small, uint32_t num_large,
                        const uint32_t* d_chunk_offsets, uint32_t num_chunks, cudaStream_t stream) {
  const uint64_t warps = (uint64_t(num_small) + 31) / 32 + num_chunks;
  if (warps == 0) return;
  emit_kernel<<<blocks_for(warps * 32, 256), 256, 0, stream>>>(p, d_sorted, num_small, num_large, d_chunk_offsets,
                                                                num_chunks);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_bucket_voxels(const BucketParams& p, uint64_t num_voxels, uint64_t n, const uint64_t* d_keys,
                          const uint32_t* d_starts, int32_t* d_ijk, int64_t* d_offsets, cudaStream_t stream) {
  voxels_kernel<<<blocks_for(num_voxels + 1, 256), 256, 0, stream>>>(p, num_voxels, n, d_keys, d_starts, d_ijk, d_offsets);
  VT_CUDA_CHECK_LAUNCH();
}

void launch_bucket_fragments(const BucketParams& p, const BucketAttrs& a, uint64_t n, const uint64_t* d_keys,
                             const uint32_t* d_tris, cudaStream_t stream) {
  if (n == 0) return;
  fragments_kernel<<<blocks_for(n, 256), 256, 0, stream>>>(p, a, n, d_keys, d_tris);
  VT_CUDA_CHECK_LAUNCH();
}

}  // namespace voxtile
