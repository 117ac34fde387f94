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
  DeviceArgs device;
  std::string scan = "tiles-cub";
  uint64_t max_samples = 1000000000;
  bool stats = false;
  GridOutputArgs writing;  // how grids are written
  PreviewArgs preview;     // --preview PNG
  int verbosity = 1;
};

void setup_csg(CLI::App& app, CsgCmdOptions& options);
int run_csg(const CsgCmdOptions& options);

}  // namespace voxtile
