// `voxtile preview`: a PNG picture of a grid file, or of a mesh voxelized first.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"
#include "cli/preview.h"

namespace voxtile {

struct PreviewCmdOptions {
  std::string input;
  std::string output;
  std::string grid_name;  // the drawn grid of a multi-grid file
  PictureArgs picture;
  GridArgs grid;  // mesh inputs: the grid they are voxelized into
  LoadArgs load;
  SolidArgs solid;
  std::string mode = "conservative";
  std::string target = "binary";
  DeviceArgs device;
  bool stats = false;
  int verbosity = 1;
};

void setup_preview(CLI::App& app, PreviewCmdOptions& options);
int run_preview(const PreviewCmdOptions& options);

}  // namespace voxtile
