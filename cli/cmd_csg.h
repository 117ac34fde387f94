// `voxtile csg`: CSG scripts to surface point clouds or solids.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/cmd_points.h"

namespace voxtile {

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

void setup_csg(CLI::App& app, CsgCmdOptions& options);
int run_csg(const CsgCmdOptions& options);

}  // namespace voxtile
