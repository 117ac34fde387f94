// Workspace of the GPU inside test and narrow band (kernels/solid/solid.cu), kept across calls.
#pragma once

#include <cstdint>

#include "core/inside_grid.h"
#include "core/voxelize.h"
#include "kernels/common.cuh"
#include "kernels/mesh.cuh"

namespace voxtile {

struct GpuContext;

struct SolidState {
  DeviceBuffer<int64_t> d_u, d_v;
  DeviceBuffer<float> d_w;
  DeviceBuffer<uint64_t> d_counts, d_offsets, d_run_offsets, d_bricks, d_num;
  DeviceBuffer<unsigned long long> d_keys[2], d_counter;
  DeviceBuffer<int32_t> d_signs[2];
  DeviceBuffer<uint32_t> d_tris[2], d_run_counts, d_bits, d_masks, d_list;
  DeviceBuffer<uint8_t> d_tile_flags, d_col_flags;
  DeviceBuffer<InsideEdge> d_edges;
  DeviceBuffer<float> d_values;

  // Occupancy of the voxel centres inside the mesh: the same grid as inside_cpu.
  SparseGrid inside(GpuContext& ctx, DeviceMesh& mesh, const Mesh& host_mesh, const GridSpec& spec, InsideMethod method,
                    VoxelizeStats& stats);
  // Unsigned band distances: the same grid as band_distance_cpu.
  SparseGrid band(GpuContext& ctx, DeviceMesh& mesh, const GridSpec& spec, int band, VoxelizeStats& stats);

 private:
  // d_offsets = 0 followed by the inclusive sums of d_counts[0, n); returns the total.
  uint64_t scan_counts(GpuContext& ctx, uint64_t n);
  void inside_axis(GpuContext& ctx, const DeviceMesh& mesh, const GridSpec& spec, int axis, bool winding,
                   const InsideMesh* host, const InsideRange& range, uint32_t* bits, class StageTimer& timer);
};

}  // namespace voxtile
