// GridSpec: where the voxel grid lies in world space, and how it is built from a mesh's bounds.
//
// Voxel (i,j,k) is the closed world-space box [origin + (i,j,k)*voxel_size, origin + (i+1,j+1,k+1)*voxel_size];
// its centre is origin + (i+0.5, j+0.5, k+0.5)*voxel_size. A world point p has grid coordinates
// g = float((p - origin) / voxel_size), computed in double and rounded once to float; all overlap
// tests run on those grid coordinates (core/overlap.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/hd.h"
#include "core/vec.h"

namespace voxtile {

// Axis-aligned bounds in world space (double). Empty when lo > hi on any axis.
struct Bounds {
  Vec3d lo{1e300, 1e300, 1e300};
  Vec3d hi{-1e300, -1e300, -1e300};
  bool empty() const { return lo.x > hi.x || lo.y > hi.y || lo.z > hi.z; }
  void extend(const Vec3d& p);
};

// Largest grid size along one axis. Grid coordinates are floats; up to 2^16 voxels per axis a
// vertex keeps at least 7 bits below the voxel.
constexpr int32_t kMaxGridDim = 65536;

// Grid coordinates of world point p: (p - origin) / voxel_size in double, rounded once to float.
// The one definition for the CPU and the GPU's transform stage.
VT_HD inline Vec3f world_to_grid(const Vec3d& p, const Vec3d& origin, const Vec3d& voxel_size) {
  return {static_cast<float>((p.x - origin.x) / voxel_size.x), static_cast<float>((p.y - origin.y) / voxel_size.y),
          static_cast<float>((p.z - origin.z) / voxel_size.z)};
}

struct GridSpec {
  Vec3d origin{0, 0, 0};      // world position of the minimum corner of voxel (0,0,0)
  Vec3d voxel_size{1, 1, 1};  // world size of a voxel along x, y, z
  Int3 dims{0, 0, 0};         // number of voxels along x, y, z

  uint64_t num_voxels() const { return uint64_t(dims.x) * uint64_t(dims.y) * uint64_t(dims.z); }
  Vec3f world_to_grid(const Vec3d& p) const { return voxtile::world_to_grid(p, origin, voxel_size); }
  Vec3d voxel_center(int32_t i, int32_t j, int32_t k) const {
    return {origin.x + (i + 0.5) * voxel_size.x, origin.y + (j + 0.5) * voxel_size.y,
            origin.z + (k + 0.5) * voxel_size.z};
  }
  bool is_cubic() const { return voxel_size.x == voxel_size.y && voxel_size.y == voxel_size.z; }
  std::string describe() const;  // "256x128x200 voxels of 0.01 at (x, y, z)"
};

// How the user asked for the grid. At most one of resolution / voxel_size decides the voxel size
// unless dims is given; see make_grid_spec.
struct GridOptions {
  std::optional<int32_t> resolution;      // voxels along the longest axis of the bounds
  std::optional<Vec3d> voxel_size;        // world voxel size per axis
  std::optional<Bounds> bbox;             // replaces the mesh bounds
  std::optional<Int3> dims;               // exact grid size
  int32_t pad = 0;                        // voxels added on every side
  static constexpr int32_t kDefaultResolution = 256;
};

// Builds the grid for `bounds` (the mesh's, unless options.bbox is set). Rules:
//  - origin = bounds.lo - pad * voxel_size.
//  - voxel size: options.voxel_size; else with dims, (hi - lo) / dims per axis (a flat axis takes
//    the largest of the others); else longest extent / resolution (default 256), cubic.
//  - dims: options.dims; else per axis the smallest d >= 1 with grid coordinate of bounds.hi <= d,
//    so every vertex lies in the grid's closed box; with --resolution N the longest axis is exactly N.
//  - then 2 * pad is added to each dimension.
// Throws Error(kUsage) for contradictory or absurd options and Error(kInput) for unusable bounds.
GridSpec make_grid_spec(const Bounds& bounds, const GridOptions& options);

}  // namespace voxtile
