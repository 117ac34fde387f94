// PLY output of a SparseGrid: one point per active voxel at its world-space centre.
#pragma once

#include <string>

#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

// Binary little-endian PLY: float x, y, z and the value (uchar 1 for occupancy, int for int32
// targets, float for float targets), in ascending brick key / voxel offset order. Atomic.
void write_ply(const SparseGrid& grid, const std::string& path, const Metadata& meta);

}  // namespace voxtile
