// Comparing grids and bucket lists (`voxtile compare`): voxel sets, IoU, value differences.
#pragma once

#include <string>
#include <vector>

#include "core/bucket.h"
#include "core/sparse_grid.h"

namespace voxtile {

struct GridDiff {
  std::string name_a, name_b;
  uint64_t active_a = 0, active_b = 0, both = 0, only_a = 0, only_b = 0;
  double iou = 1.0;                 // both / (active_a + active_b - both); 1 when both are empty
  double max_abs_diff = 0.0;        // largest value difference over voxels in both (any channel)
  uint64_t values_differing = 0;    // voxels in both whose values differ by more than the tolerance
  bool dims_equal = true, transform_equal = true, types_equal = true;
  bool equal = true;
};

// Compares two grids voxel by voxel. Transforms are compared only when both are known; values when
// both grids have the same number of channels (NaN equals NaN). A grid whose format pads its dims to
// a cube (`*_cube`: .binvox) has dims equal to the other's when its cube is the other's largest
// dimension (its voxels in the padding still count).
GridDiff compare_grids(const SparseGrid& a, bool a_transform, const SparseGrid& b, bool b_transform, double tolerance,
                       bool a_cube = false, bool b_cube = false);

struct BucketDiff {
  uint64_t voxels_a = 0, voxels_b = 0, both = 0, only_a = 0, only_b = 0;
  uint64_t fragments_a = 0, fragments_b = 0;
  uint64_t lists_differing = 0;     // voxels in both whose triangle lists differ
  double max_abs_diff = 0.0;        // over the attributes of voxels with equal lists
  bool grid_equal = true, attrs_equal = true;
  bool equal = true;
};
BucketDiff compare_buckets(const Buckets& a, const Buckets& b, double tolerance);

// Whether two grid placements agree (dims exactly; voxel size and origin to 1e-9 voxel sizes).
bool same_transform(const GridSpec& a, const GridSpec& b);

}  // namespace voxtile
