// OpenVDB output and input of SparseGrid.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

// Writes `grid` as one OpenVDB grid: occupancy as a MaskGrid, int32 values as an Int32Grid, float
// values as a FloatGrid, float3 values as a Vec3SGrid. Leaf nodes are built directly from the bricks. The transform maps index
// (i,j,k) to the voxel centre origin + (i+0.5, j+0.5, k+0.5) * voxel_size, so the result overlays
// the mesh in Houdini or Blender. `meta` goes into the grid's metadata with a "voxtile_" prefix.
// Atomic (see AtomicFile). Throws Error(kOutput).
void write_vdb(const SparseGrid& grid, const std::string& path, const Metadata& meta);
// Several grids (distinct names) in one file, in the order given. Vector grids are Vec3SGrids.
// Files of non-empty grids are written straight from the bricks (io/vdb_direct.h), in the bytes
// OpenVDB's io::File::write gives (several times faster, without loading OpenVDB); the others
// (empty grids, grids over more than 1024 nodes of 4096^3) through trees OpenVDB
// builds, serialized with the leaves' buffers in parallel (the same bytes again) or, for grids
// OpenVDB would rename, by io::File::write. The tests compare them: kDirect takes the first writer
// that can (throws Error(kInternal) for names OpenVDB would change), kTree the trees' writer,
// kOpenVdb io::File::write.
enum class VdbWriter { kAuto, kDirect, kTree, kOpenVdb };
struct VdbWriteOptions {
  // Binary grids as BoolGrids (value true where active) instead of MaskGrids, for readers that
  // cannot read MaskGrids (Debian's pyopenvdb 10).
  bool bool_grids = false;
  // Float and vector values stored as 16-bit half floats (OpenVDB's saveFloatAsHalf: the grid
  // type gets the suffix "_HalfFloat", every reader of OpenVDB files turns them back into floats),
  // rounded to the nearest half: half the bytes of a level set or a distance grid.
  bool half = false;
};
void write_vdb_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta,
                     VdbWriter writer = VdbWriter::kAuto, const VdbWriteOptions& options = {});

// Reads one grid (the first of a supported type, or the one named) back into a SparseGrid.
// Grid dims come from voxtile's metadata when present, else from the active bounding box.
// Files of the grids voxtile writes are read without OpenVDB (io/vdb_direct.h), others through it.
// Throws Error(kInput) naming the file.
SparseGrid read_vdb(const std::string& path, const std::string& grid_name = "");
// The same through OpenVDB's reader, whatever the file (the tests compare the two readers).
SparseGrid read_vdb_openvdb(const std::string& path, const std::string& grid_name = "");

// The "voxtile_<key>" string metadata of the file's first grid that has it, or "" (also when the
// file is missing or unreadable).
std::string read_vdb_meta(const std::string& path, const std::string& key);
std::string read_vdb_meta_openvdb(const std::string& path, const std::string& key);  // (OpenVDB's, for the tests)

// The serialized transform (map type and values) written for `spec`: a UniformScaleTranslateMap, or
// a ScaleTranslateMap for non-cubic voxels, for every positive finite voxel size from 1e-150 to
// 1e150 (OpenVDB's own constructors refuse voxels under 1.44e-5). Throws Error(kUsage) outside.
std::string vdb_transform_bytes(const GridSpec& spec);

// One line per grid: name, type, active voxels, index bounding box, voxel size, origin.
// Files of the grids voxtile writes are described without OpenVDB (io/vdb_direct.h), others through it.
std::vector<std::string> describe_vdb(const std::string& path);
std::vector<std::string> describe_vdb_openvdb(const std::string& path);  // (OpenVDB's, for the tests)

}  // namespace voxtile
