// Point cloud files: reading .ply (ascii and binary vertex elements), .xyz, .pts and .las (io/las.h);
// writing .ply.
// CSG script files.
#pragma once

#include <string>

#include "core/points.h"
#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

// Reads and parses a .csg script (core/csg.h); Error(kInput) naming the file when it is missing,
// empty, unreadable, binary or malformed.
CsgScript load_csg(const std::string& path);

// Reads positions and, when present, normals (nx ny nz) and colours (red green blue, uchar or
// float 0..1). Points with NaN/Inf coordinates are dropped and counted in dropped_nonfinite.
// .xyz: one point per line, whitespace- or comma-separated: x y z | x y z i | x y z r g b (integers
// 0-255) or x y z nx ny nz | x y z r g b a | x y z r g b nx ny nz. .pts (Leica): an optional count
// line, then x y z [intensity [r g b]] or x y z r g b. Throws Error(kInput) naming the file (and line) for
// missing, empty, truncated or malformed files, and when no usable point remains. .las/.laz: read_las.
PointCloud read_point_cloud(const std::string& path);

// Whether `path` is a point-cloud file rather than a mesh: .xyz, .pts, .las, .laz, and .ply files whose
// header declares no faces (or zero).
bool is_point_cloud_file(const std::string& path);

// Binary little-endian PLY: float x y z, then whatever the cloud has of float nx ny nz, uchar red
// green blue, uint id, uint material. Atomic.
void write_point_cloud_ply(const PointCloud& points, const std::string& path, const Metadata& meta);
// .ply (write_point_cloud_ply) or .las (write_las_points), from the extension of `path` unless
// `format` ("ply", "las") names it; Error(kUsage) for any other.
void write_point_cloud(const PointCloud& points, const std::string& path, const std::string& format, const Metadata& meta);

// .xyz text, one point per line: x y z, then r g b (0-255) where the cloud has colours, then nx ny
// nz where it has normals: layouts read_point_cloud reads back (a 6-column file whose last three
// columns are all integers 0-255 is read as colours). Ids and materials are not written. Numbers are
// the shortest that read back as the same float. Atomic.
void write_point_cloud_xyz(const PointCloud& points, const std::string& path);
// The voxel centres of grids of one voxel set (float, as .ply), in .xyz's layouts: an occupancy grid
// adds no column, a "color" grid r g b (its mean rounded to 0-255, as .ply's red green blue), a
// "normal" grid nx ny nz; any other grid is Error(kUsage) naming it and the formats that hold it.
void write_xyz_grids(const std::vector<const SparseGrid*>& grids, const std::string& path);

}  // namespace voxtile
