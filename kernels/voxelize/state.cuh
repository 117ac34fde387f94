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

// Below this many triangles per virtual tile, value targets raster 16^3 octants per warp.
constexpr uint64_t kSubTileTriangles = 96;

struct VoxelizeState {
  // Coarse raster and sort: tiles per triangle and their scan, large triangles, (key, triangle) pairs.
  DeviceBuffer<uint64_t> d_counts, d_offsets;
  DeviceBuffer<uint32_t> d_large, d_num_large;
  DeviceBuffer<uint32_t> d_order, d_order_keys, d_order_tmp;  // Morton visiting order (launch_triangle_order)
  DeviceBuffer<uint32_t> d_keys32[2];
  DeviceBuffer<uint64_t> d_keys64[2];
  DeviceBuffer<uint32_t> d_tris[2];
  // Tiles: first pair of each tile, virtual tiles per tile and their scan, the virtual tiles.
  DeviceBuffer<uint32_t> d_tile_begins, d_vcounts, d_voffsets;
  DeviceBuffer<VirtualTile> d_vtiles;
  DeviceBuffer<unsigned int> d_next;  // the fine raster's work counter
  // Unmerged bricks of one rastered target.
  struct TargetBricks {
    DeviceBuffer<uint64_t> d_keys;
    DeviceBuffer<uint32_t> d_masks, d_values;
    DeviceBuffer<unsigned long long> d_count;
  };
  std::vector<std::unique_ptr<TargetBricks>> bricks;
  // Merge: sorted keys and their permutation, run starts, merged bricks.
  // (32-bit linear brick indices d_brick_index when the grid has at most 2^32 bricks, else the
  // 64-bit keys themselves).
  DeviceBuffer<uint64_t> d_sorted_keys, d_out_keys;
  DeviceBuffer<uint32_t> d_brick_index, d_sorted_index;
  DeviceBuffer<uint32_t> d_iota, d_perm, d_starts, d_out_masks, d_out_values;

  std::vector<TargetSpec> rastered;  // the targets of this call
  ShadeConsts consts{};
  GpuStageProbe* probe = nullptr;

  template <class KeyT>
  void run_batch(GpuContext& ctx, DeviceBuffer<KeyT>* keys, const CoarseParams& cp, uint64_t num_pairs, int key_bits,
                 VoxelMode mode, StageTimer& timer, uint64_t* tiles_out);
  void fine_target(GpuContext& ctx, size_t t, const CoarseParams& cp, const uint32_t* d_sorted_tris,
                   uint32_t num_vtiles, uint64_t num_pairs, VoxelMode mode, StageTimer& timer);
  SparseGrid merge_target(GpuContext& ctx, size_t t, const GridSpec& spec, StageTimer& timer);
  std::string stage(const char* name, size_t t) const {
    return rastered.size() > 1 ? std::string(name) + ":" + target_spec_name(rastered[t]) : std::string(name);
  }
};

}  // namespace voxtile
