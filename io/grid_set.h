// Checks on the grids one output file holds together.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sparse_grid.h"

namespace voxtile {

// Whether two arrays of trivially copyable elements hold the same bytes (memcmp may not be given the
// null data() of an empty vector).
template <class T, class A>
bool same_bytes(const std::vector<T, A>& a, const std::vector<T, A>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Whether the two grids have the same active voxels (bricks, masks and runs; values may differ).
inline bool same_active_voxels(const SparseGrid& a, const SparseGrid& b) {
  return a.keys == b.keys && same_bytes(a.masks, b.masks) && same_bytes(a.runs, b.runs);
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
