// Reading voxtile's outputs back (for `voxtile compare`): .vdb, .ply voxel centres, .npy, .raw with
// its .json sidecar, and .npz buckets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/sparse_grid.h"

namespace voxtile {

struct GridFile {
  std::string path;
  std::string format;              // "vdb", "ply", "npy", "raw", "npz"
  std::vector<SparseGrid> grids;   // every grid (a .npz gives its fragment count grid)
  bool has_transform = false;      // voxel size and origin are known (not for .npy)
  bool cube_dims = false;          // dims padded to a cube by the format (.binvox)
  bool has_buckets = false;
  Buckets buckets;                 // .npz
};

// Reads any of the formats above by extension. Throws Error(kInput) naming the file and the problem.
GridFile read_grid_file(const std::string& path);

// Every mask, bool, int32, float and vec3s grid of a .vdb file, in the file's order.
std::vector<SparseGrid> read_vdb_grids(const std::string& path);

// Builds a SparseGrid from a dense C-order array of dims (x, y, z[, components]): a voxel is active
// when its value is nonzero (uint8), not `empty_int` (int32; kEmptyIntUnknown: -1 when any voxel
// holds -1, as triangle id grids mark empty voxels, else 0) or, for floats, when any component is
// not NaN.
constexpr int32_t kEmptyIntUnknown = INT32_MIN;
SparseGrid grid_from_dense(const unsigned char* data, const Int3& dims, ValueType type,
                           int32_t empty_int = kEmptyIntUnknown);

}  // namespace voxtile
