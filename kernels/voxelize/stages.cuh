// Launchers of the voxelization pipeline's stages (needs nvcc). One .cu file per stage:
// coarse.cu (count, emit), tiles.cu (virtual tiles), the fine raster and brick write-out (fine.cuh:
// its kernels in fine.cu for binary, fine_<target>.cu for the others), bricks.cu (brick merge); the
// transform is kernels/mesh.cu, run starts kernels/compact.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/overlap.h"
#include "core/tile_footprint.h"
#include "core/vec.h"
#include "core/voxelize.h"
#include "kernels/api.h"
#include "kernels/common.cuh"
#include "kernels/mesh.cuh"

namespace voxtile {

constexpr int kTileBricks = 64;  // bricks of a kTileDim^3 tile (core/tile_footprint.h)

struct CoarseParams {
  // The triangles in visiting order: the mesh's, or its index triples gathered in Morton order
  // (launch_triangle_order), in which case pairs carry positions in that order.
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

// Triangles ordered along a Morton curve of their centroids (cells of 1/256 of the grid's longest
// side), so that neighbouring threads of the coarse and fine rasters read neighbouring triangles
// whatever order the file lists them in: d_order gets the num_tris triangle indices in that order,
// d_indices their index triples (3 * num_tris), gathered so that they are read in order. Work
// buffers are grown as needed.
void launch_triangle_order(const MeshView& mesh, uint32_t num_tris, Int3 dims, DeviceBuffer<uint32_t>& d_order,
                           DeviceBuffer<uint32_t>& d_indices, DeviceBuffer<uint32_t>& d_keys,
                           DeviceBuffer<uint32_t>& d_tmp, CubTemp& cub, cudaStream_t stream);

// d_counts[i] = number of tiles triangle tri_begin + i may write (num = tri_end - tri_begin), and
// d_single[i] what the emit pass does with it (the key of its one pair, when it has one).
// Triangles spanning many tile columns are listed in d_large (capacity num) and counted by a warp each;
// *d_num_large and *d_large_pairs (zero before) get their number and the sum of their counts.
// d_tile_pairs (or null): zeroed counts of pairs per tile of the grid, which the count adds to.
void launch_coarse_count(const CoarseParams& p, uint64_t* d_counts, uint64_t* d_single, uint32_t* d_large,
                         uint32_t* d_num_large, unsigned long long* d_large_pairs, uint32_t* d_tile_pairs, int num_sms,
                         cudaStream_t stream);
// Writes (tile << 2 | dominant axis, triangle) pairs at d_offsets[i] - pair_base (exclusive scan of
// counts), in the same order for every run (d_offsets, d_single: from the batch's first triangle);
// d_large null: the count pass found no large triangles. With d_tile_cursor (the exclusive scan of
// the count's d_tile_pairs, for a batch of every triangle), each pair goes to its tile's next slot
// instead: the pairs come out grouped by tile in tile order, without a sort, but in no fixed order
// within a tile (binary targets only: an OR does not depend on it); d_keys may then be null (the
// tiles are known from the counts), and pairs at slots past `capacity` are not written (a buffer
// sized before the host knew the number of pairs).
template <class KeyT>
void launch_coarse_emit(const CoarseParams& p, const uint64_t* d_offsets, const uint64_t* d_single,
                        const uint32_t* d_large, const uint32_t* d_num_large, uint32_t* d_tile_cursor,
                        uint64_t capacity, KeyT* d_keys, uint32_t* d_tris, int num_sms, cudaStream_t stream);
// The tile of a sorted pair's key (tile << 2 | dominant axis): runs of equal tiles are the tiles.
template <class KeyT>
struct PairTile {
  const KeyT* keys;
  __device__ uint64_t operator()(uint64_t i) const { return uint64_t(keys[i] >> 2); }
};
// Per tile (d_begins: *d_num_tiles first-pair indices, *d_num_tiles <= tile_bound), the exclusive
// scan of its number of virtual tiles, over tile_bound + 1 entries (counts past the real tiles are
// zero), so d_offsets[tile_bound] is the number of virtual tiles.
void launch_virtual_offsets(const uint32_t* d_begins, const uint64_t* d_num_tiles, uint32_t tile_bound,
                            uint64_t num_pairs, uint32_t max_per_tile, uint32_t* d_offsets, CubTemp& cub,
                            cudaStream_t stream);
// The virtual tiles at those offsets; *d_tile_stat = *d_num_tiles unless d_tile_stat is null.
template <class KeyT>
void launch_virtual_emit(const KeyT* d_keys, const uint32_t* d_begins, const uint64_t* d_num_tiles,
                         uint32_t tile_bound, uint64_t num_pairs, uint32_t max_per_tile, const uint32_t* d_offsets,
                         VirtualTile* d_vtiles, uint64_t* d_tile_stat, cudaStream_t stream);

// Triangles per virtual tile: at most max_tile_triangles, and small enough that each of `teams`
// teams of the fine raster (a warp for binary tiles, a block for value tiles) gets about four
// virtual tiles, but not below 32 (or max_tile_triangles if smaller).
__host__ __device__ inline uint32_t virtual_tile_size(uint64_t num_pairs, uint32_t max_tile, uint64_t teams) {
  const uint64_t lo = max_tile < 32 ? max_tile : 32;
  if (num_pairs <= 4 * teams * lo) return uint32_t(lo);  // (no 64-bit division: scans call this per tile)
  const uint64_t want = (num_pairs + 4 * teams - 1) / (4 * teams);
  const uint64_t hi = max_tile < want ? max_tile : want;
  return uint32_t(lo > hi ? lo : hi);
}
// The virtual tiles of pairs grouped by the coarse raster's scatter (launch_coarse_emit with a
// cursor), from the counts of pairs per tile of the grid (d_tile_pairs, num_tiles of them) and
// the advanced cursor (d_tile_ends: one past each tile's last pair), without a pass over the pairs.
// The number of pairs is on the device (*d_num_pairs); when it exceeds `capacity` (the pairs did
// not fit their buffers) there are no virtual tiles. d_offsets (num_tiles + 1 entries): the
// exclusive scan of virtual tiles per tile, d_offsets[num_tiles] their number; *d_tile_stat (zero
// before) gets the number of non-empty tiles.
void launch_scattered_virtual_tiles(const uint32_t* d_tile_pairs, const uint32_t* d_tile_ends, uint32_t num_tiles,
                                    const uint64_t* d_num_pairs, uint64_t capacity, uint32_t max_tile, uint64_t teams,
                                    uint32_t* d_offsets, VirtualTile* d_vtiles, uint64_t* d_tile_stat, CubTemp& cub,
                                    cudaStream_t stream);

struct BrickOutput {
  uint64_t* d_keys;        // capacity bricks
  uint32_t* d_masks;       // kBrickMaskWords * capacity words (BrickMask layout)
  uint32_t* d_values;      // brick_value_words (core/targets.h) * capacity, or null
  unsigned long long* d_count;  // bricks written (may exceed capacity: then retry)
  uint64_t capacity;
};

struct FineParams {
  MeshView mesh;                 // CoarseParams::mesh
  const uint32_t* d_tris;        // sorted triangles of the batch's pairs (in mesh)
  const uint32_t* d_tri_ids;     // the source triangle id of a triangle of mesh (shading), or null if the same
  const VirtualTile* d_vtiles;   // *d_num_vtiles
  const uint32_t* d_num_vtiles;
  unsigned int* d_next;          // work counter, zero at launch
  FineKernel kernel;             // kRows, kSpread or kRanges (binary targets: kAuto with d_auto_pairs)
  bool ranges;                   // with d_auto_pairs: kRanges may be chosen (and is launched)
  // Binary targets whose number of pairs the host has not read (the scatter): that number on the
  // device and the batch's triangles; the binary kernels are launched and those the automatic rule
  // (auto_fine_kernel) does not choose return at once. Null otherwise.
  const uint64_t* d_auto_pairs;
  uint32_t auto_tris;
  // With d_auto_pairs: the large triangles' number and pairs (launch_coarse_count), which the rule
  // leaves out of its ratio.
  const uint32_t* d_auto_num_large;
  const unsigned long long* d_auto_large_pairs;
  Int3 dims, tiles;
  ShadeConsts consts;            // fragment shader constants
  BrickOutput out;
};
// Persistent fine raster: every virtual tile rastered in shared memory, non-empty bricks appended.
// sub_tiles (32-bit value targets): one warp per 16^3 octant instead of one block per 32^3 tile;
// 64-bit (add) targets always raster 16^3 octants, one block each.
void launch_fine(const FineParams& p, VoxelMode mode, const TargetSpec& target, bool sub_tiles, int num_sms,
                 cudaStream_t stream);

// d[i] = i for i < n.
void launch_iota(uint32_t* d, uint64_t n, cudaStream_t stream);
// For the merge's sort when a grid has at most 2^32 bricks: d_out[i] = the linear index of brick
// key d_keys[i] among the grid's `bricks` (x-major, so the order and equality of brick keys), and
// d_iota[i] = i.
void launch_brick_sort_keys(const uint64_t* d_keys, uint64_t n, const Int3& bricks, uint32_t* d_out, uint32_t* d_iota,
                            cudaStream_t stream);
// The key of a sorted brick: runs of equal keys are merged into one brick.
template <class KeyT>
struct SortedKeyAt {
  const KeyT* keys;
  __device__ KeyT operator()(uint64_t i) const { return keys[i]; }
};
// Binary targets when the grid's linear brick indices fit 32 bits: the bricks (keys d_keys_in, masks
// d_masks_in, n of them) merged without a sort, through a bitmap of the grid's bricks
// (d_bitmap: bitmap_merge_words(bricks) words) whose words' popcounts are scanned into d_word_rank
// (one more entry: the number of merged bricks, num_unique); each brick ORs its mask into slot
// (flagged bricks before it), so d_keys_out / d_masks_out (room for n) hold the merged bricks in
// key order, as the sort gives them. d_n, if not null, holds the number of bricks on the device
// (the fine raster's count; n is then its upper bound, the buffers' capacity).
uint64_t bitmap_merge_words(const Int3& bricks);
void launch_bitmap_merge(const uint64_t* d_keys_in, uint64_t n, const unsigned long long* d_n, const Int3& bricks,
                         uint32_t* d_bitmap, uint32_t* d_word_rank, CubTemp& cub, const uint32_t* d_masks_in,
                         uint64_t* d_keys_out, uint32_t* d_masks_out, int num_sms, cudaStream_t stream);
// Merges each run (d_starts: num_unique run starts into d_perm, the sorting permutation of the
// unmerged bricks d_keys_in) into one brick: OR of masks, and for value targets the target's blend
// of the raw values, decoded (core/targets.h decode32/decode64) for the merged brick's active voxels
// only: out_channels words each (int32 or float bits, x,y,z interleaved per voxel), in ascending
// offset, brick u's from d_active_begin[u] (num_unique + 1 entries: the exclusive scan of the
// bricks' active voxels, then their total).
void launch_brick_merge(const uint64_t* d_keys_in, const uint32_t* d_perm, const uint32_t* d_starts,
                        uint64_t num_unique, uint64_t n, const uint32_t* d_masks_in, const uint32_t* d_values_in,
                        uint64_t* d_keys_out, uint32_t* d_masks_out, uint64_t* d_active_begin, uint32_t* d_values_out,
                        const TargetSpec& target, const ShadeConsts& consts, CubTemp& cub, cudaStream_t stream);

}  // namespace voxtile
