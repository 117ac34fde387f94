// .binvox (version 1, Patrick Min's binvox; what ShapeNet-era code and binvox users load): a cubic
// occupancy grid, run-length encoded, with the translate and scale that place it in the model.
#pragma once

#include <string>

#include "core/sparse_grid.h"
#include "io/dense.h"

namespace voxtile {

// Occupancy of `g` (every active voxel is 1; values are not kept). binvox grids are cubic: a grid
// that is not (e.g. 256x254x199) is padded to its largest dimension D with empty voxels on the
// high side, which keeps every voxel in place; voxels that are not cubes are refused
// (Error(kUsage)). The header maps voxel (i, j, k) to the model as binvox does: the voxel's centre
// is translate + (i + 0.5) / D * scale, so translate = the grid's origin (the corner of voxel 0)
// and scale = D x voxel size. Readers expand D^3 bytes, so D^3 over the dense limit is refused
// (Error(kResource), as for .npy) unless forced. Voxel order: x slowest, then z, y fastest; runs
// of up to 255. Atomic.
void write_binvox(const SparseGrid& g, const std::string& path, const DenseOptions& opt);
// What write_binvox refuses that the grid's spec tells: voxels that are not cubic, D^3 over the limit.
void check_binvox_grid(const GridSpec& spec, const std::string& path, const DenseOptions& opt);

// A .binvox file as a binary grid (dims D^3, voxel size scale / D, origin translate). Throws
// Error(kInput) naming the file and the problem (bad header, runs past or short of D^3 voxels).
SparseGrid read_binvox(const std::string& path);

}  // namespace voxtile
