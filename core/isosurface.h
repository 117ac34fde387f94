// Meshes back out of grids: marching cubes of a scalar field (level sets; occupancy as a field of
// -1 inside, +1 outside) and the boundary faces of occupancy ("cubes").
//
// Marching cubes: a cell is 2x2x2 voxel centres, corner c at offset (c & 1, c >> 1 & 1, c >> 2 & 1)
// from its lowest voxel; a corner is inside when its value is below the iso value. The triangles of
// each of the 256 sign patterns come from one rule rather than a hand-made table (mc_table()): on
// each face of the cell, walked counter-clockwise as seen from outside the cell, every run of
// inside corners is cut off by its own segment, from the crossing where the walk enters it to the
// one where it leaves (so on a face with two diagonal inside corners, the inside corners are kept
// apart); the segments chain into closed loops. A loop is fanned from the first of its vertices
// (from its smallest edge on) whose diagonals all cross the cell's inside, never joining two vertices
// on one face of the cell (the cell beside that face could join them too); a loop with no such vertex
// is fanned around a vertex of its own at its centre. Two cells that share a face cut it with the
// same segments, walked in opposite directions, so the surface of a closed field is closed, every
// edge is shared by exactly two triangles, and the triangles face the outside (increasing values).
#pragma once

#include <cstdint>
#include <vector>

#include "core/isosurface_cell.h"
#include "core/mesh.h"
#include "core/sparse_grid.h"

namespace voxtile {

// The table (built once, thread-safe).
const McTable& mc_table();

// The mesh of a grid. Float grids are fields: marching cubes at `iso` over the cells whose eight
// corners are all active voxels (a narrow band of at least two voxels each side, as `-t sdf`
// writes, holds every cell the surface crosses), vertices interpolated linearly on cell edges,
// normals from the field's gradient (central differences between active voxels, else one-sided).
// Any other grid is occupancy: active voxels are inside, inactive ones and everything outside the
// grid outside; `smooth` = marching cubes of that (vertices at edge midpoints), else the cubes:
// every face between an active and an inactive voxel as two triangles, vertices at voxel corners.
// Vertices are shared (one per cell edge or voxel corner, in ascending edge / corner order) and
// triangles come in ascending cell / voxel order, so the bytes depend on the grid alone.
struct IsoOptions {
  float iso = 0.0f;
  bool smooth = true;  // occupancy: marching cubes (true) or cubes (false)
};
// `inside` (float grids): occupancy that gives inactive voxels their value, -background where it is
// active and +background elsewhere (background: the grid's, else its largest |value|), the way a
// level set's inactive voxels are flood-filled. Then every cell is known and the surface closes
// where the band is missing too: across the holes of an open mesh, where the inside test's sign
// jumps with no triangle near (`voxtile mesh` passes the solid of the same mesh).
Mesh grid_to_mesh(const SparseGrid& grid, const IsoOptions& options, const SparseGrid* inside = nullptr);

// The pieces the GPU path shares: the grid as arrays, and the field (with the background found as
// grid_to_mesh finds it).
IsoGridView iso_view(const SparseGrid& grid);
IsoField iso_field(const SparseGrid& grid, const SparseGrid* inside);
// Sizes a mesh's per-triangle ids and fills them with 0 (one source mesh and material), in parallel.
void single_source_ids(Mesh& m);

}  // namespace voxtile
