// ASPRS LAS point clouds (uncompressed): reading versions 1.0-1.4, point data record formats 0-10;
// writing LAS 1.4 (formats 6 and 7) from point clouds and from voxel grids (one point per active
// voxel). Written from the ASPRS LAS 1.4 R15 specification; no LAS library is packaged for Debian 12.
#pragma once

#include <string>
#include <vector>

#include "core/points.h"
#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

// Positions in double (`positions64`: X * scale + offset, so UTM-size coordinates keep their
// millimetres) and rounded to float; RGB where the format has it (16-bit values scaled to 8 bits,
// or taken as they are when no channel of the file exceeds 255, as many writers store 8-bit
// colours); intensity and classification when any point has a non-zero one (formats 0-5: the low 5
// bits of the classification byte). Throws Error(kInput) naming the file for: a file that is not
// LAS, a LAZ (compressed) file (with how to decompress it), an unknown version or point format, a
// record shorter than its format, a header whose point count the file cannot hold (checked before
// anything is allocated), scale factors that are zero or not finite.
PointCloud read_las(const std::string& path);

// Whether the file starts with "LASF" and its point format byte marks LASzip compression (the
// two high bits), i.e. a .laz whatever its name.
bool is_laz_file(const std::string& path);

// LAS 1.4, point format 6 (7 with colours): positions quantized to a power-of-ten scale no coarser
// than float's precision over the cloud's extent (offset: the minimum corner); colours scaled to 16
// bits (v * 257); normals, ids and materials as extra bytes (normal_x/y/z float, id and material
// uint32). Atomic.
void write_las_points(const PointCloud& points, const std::string& path, const Metadata& meta);

// One point per active voxel at its centre (in double, quantized to a power-of-ten scale of at most
// a thousandth of the voxel, offset: the grid origin), in the grids' voxel order. Per grid:
// "color" -> RGB (format 7, 0..1 scaled to 16 bits), "intensity" -> intensity (rounded, clamped
// to 0..65535), "class" -> classification (clamped to 0..255), "count" -> extra bytes "count"
// (uint32) and, without an intensity grid, the intensity (clamped); any other value grid -> extra
// bytes named after it (int32, float, or three floats _x _y _z). Every grid must have the same
// active voxels (Error(kInternal) otherwise). Metadata goes into a "voxtile" VLR (JSON). Atomic.
void write_las_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta);

// The value of `key` in the voxtile metadata VLR of a LAS file written by voxtile; "" when absent.
std::string read_las_metadata(const std::string& path, const std::string& key);

}  // namespace voxtile
