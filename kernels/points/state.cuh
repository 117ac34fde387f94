// GpuPoints' device state (needs nvcc), shared by kernels/points/csg.cu and kernels/points/points.cu.
#pragma once

#include <string>

#include "kernels/api.h"
#include "kernels/common.cuh"
#include "kernels/compact.cuh"

namespace voxtile {

struct GpuPoints::Impl {
  int device = 0;
  ScanMethod method = ScanMethod::kTiles;
  uint64_t budget = 0;  // bytes; 0 = 80% of the free memory
  std::string name;
  cudaStream_t stream = nullptr;
  cudaStream_t side = nullptr;               // the new samples' flags, beside the live ones'
  cudaEvent_t fork = nullptr, join = nullptr;
  CompactWorkspace ws;

  // CSG state: the live samples (count on the device), the primitives applied so far.
  DeviceBuffer<Vec3f> pos[2], new_pos;
  DeviceBuffer<SampleParams> par[2], new_par;
  DeviceBuffer<uint8_t> new_keep;  // modes B.1/B.2 of the new samples (the pre-pass)
  DeviceBuffer<CsgPrimitive> prims;
  DeviceBuffer<uint64_t> live;  // [0] the live count
  int cur = 0;
  uint64_t bound = 0;  // host upper bound of the live count
  uint32_t num_prims = 0;

  // Solid.
  DeviceBuffer<uint32_t> slab_masks;  // 16 words per brick of a slab
  DeviceBuffer<uint64_t> out_keys;
  DeviceBuffer<uint32_t> out_masks;

  // Binning.
  DeviceBuffer<Vec3f> b_pos, b_normals;
  DeviceBuffer<Vec3d> b_pos64;
  DeviceBuffer<Rgb8> b_colors;
  DeviceBuffer<uint16_t> b_intensity;
  DeviceBuffer<uint8_t> b_classes;
  DeviceBuffer<uint64_t> b_class_keys;  // runs of (key << 8 | class) and their counts
  DeviceBuffer<uint32_t> b_class_counts;
  DeviceBuffer<uint64_t> b_votes;  // per voxel: (count << 8 | 255 - class) of its majority class
  DeviceBuffer<uint64_t> b_keys[2];
  DeviceBuffer<uint32_t> b_idx[2];
  DeviceBuffer<uint64_t> b_unique;
  DeviceBuffer<VoxelAcc> b_acc;
  DeviceBuffer<int64_t> b_runs;
  DeviceBuffer<uint32_t> b_counts;
  CubTemp cub;
  StagedCopy staging;

  uint64_t memory_budget() const { return budget_or_free_share(budget); }
};

// The live sample count (synchronises the stream).
uint64_t read_live(GpuPoints::Impl& m);

}  // namespace voxtile
