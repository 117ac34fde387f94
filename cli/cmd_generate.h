// `voxtile generate`: large benchmark meshes from the project's own generators.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"

namespace voxtile {

struct GenerateCmdOptions {
  std::string kind;    // scan, tubes, room
  std::string output;  // .ply
  std::string format;  // --format: ply, stl, obj, off, glb or 3mf (default: from the output name)
  std::string input;   // scan: the mesh to subdivide
  LoadArgs load;
  bool ascii = false, shuffle = false;
  int levels = 3;      // scan: subdivision levels
  uint32_t tubes = 1000, rings = 300, sides = 5;
  uint32_t objects = 640;
  double radius = 0.002;
  double length = 0;  // tubes: 0 = closed curves
  std::string order = "file";  // scan: file (children together) or quarters
  uint64_t seed = 1;
  int verbosity = 1;  // -q: nothing but errors
};

void setup_generate(CLI::App& app, GenerateCmdOptions& options);
int run_generate(const GenerateCmdOptions& options);

}  // namespace voxtile
