// `voxtile csg` (CSG scripts to point clouds or solids) and `voxtile points` (mesh -> points,
// points -> voxels, voxels -> points).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"

namespace voxtile {

// How densely surfaces are sampled: at most one of the three may be given.
struct SamplingArgs {
  double spacing = 0;  // world distance between samples: density 1 / spacing^2
  double density = 0;  // samples per unit area
  uint64_t count = 0;  // total samples (meshes only)
  // Samples per unit area; the default spacing is the longest extent of `bounds` / 512.
  double per_area(const Bounds& bounds) const;
};

struct CsgCmdOptions {
  std::string input, output, format;
  SamplingArgs sampling;
  uint32_t batch = 0;
  bool solid = false;
  GridArgs grid;
  std::string device = "auto";
  std::string scan = "tiles-cub";
  uint64_t gpu_memory = 0;
  uint64_t max_samples = 1000000000;
  int threads = 0;
  bool stats = false;
  uint64_t dense_limit = 0;
  bool force = false;
  int verbosity = 1;
};

struct PointsCmdOptions {
  std::string input, output, format, values = "auto", grid_name;
  SamplingArgs sampling;
  GridArgs grid;
  std::string device = "auto";
  uint64_t gpu_memory = 0;
  int threads = 0;
  bool stats = false;
  uint64_t dense_limit = 0;
  bool force = false;
  int verbosity = 1;
};

void setup_csg(CLI::App& app, CsgCmdOptions& options);
int run_csg(const CsgCmdOptions& options);
void setup_points(CLI::App& app, PointsCmdOptions& options);
int run_points(const PointsCmdOptions& options);

}  // namespace voxtile
