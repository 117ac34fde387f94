// The voxelization pipeline's device workspace (needs nvcc): buffers that only grow, kept from call
// to call. Its stages are in kernels/voxelize/*.cu; the pipeline that runs them, pipeline.cu.
#pragma once

#include <memory>
#include <vector>

#include "core/voxelize.h"
#include "kernels/common.cuh"
#include "kernels/voxelize/stages.cuh"

namespace voxtile {

struct GpuContext;
struct GpuStageProbe;

// Grids of at most this many tiles keep the counts of tiles on the device (run_batch), and only
// they count pairs per tile for the scatter below.
constexpr uint64_t kDeviceTileBound = uint64_t(1) << 20;
// Binary targets group their pairs by tile with a count per tile and a scatter (no sort) when the
// grid has at most kDeviceTileBound tiles (and not many more than 8 per triangle: the counts' scan
// is then cheap next to the sort it saves), and the mesh has at most kScatterMaxTriangles triangles
// or lists them in a local order (core/mesh.h kScatterLocalOrder: enough of its sampled neighbours
// closer than a tile's extent). Measured on an H200 (GPU total ms, scatter / sort): the 100k dragon
// 0.31-0.35 / 0.33-0.38 in file order, 0.31-0.32 / 0.32-0.38 shuffled, the bunny 0.56-0.65 /
// 0.62-0.70, the room (307k) the same. On larger meshes the counts' and the scatter's atomics on
// the tiles cost more where neighbouring triangles are far apart than the sort they save; where
// they are close the scatter, with the host no longer waiting for the pairs' number, wins (H200,
// kernels of 5c3f793 with every order scattered: 6.4M dragon 1.24 / 1.40 in file order, 1.65 /
// 1.68 listed by quarters, 1.96 / 1.70 shuffled; 1.6M dragon 0.62 / 0.70, 0.77 / 0.80, 0.84 /
// 0.80; 1M tubes 1.91 / 1.98, shuffled 2.07 / 2.09; 3M tubes 5.13 / 5.23, shuffled 5.44 / 5.42;
// as landed: scripts/bench-results/scatter-order-h200-2026-11-27.md).
#ifndef VT_SCATTER_MAX_TRIANGLES  // (A/B builds: scripts/kernel-variant.sh)
#define VT_SCATTER_MAX_TRIANGLES 500000
#endif
constexpr uint64_t kScatterMaxTriangles = VT_SCATTER_MAX_TRIANGLES;
// 32-bit value targets raster 16^3 octants, two warps each (sub_tiles_for_values), below this many
// pairs per virtual tile times the pairs per triangle (at most kSubTileMaxSize of them); else a 32^3
// tile per 16-warp block. A block's warps take batches of 32 of its tile's pairs, so a tile of few
// pairs leaves most of them idle; octants set every pair up once per octant but keep every warp
// busy, which pays more the more voxels a pair has (larger triangles: more pairs per triangle).
// Measured on an H200 (count, fine ms, tile / octant, octants of two warps with small records;
// scripts/bench-results/octant-teams-h200-h100-2026-11-28.md) on 30 cases (tubes, CAD, room, dragons,
// bunny, Sponza, terrain, scan at 256^3 to 2048^3): octants faster or equal (within 1%) up to 221
// pairs per virtual tile per pair per triangle (the room at 512^3: 0.318 / 0.181; the 1M tubes at
// 512^3, 210: 1.489 / 1.247; the dragon at 256^3, 170: 0.134 / 0.135), tiles faster from 326 (the
// 1.6M dragon at 1024^3: 0.846 / 0.861; the 400k dragon at 512^3, 335: 0.238 / 0.301): the faster
// layout in all 30. With one warp per octant (8 warps per SM, not 20) the limit was 80
// (scripts/bench-results/value-tiles-h200-2026-11-28.md).
#ifndef VT_SUB_TILE_PAIRS  // (A/B builds: scripts/kernel-variant.sh)
#define VT_SUB_TILE_PAIRS 300
#endif
#ifndef VT_SUB_TILE_MAX_SIZE
#define VT_SUB_TILE_MAX_SIZE 4
#endif
constexpr double kSubTilePairs = VT_SUB_TILE_PAIRS;
constexpr double kSubTileMaxSize = VT_SUB_TILE_MAX_SIZE;
inline bool sub_tiles_for_values(uint64_t num_pairs, uint64_t vtiles, uint64_t tris) {
  const double per_tri = tris ? double(num_pairs) / double(tris) : 1.0;
  return double(num_pairs) < double(vtiles) * kSubTilePairs * (per_tri < kSubTileMaxSize ? per_tri : kSubTileMaxSize);
}

struct VoxelizeState {
  // Coarse raster and sort: tiles per triangle and their scan, large triangles, (key, triangle) pairs.
  DeviceBuffer<uint64_t> d_counts, d_offsets, d_single;  // (d_single: launch_coarse_count)
  DeviceBuffer<uint32_t> d_large, d_num_large;
  DeviceBuffer<unsigned long long> d_large_pairs;  // the large triangles' pairs (launch_coarse_count)
  bool any_large = true;                           // whether the coarse count found large triangles
  // The job's triangles, and its large triangles' number and pairs where the host read them (for
  // auto_fine_kernel on a batch of every triangle).
  uint64_t job_tris = 0, num_large = 0, large_pairs = 0;
  // Pairs grouped by tile without a sort (binary targets; launch_coarse_emit): pairs per tile of
  // the grid, then their exclusive scan, which the emit advances (to each tile's end, from which
  // launch_scattered_virtual_tiles finds the tiles). scatter: the count was taken.
  DeviceBuffer<uint32_t> d_tile_pairs, d_tile_cursor;
  bool scatter = false;
  // Morton visiting order (launch_triangle_order): triangle ids, index triples, work buffers.
  DeviceBuffer<uint32_t> d_order, d_order_indices, d_order_keys, d_order_tmp;
  const uint32_t* d_tri_ids = nullptr;  // d_order when the triangles were visited in that order
  DeviceBuffer<uint32_t> d_keys32[2];
  DeviceBuffer<uint64_t> d_keys64[2];
  DeviceBuffer<uint32_t> d_tris[2];
  // Tiles: first pair of each tile (sorted pairs), the exclusive scan of virtual tiles per tile,
  // the virtual tiles.
  DeviceBuffer<uint32_t> d_tile_begins, d_voffsets;
  DeviceBuffer<VirtualTile> d_vtiles;
  DeviceBuffer<uint64_t> d_tile_stat;  // the number of tiles, when it stayed on the device
  bool tiles_on_device = false;
  uint64_t scatter_room = 0;          // the pairs' room of the last scatter_batch (its pairs, when unknown, fit there)
  DeviceBuffer<unsigned int> d_next;  // the fine raster's work counter
  bool next_zeroed = false;           // d_next is zero (cleared with the job's counters, not yet used)
  // Unmerged bricks of one rastered target.
  struct TargetBricks {
    DeviceBuffer<uint64_t> d_keys;
    DeviceBuffer<uint32_t> d_masks, d_values;
    DeviceBuffer<unsigned long long> d_count;
    uint64_t written = 0;  // d_count as the host last read it
  };
  std::vector<std::unique_ptr<TargetBricks>> bricks;
  // Merge: sorted keys and their permutation, run starts, merged bricks.
  // (32-bit linear brick indices d_brick_index when the grid has at most 2^32 bricks, else the
  // 64-bit keys themselves).
  DeviceBuffer<uint64_t> d_sorted_keys, d_out_keys;
  DeviceBuffer<uint32_t> d_brick_index, d_sorted_index;
  DeviceBuffer<uint32_t> d_iota, d_perm, d_starts, d_out_masks, d_out_values;
  DeviceBuffer<uint32_t> d_brick_bitmap, d_word_rank;  // binary merge without a sort (launch_bitmap_merge)
  // Value targets: where each merged brick's active values begin in d_out_values (launch_brick_merge;
  // the grid's value_begin).
  DeviceBuffer<uint64_t> d_active_begin;

  // A single binary target rastered in one batch leaves its brick count on the device: the merge
  // reads it together with the merged count (one host round trip less). What the merge needs to
  // raster again should the bricks have overflowed their buffers:
  struct DeferredFine {
    CoarseParams cp;
    const uint32_t* d_sorted_tris;
    const uint32_t* d_num_vtiles;
    const uint64_t* d_num_pairs;
    uint64_t vtiles, num_pairs, capacity;
    VoxelMode mode;
  };
  bool fine_deferred = false;
  DeferredFine deferred{};

  std::vector<TargetSpec> rastered;  // the targets of this call
  ShadeConsts consts{};
  GpuStageProbe* probe = nullptr;

  // only_batch: the batch holds every triangle (the counts of tiles may then stay on the device).
  template <class KeyT>
  void run_batch(GpuContext& ctx, DeviceBuffer<KeyT>* keys, const CoarseParams& cp, uint64_t num_pairs, int key_bits,
                 VoxelMode mode, bool only_batch, StageTimer& timer, VoxelizeStats* stats);
  // The batch of every triangle with its pairs scattered (scatter): tiles from the counts per tile.
  // pairs_known false: num_pairs is not the number of pairs but the room for them; the number
  // stays on the device and is checked by the caller after the merge. d_tile_stat: zero before (the
  // caller clears it), it gets the number of non-empty tiles.
  void scatter_batch(GpuContext& ctx, const CoarseParams& cp, uint64_t num_pairs, bool pairs_known, VoxelMode mode,
                     StageTimer& timer);
  bool any_values() const;  // whether a rastered target is not binary
  uint64_t fine_teams(const GpuContext& ctx) const;
  // d_num_vtiles: the number of virtual tiles on the device; vtiles: that number (vtiles_exact) or
  // an upper bound on it; num_pairs: the batch's pairs, or where d_num_pairs is not null (the host
  // has not read their number, which is there) an estimate; known_bricks: the bricks another
  // target wrote in this batch, or 0. Returns the bricks written (0 when the count was left on the
  // device: fine_deferred).
  uint64_t fine_target(GpuContext& ctx, size_t t, const CoarseParams& cp, const uint32_t* d_sorted_tris,
                       const uint32_t* d_num_vtiles, uint64_t vtiles, bool vtiles_exact, uint64_t num_pairs,
                       const uint64_t* d_num_pairs, uint64_t known_bricks, VoxelMode mode, StageTimer& timer,
                       bool may_defer = true);
  SparseGrid merge_target(GpuContext& ctx, size_t t, const GridSpec& spec, StageTimer& timer);
  const uint32_t* bitmap_merge(GpuContext& ctx, TargetBricks& b, uint64_t n, const unsigned long long* d_n,
                               const Int3& nbricks);
  SparseGrid download_merged(GpuContext& ctx, size_t t, uint64_t num_unique, SparseGrid grid, StageTimer& timer);
  std::string stage(const char* name, size_t t) const {
    return rastered.size() > 1 ? std::string(name) + ":" + target_spec_name(rastered[t]) : std::string(name);
  }
};

}  // namespace voxtile
