// Public voxelization entry points: options, statistics, and the CPU reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/inside.h"
#include "core/mesh.h"
#include "core/overlap.h"
#include "core/sparse_grid.h"
#include "core/targets.h"

namespace voxtile {

const char* mode_name(VoxelMode m);

enum class Device : uint8_t { kAuto, kCpu, kGpu };

struct VoxelizeOptions {
  VoxelMode mode = VoxelMode::kConservative;
  Target target = Target::kBinary;
  Blend blend = Blend::kDefault;  // the target's default blend unless set
  int threads = 0;                // CPU threads, 0 = all
  InsideMethod inside = InsideMethod::kWinding;  // solid and sdf: the inside test (core/inside.h)
  int band = 3;                   // sdf: half-width of the narrow band in voxels (the smallest voxel size)
  TargetSpec spec() const { return make_target_spec(target, blend); }
};

// Per-stage timings (milliseconds) and counters, printed by --stats.
struct VoxelizeStats {
  std::string device;  // "cpu" or the GPU's name
  uint64_t triangles = 0;
  uint64_t tile_pairs = 0;     // (tile, triangle) pairs after binning
  uint64_t tiles = 0;          // non-empty tiles
  uint64_t virtual_tiles = 0;  // GPU: the fine raster's work items (tiles split when crowded), where the host
                               // read their number (0 where it stayed on the device)
  uint64_t bricks = 0;
  uint64_t active_voxels = 0;
  bool morton_order = false;      // GPU: the coarse raster visited triangles in Morton order
  std::vector<std::pair<std::string, double>> stage_ms;  // in pipeline order
  void add_stage(const std::string& name, double ms) { stage_ms.emplace_back(name, ms); }
};

// Throws Error(kUsage) unless every grid dimension is in [1, kMaxGridDim].
void check_grid_dims(const GridSpec& spec);
// Caps TBB's parallelism at `threads` while alive (0 = no cap).
class ThreadLimit {
 public:
  explicit ThreadLimit(int threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  void* m_control = nullptr;
};
// Waits until TBB's worker threads have ended, where nothing else holds the scheduler (a live
// task_arena or ThreadLimit: then it returns at once). For processes that exit normally under
// LeakSanitizer: its check at exit stops every thread with ptrace, and a worker ending meanwhile
// (TBB ends them in its exit handlers) made the tracer crash now and then ("Tracer caught signal
// 11", CI).
void end_worker_threads();

// The CPU reference as functions (CpuVoxelizer of core/voxelizer.h, set_mesh + voxelize): `mesh`
// into `spec` on TBB threads, deterministic for any thread count. One target (options.spec()):
SparseGrid voxelize_cpu(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                        VoxelizeStats* stats = nullptr);
// Several targets from one binning: one grid per target, in the order given (options.target and
// options.blend are ignored). Planning and names: plan_targets (core/voxelizer.h).
std::vector<SparseGrid> voxelize_cpu_targets(const Mesh& mesh, const GridSpec& spec, const VoxelizeOptions& options,
                                             const std::vector<TargetSpec>& targets, VoxelizeStats* stats = nullptr);

// Grid-space vertices of `mesh` (GridSpec::world_to_grid of each position), in parallel.
std::vector<Vec3f> to_grid_space(const Mesh& mesh, const GridSpec& spec);

}  // namespace voxtile
