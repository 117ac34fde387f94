// `voxtile mesh`: grids (or meshes, voxelized first) back to triangle meshes.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"

namespace voxtile {

struct MeshCmdOptions {
  std::string input;
  std::string output;
  std::string format;          // --format: ply, stl, obj, off, glb or 3mf (default: from the output name)
  std::string grid_name;       // which grid of a multi-grid file
  std::string style = "auto";  // auto (smooth), smooth or cubes
  float iso = 0.0f;
  bool ascii = false;
  GridArgs grid;  // mesh inputs: the grid they are voxelized into
  LoadArgs load;
  SolidArgs solid;
  std::string mode = "conservative";
  DeviceArgs device;
  bool stats = false;
  int verbosity = 1;
};

void setup_mesh(CLI::App& app, MeshCmdOptions& options);
int run_mesh(const MeshCmdOptions& options);

}  // namespace voxtile
