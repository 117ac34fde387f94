// `voxtile info FILE`: what a mesh, point cloud or .vdb file holds.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"

namespace voxtile {

struct InfoCmdOptions {
  std::string input;
  GridArgs grid;
  LoadArgs load;
};

void setup_info(CLI::App& app, InfoCmdOptions& options);
int run_info(const InfoCmdOptions& options);

}  // namespace voxtile
