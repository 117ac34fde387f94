// Plain C++ interface to the GPU code (no CUDA headers): device discovery and the GPU pipelines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/voxelize.h"

namespace voxtile {

struct GpuInfo {
  bool available = false;
  int device = -1;
  std::string name;    // e.g. "NVIDIA H200"
  std::string reason;  // why not available
  size_t total_memory = 0;
};

struct GpuOptions {
  uint64_t memory_budget = 0;          // bytes the pipeline may use; 0 = 80% of the free memory
  uint32_t max_tile_triangles = 512;   // M: a tile with more triangles is split into virtual tiles
  uint64_t max_batch_pairs = 0;        // cap on (tile, triangle) pairs per batch; 0 = from the budget
  uint64_t initial_bricks = 0;         // first brick-buffer size per batch; 0 = estimate (tests force retries)
  int value_tiles = 0;                 // value targets: 0 = choose, 1 = a 32^3 tile per block, 2 = a 16^3 octant per warp
  int device = 0;                      // CUDA device index
  bool two_pass_fragment_sort = false; // bucketing: sort by triangle then voxel even when one 64-bit key would do (tests)
};

// The GPU voxelization pipeline (coarse raster, radix sort by tile, fine raster in shared memory,
// brick write-out). Holds its device workspace across calls; not thread-safe, but usable from any
// one thread at a time (each call makes its device current).
class GpuVoxelizer {
 public:
  explicit GpuVoxelizer(const GpuOptions& options = {});
  ~GpuVoxelizer();
  GpuVoxelizer(const GpuVoxelizer&) = delete;
  GpuVoxelizer& operator=(const GpuVoxelizer&) = delete;

  // Uploads the mesh; it stays on the device for later voxelize() calls.
  void set_mesh(const Mesh& mesh);
  // Voxelizes the uploaded mesh. Same voxels and values as voxelize_cpu. Throws Error(kResource).
  SparseGrid voxelize(const GridSpec& spec, const VoxelizeOptions& options, VoxelizeStats* stats = nullptr);
  // Several targets from one coarse raster, sort and tiling: the same grids as voxelize_cpu_targets.
  std::vector<SparseGrid> voxelize_targets(const GridSpec& spec, const VoxelizeOptions& options,
                                           const std::vector<TargetSpec>& targets, VoxelizeStats* stats = nullptr);
  // A-buffer bucketing of `mesh` (uploaded, replacing the current mesh): the same lists as bucket_cpu.
  Buckets bucket(const Mesh& mesh, const GridSpec& spec, const BucketOptions& options, VoxelizeStats* stats = nullptr);
  const std::string& device_name() const;

 private:
  struct Impl;
  Impl* m;
};

// Whether this build has CUDA kernels at all.
bool gpu_compiled();
// Looks for a usable CUDA device (never throws).
GpuInfo query_gpu(int device = 0);
// Number of CUDA devices (0 without CUDA or a driver).
int gpu_count();

}  // namespace voxtile
