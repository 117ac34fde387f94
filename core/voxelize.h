// Public voxelization entry points: options, statistics, and the CPU reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/mesh.h"
#include "core/overlap.h"
#include "core/sparse_grid.h"

namespace voxtile {

enum class Target : uint8_t {
  kBinary = 0,  // occupancy (OR)
  kCount = 1,   // number of triangles whose voxelization contains the voxel (add)
  kId = 2,      // smallest index of a triangle whose voxelization contains the voxel (min)
};
// Targets with one int32 per voxel.
inline bool has_values(Target t) { return t != Target::kBinary; }

// The id target is blended as max over (0xffffffff - triangle index), so that 0 means empty in
// the tile buffers of both the CPU and the GPU path.
VT_HD inline uint32_t encode_id(uint32_t tri) { return 0xffffffffu - tri; }
VT_HD inline int32_t decode_id(uint32_t v) { return static_cast<int32_t>(0xffffffffu - v); }
const char* target_name(Target t);
const char* mode_name(VoxelMode m);

enum class Device : uint8_t { kAuto, kCpu, kGpu };

struct VoxelizeOptions {
  VoxelMode mode = VoxelMode::kConservative;
  Target target = Target::kBinary;
  int threads = 0;  // CPU threads, 0 = all
};

// Per-stage timings (milliseconds) and counters, printed by --stats.
struct VoxelizeStats {
  std::string device;  // "cpu" or the GPU's name
  uint64_t triangles = 0;
  uint64_t tile_pairs = 0;     // (tile, triangle) pairs after binning
  uint64_t tiles = 0;          // non-empty tiles
  uint64_t bricks = 0;
  uint64_t active_voxels = 0;
  std::vector<std::pair<std::string, double>> stage_ms;  // in pipeline order
  void add_stage(const std::string& name, double ms) { stage_ms.emplace_back(name, ms); }
};

// Tile edge of the CPU reference, in voxels (4x4x4 bricks).
constexpr int kCpuTileDim = 32;

// Voxelizes `mesh` into `spec` on the CPU (TBB). Deterministic for any thread count.
SparseGrid voxelize_cpu(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                        VoxelizeStats* stats = nullptr);

// Grid-space vertices of `mesh` (GridSpec::world_to_grid of each position), in parallel.
std::vector<Vec3f> to_grid_space(const Mesh& mesh, const GridSpec& spec);

}  // namespace voxtile
