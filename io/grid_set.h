// Checks on the grids one output file holds together.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sparse_grid.h"

namespace voxtile {

// Whether the two grids have the same active voxels (bricks and masks; values may differ).
inline bool same_active_voxels(const SparseGrid& a, const SparseGrid& b) {
  return a.keys == b.keys && a.masks.size() == b.masks.size() &&
         std::memcmp(a.masks.data(), b.masks.data(), a.masks.size() * sizeof(BrickMask)) == 0 &&
         a.runs.size() == b.runs.size() &&
         std::memcmp(a.runs.data(), b.runs.data(), a.runs.size() * sizeof(BrickRun)) == 0;
}

// The first of `grids`, which must all have its active voxels (one file holds one point per voxel
// with every grid's value); Error(kInternal) naming the file and its format otherwise.
inline const SparseGrid& one_voxel_set(const std::vector<const SparseGrid*>& grids, const std::string& path,
                                       const char* format) {
  if (grids.empty()) fail(ErrorKind::kInternal, "no grid to write");
  for (const SparseGrid* o : grids)
    if (!same_active_voxels(*o, *grids[0]))
      fail(ErrorKind::kInternal, path + ": grids of one " + format + " file must have the same active voxels");
  return *grids[0];
}

}  // namespace voxtile
