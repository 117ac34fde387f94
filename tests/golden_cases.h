// The golden matrix: meshes x grids x modes x targets, shared by the CPU golden test and the GPU tests.
#pragma once

#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/voxelize.h"

namespace voxtile::test {

struct GoldenCase {
  std::string mesh;  // relative to data/
  std::string grid;  // "r64", "r100", "d37x50x23", "r1", "r7", "r64p3"
  VoxelMode mode;
  TargetSpec target;
  std::string id() const { return mesh + " " + grid + " " + mode_name(mode) + " " + target_spec_name(target); }
};

inline GridOptions golden_grid(const std::string& g) {
  GridOptions o;
  if (g[0] == 'd') {
    int x = 0, y = 0, z = 0;
    std::sscanf(g.c_str(), "d%dx%dx%d", &x, &y, &z);
    o.dims = Int3{x, y, z};
  } else {
    int r = 0, p = 0;
    if (std::sscanf(g.c_str(), "r%dp%d", &r, &p) < 1) std::sscanf(g.c_str(), "r%d", &r);
    o.resolution = r;
    o.pad = p;
  }
  return o;
}

// Every target with every blend it allows.
inline std::vector<TargetSpec> all_target_specs() {
  return {{Target::kBinary, Blend::kOr},     {Target::kCount, Blend::kAdd},    {Target::kId, Blend::kMin},
          {Target::kDistance, Blend::kMin},  {Target::kId, Blend::kMax},       {Target::kDistance, Blend::kMax},
          {Target::kDistance, Blend::kAdd},  {Target::kNormal, Blend::kMax},   {Target::kNormal, Blend::kAdd}};
}

inline std::vector<GoldenCase> golden_cases() {
  const std::vector<std::string> meshes = {"meshes/stanford_bunny.ply", "formats/gltf/Duck.glb",
                                           "formats/obj/spider.obj", "formats/stl/sphereWithHole.stl",
                                           "formats/off/Wuson.off", "formats/3mf/box.3mf"};
  const std::vector<std::string> grids = {"r1", "r7", "r64", "r100", "d37x50x23", "r64p3"};
  std::vector<GoldenCase> cases;
  for (const auto& m : meshes)
    for (const auto& g : grids)
      for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative})
        for (const TargetSpec& t : all_target_specs()) cases.push_back({m, g, mode, t});
  return cases;
}

}  // namespace voxtile::test
