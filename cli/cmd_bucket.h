// `voxtile bucket`: A-buffer bucketing (every fragment of every voxel).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.h"

namespace voxtile {

struct BucketCmdOptions {
  std::string input;
  std::vector<std::string> outputs;  // .npz buckets, and/or grid files of the fragment count
  GridArgs grid;
  LoadArgs load;
  std::string mode = "conservative";
  std::string attrs = "bary";
  DeviceArgs device;
  bool stats = false;
  GridOutputArgs writing;  // how grids are written
  int verbosity = 1;
};

void setup_bucket(CLI::App& app, BucketCmdOptions& options);
int run_bucket(const BucketCmdOptions& options);

}  // namespace voxtile
