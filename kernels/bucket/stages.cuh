// Launchers of the A-buffer bucketing stages (needs nvcc), kernels/bucket/bucket.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/bucket.h"
#include "core/overlap.h"
#include "kernels/mesh.cuh"

namespace voxtile {

// Triangle descriptors (6 bits): large triangles (more than kBucketLargeRows rows, or a bounding
// rectangle of more than kBucketLargeArea voxels in the dominant projection) 32 | axis << 3 |
// orientation << 2; small ones axis << 3 | log2(rows) << 1 | (more than 2 columns); kBucketCulled
// when the triangle emits nothing in the clip box. Sorting by descriptor groups triangles of one
// size and orientation, so warps work on alike triangles.
constexpr uint32_t kBucketLargeRows = 8;
constexpr uint64_t kBucketLargeArea = 128;
constexpr uint32_t kBucketCulled = 63;

struct BucketParams {
  MeshView mesh;
  uint32_t num_tris;
  Int3 dims;
  VoxelBox clip;  // the grid, or one x-slab of it
  VoxelMode mode;
  int tri_bits;   // > 0: keys are voxel << tri_bits | triangle (one sort); 0: keys are voxels
  uint64_t* d_keys;
  uint32_t* d_tris;
  unsigned long long* d_count;  // fragments emitted (may exceed capacity: then retry)
  uint64_t capacity;
};
struct BucketAttrs {
  uint32_t attrs;
  Vec3f voxel_size;
  const Vec3f* normals;       // per vertex, or null
  const Vec2f* uvs;           // per vertex (kAttrUv)
  const uint32_t* materials;  // per triangle, or null
  int32_t* triangle;          // outputs per fragment
  float* bary;
  float* normal;
  float* uv;
  int32_t* material;
};
// Descriptor and identity permutation per triangle; counters[0] = small, counters[1] = large.
void launch_bucket_classify(const BucketParams& p, uint32_t* d_desc, uint32_t* d_ids, uint32_t* d_counters,
                            cudaStream_t stream);
// Per large triangle (after the num_small small ones in d_sorted), its 32-row chunks; one more 0.
void launch_bucket_chunks(const BucketParams& p, const uint32_t* d_sorted, uint32_t num_small, uint32_t num_large,
                          uint32_t* d_chunks, cudaStream_t stream);
// Emits the (key, triangle) fragments of the sorted triangles: small ones a thread each, large ones
// a warp per 32-row chunk (d_chunk_offsets: exclusive scan of the chunks, num_chunks in all).
void launch_bucket_emit(const BucketParams& p, const uint32_t* d_sorted, uint32_t num_small, uint32_t num_large,
                        const uint32_t* d_chunk_offsets, uint32_t num_chunks, cudaStream_t stream);
// The voxel of a sorted fragment key: runs of equal voxels are the buckets.
struct FragmentVoxel {
  const uint64_t* keys;
  int tri_bits;
  __device__ uint64_t operator()(uint64_t i) const { return keys[i] >> tri_bits; }
};
// Voxel coordinates and offsets (num_voxels + 1) from the run starts.
void launch_bucket_voxels(const BucketParams& p, uint64_t num_voxels, uint64_t n, const uint64_t* d_keys,
                          const uint32_t* d_starts, int32_t* d_ijk, int64_t* d_offsets, cudaStream_t stream);
// Triangle and attributes of every sorted fragment.
void launch_bucket_fragments(const BucketParams& p, const BucketAttrs& a, uint64_t n, const uint64_t* d_keys,
                             const uint32_t* d_tris, cudaStream_t stream);

}  // namespace voxtile
