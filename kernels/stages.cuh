// Launchers of the voxelization pipeline's stages (needs nvcc). One .cu file per stage:
// coarse.cu (transform, count, emit), tiles.cu (tile ranges, virtual tiles), fine.cu (fine
// raster and brick write-out), bricks.cu (brick sort and merge).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/overlap.h"
#include "core/tile_footprint.h"
#include "core/vec.h"
#include "core/voxelize.h"

namespace voxtile {

constexpr int kTileBricks = 64;  // bricks of a kTileDim^3 tile (core/tile_footprint.h)

struct MeshView {
  const Vec3f* d_grid;        // num_vertices grid-space positions
  const uint32_t* d_indices;  // 3 * num_triangles
};

struct CoarseParams {
  MeshView mesh;
  uint32_t tri_begin, tri_end;  // the batch of triangles
  uint64_t pair_base;           // offset of the batch's first pair (subtracted when emitting)
  Int3 dims;                    // grid size in voxels
  Int3 tiles;                   // grid size in tiles
  VoxelMode mode;
};

// A range of at most max_tile_triangles pairs of one tile.
struct VirtualTile {
  uint64_t tile;  // linear tile index
  uint32_t begin, end;
};

// World positions to grid coordinates, exactly as GridSpec::world_to_grid (double, rounded once).
void launch_transform(const Vec3f* d_world, Vec3f* d_grid, uint64_t num_vertices, Vec3d origin, Vec3d voxel_size,
                      cudaStream_t stream);
// d_counts[i] = number of tiles triangle tri_begin + i may write (num = tri_end - tri_begin).
// Triangles spanning many tile columns are listed in d_large (capacity num) and counted by a warp each.
void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, uint32_t* d_large, uint32_t* d_num_large,
                         int num_sms, cudaStream_t stream);
// Writes (tile << 2 | dominant axis, triangle) pairs at d_offsets[i] - pair_base (exclusive scan of
// counts), in the same order for every run.
template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, const uint32_t* d_large,
                        const uint32_t* d_num_large, KeyT* d_keys, uint32_t* d_tris, int num_sms, cudaStream_t stream);
// Flags the first pair of each tile in sorted keys.
template <class KeyT>
void launch_tile_heads(const KeyT* d_keys, uint64_t num_pairs, uint8_t* d_heads, cudaStream_t stream);
// Per tile (d_begins: num_tiles first-pair indices), the number of virtual tiles.
void launch_virtual_counts(const uint32_t* d_begins, const uint32_t* d_num_tiles, uint64_t num_pairs,
                           uint32_t max_per_tile, uint32_t* d_counts, uint64_t max_tiles, cudaStream_t stream);
template <class KeyT>
void launch_virtual_emit(const KeyT* d_keys, const uint32_t* d_begins, const uint32_t* d_num_tiles, uint64_t num_pairs,
                         uint32_t max_per_tile, const uint32_t* d_offsets, VirtualTile* d_vtiles, uint64_t max_tiles,
                         cudaStream_t stream);

// 32-bit words per brick of a target's raw (unmerged) values: 512 for 32-bit blends, 1024 per
// channel for 64-bit fixed-point sums (channel-major), none for binary.
constexpr int brick_value_words(const TargetSpec& t) {
  return word_kind(t.target, t.blend) == Word::kBit     ? 0
         : word_kind(t.target, t.blend) == Word::kAdd64 ? 2 * kBrickVoxels * acc_channels(t.target, t.blend)
                                                        : kBrickVoxels;
}

struct BrickOutput {
  uint64_t* d_keys;        // capacity bricks
  uint32_t* d_masks;       // 16 * capacity words (BrickMask layout)
  uint32_t* d_values;      // brick_value_words * capacity, or null
  unsigned long long* d_count;  // bricks written (may exceed capacity: then retry)
  uint64_t capacity;
};

struct FineParams {
  MeshView mesh;
  const uint32_t* d_tris;        // sorted triangle ids of the batch's pairs
  const VirtualTile* d_vtiles;   // num_vtiles
  uint32_t num_vtiles;
  unsigned int* d_next;          // work counter, zero at launch
  Int3 dims, tiles;
  ShadeConsts consts;            // fragment shader constants
  BrickOutput out;
};
// Persistent fine raster: every virtual tile rastered in shared memory, non-empty bricks appended.
// sub_tiles (32-bit value targets): one warp per 16^3 octant instead of one block per 32^3 tile;
// 64-bit (add) targets always raster 16^3 octants, one block each.
void launch_fine(const FineParams& p, VoxelMode mode, const TargetSpec& target, bool sub_tiles, int num_sms,
                 cudaStream_t stream);

// ---- A-buffer bucketing (bucket.cu) ----

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
// Flags the first fragment of each voxel in sorted keys.
void launch_bucket_heads(const BucketParams& p, uint64_t n, const uint64_t* d_keys, uint8_t* d_heads, cudaStream_t stream);
// Voxel coordinates and offsets (num_voxels + 1) from the run starts.
void launch_bucket_voxels(const BucketParams& p, uint64_t num_voxels, uint64_t n, const uint64_t* d_keys,
                          const uint32_t* d_starts, int32_t* d_ijk, int64_t* d_offsets, cudaStream_t stream);
// Triangle and attributes of every sorted fragment.
void launch_bucket_fragments(const BucketParams& p, const BucketAttrs& a, uint64_t n, const uint64_t* d_keys,
                             const uint32_t* d_tris, cudaStream_t stream);

// d[i] = i for i < n.
void launch_iota(uint32_t* d, uint64_t n, cudaStream_t stream);
// Marks the first of each run of equal keys in sorted brick keys.
void launch_brick_heads(const uint64_t* d_sorted, uint64_t n, uint8_t* d_heads, cudaStream_t stream);
// Merges each run (d_starts: num_unique run starts into d_perm) into one brick: OR of masks, and
// the target's blend of the raw values, decoded into 512 * out_channels output words per brick
// (int32 or float bits, x,y,z interleaved per voxel), as core/targets.h decode32/decode64.
void launch_brick_merge(const uint64_t* d_sorted, const uint32_t* d_perm, const uint32_t* d_starts, uint64_t num_unique,
                        uint64_t n, const uint32_t* d_masks_in, const uint32_t* d_values_in, uint64_t* d_keys_out,
                        uint32_t* d_masks_out, uint32_t* d_values_out, const TargetSpec& target,
                        const ShadeConsts& consts, cudaStream_t stream);

}  // namespace voxtile
