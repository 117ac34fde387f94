// MagicaVoxel .vox (version 150, the scene-graph format MagicaVoxel 0.99+ and its readers load).
#pragma once

#include <string>

#include "core/sparse_grid.h"

namespace voxtile {

// The grid's active voxels as MagicaVoxel models of at most 256^3 voxels: the grid is cut into
// 256^3 blocks and every block holding a voxel becomes one model, placed by a translation node
// (nTRN "_t" = the block's offset plus half its size, rounded down: MagicaVoxel's pivot is a model's
// centre) under one group, so the scene shows the whole grid. Axes are kept (x, y, z; MagicaVoxel
// draws z up). Colour index per voxel: 1 for occupancy grids; for int32 grids (count, id) the value
// clamped to 1..255; 1 for float grids. The palette: index 1 light grey, 2..255 a ramp from blue to
// yellow (so counts show as colours). .vox keeps no voxel size or origin. Grids past 65536 models
// are refused (Error(kUsage)). Atomic.
void write_vox(const SparseGrid& g, const std::string& path);

// Every model of a .vox file placed by its scene graph's translations (or at the origin without
// one), as one occupancy grid shifted so that the lowest voxel is at 0; voxel size 1, origin 0. Throws Error(kInput)
// naming the file and the problem (truncated chunks, counts past the file, voxels outside their model, rotated models).
SparseGrid read_vox(const std::string& path);

}  // namespace voxtile
