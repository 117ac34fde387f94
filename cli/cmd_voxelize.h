// `voxtile voxelize`: meshes to voxel grids.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/preview.h"

namespace voxtile {

struct VoxelizeCmdOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string format;  // empty: from the output extension (vdb for a directory)
  GridArgs grid;
  LoadArgs load;
  std::string mode = "conservative";
  std::string target = "binary";
  SolidArgs solid;
  DeviceArgs device;
  bool stats = false;
  GridOutputArgs writing;  // how grids are written
  PreviewArgs preview;     // --preview PNG (a name template with several inputs)
  int verbosity = 1;
};

void setup_voxelize(CLI::App& app, VoxelizeCmdOptions& options);
// Runs the command; returns the exit code (0, or the kind of the first failing input).
int run_voxelize(const VoxelizeCmdOptions& options);

}  // namespace voxtile
