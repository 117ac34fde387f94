// `voxtile points` (mesh -> points, points -> voxels, voxels -> points), and the helpers it
// shares with `voxtile csg`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"
#include "cli/preview.h"
#include "core/points.h"
#include "io/writers.h"
#include "kernels/api.h"

namespace voxtile {

// How densely surfaces are sampled: at most one of the three may be given.
struct SamplingArgs {
  double spacing = 0;  // world distance between samples: density 1 / spacing^2
  double density = 0;  // samples per unit area
  uint64_t count = 0;  // total samples (meshes only)
  // Samples per unit area; the default spacing is the longest extent of `bounds` / 512.
  double per_area(const Bounds& bounds) const;
};

struct PointsCmdOptions {
  std::string input, output, format, values = "auto", grid_name;
  SamplingArgs sampling;
  GridArgs grid;
  LoadArgs load;
  DeviceArgs device;
  bool stats = false;
  GridOutputArgs writing;  // how grids are written
  PreviewArgs preview;     // --preview PNG
  int verbosity = 1;
};

// --spacing, --density (and --count for meshes).
void add_sampling_options(CLI::App& app, SamplingArgs& s, bool with_count);
// The GPU that --device picks (pick_gpu), or null for the CPU.
// `index` (when given) is set to the GPU's index, or -1.
std::unique_ptr<GpuPoints> open_gpu_points(const DeviceArgs& device, ScanMethod scan, const Log& log,
                                           int* index = nullptr);
// open_gpu_points' result, made in the background (BackgroundStart) while the points load.
struct StartedPoints {
  int index = -1;
  std::unique_ptr<GpuPoints> gpu;
};
// The CPU's time to bin `points` points (bin_points_cpu) on `threads` threads, estimated: under
// --device auto a cloud binned sooner than the GPU would start is binned on the CPU
// (small_job_on_cpu).
double estimated_cpu_bin_ms(uint64_t points, int threads);
uint64_t cloud_checksum(const PointCloud& pc);

void setup_points(CLI::App& app, PointsCmdOptions& options);
int run_points(const PointsCmdOptions& options);

}  // namespace voxtile
