// .vdb files written by voxtile itself, without OpenVDB: `voxtile voxelize` then never loads the
// OpenVDB module (io/vdb_module.h) to write, whose dlopen alone takes 55-75 ms (libopenvdb's
// relocations and static initialisation), more than writing the file. The bytes are those OpenVDB
// 10's io::File::write gives for the same grids (tested on whole files): binary grids as MaskGrids,
// solids' interior tiles included; counts as Int32Grids, floats as FloatGrids, the sdf as a level
// set (inactive values and tiles flood-filled as tools::signedFloodFill does), vectors as
// Vec3SGrids, values compressed per leaf as OpenVDB does (mask compression, then Blosc). The
// format's constants below are checked against OpenVDB's own at compile time in the module
// (io/vdb.cpp), which also uses the shared pieces (file header, seed, transform).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/sparse_grid.h"
#include "io/metadata.h"
#include "io/vdb.h"

namespace voxtile {

namespace vdb_format {
constexpr int64_t kMagic = 0x56444220;  // OPENVDB_MAGIC
constexpr uint32_t kFileVersion = 224, kLibraryMajor = 10, kLibraryMinor = 0;
// io::Archive::DEFAULT_COMPRESSION_FLAGS: COMPRESS_BLOSC | COMPRESS_ACTIVE_MASK, and its name
constexpr uint32_t kCompression = 6;
constexpr const char* kCompressionName = "blosc + active values";
// Grid::gridType() of the grids written
constexpr const char* kMaskTreeType = "Tree_mask_5_4_3";
constexpr const char* kBoolTreeType = "Tree_bool_5_4_3";
constexpr const char* kInt32TreeType = "Tree_int32_5_4_3";
constexpr const char* kFloatTreeType = "Tree_float_5_4_3";
constexpr const char* kVec3sTreeType = "Tree_vec3s_5_4_3";
// tools::memUsage() of a tree: the tree and root node, then per upper (32^3 children), lower (16^3
// children) and leaf node (LeafNode::memUsage: the node and its values).
struct NodeBytes {
  uint64_t tree, upper, lower, leaf;
};
constexpr NodeBytes kMaskNodeBytes{1232 + 72, 270348, 33804, 80};
constexpr NodeBytes kBoolNodeBytes{1304, 270348, 33804, 144};
constexpr NodeBytes kScalarNodeBytes{1304, 270348, 33804, 96 + 512 * 4};  // int32, float
constexpr NodeBytes kVec3sNodeBytes{1320, 532492, 66572, 96 + 512 * 12};
// io::writeCompressedValues' mask-compression codes (io/Compression.h)
enum MaskCode : int8_t {
  kNoMaskOrInactiveVals = 0,
  kNoMaskAndMinusBg = 1,
  kNoMaskAndOneInactiveVal = 2,
  kMaskAndNoInactiveVals = 3,
  kMaskAndOneInactiveVal = 4,
  kMaskAndTwoInactiveVals = 5,
  kNoMaskAndAllVals = 6,
};
// compression::bloscCompress leaves buffers of at most this many bytes uncompressed and pads those
// shorter than kBloscPadBytes with zeros (points/StreamCompression.h)
constexpr int kBloscMinimumBytes = 48, kBloscPadBytes = 128;
}  // namespace vdb_format

// The file's start, as io::File::write writes it: magic, file and library versions, "has grid
// offsets", a UUID derived from `seed` (OpenVDB writes a random one; voxtile's files are the same
// bytes for the same content), no file metadata, the grid count.
std::string vdb_file_header(uint64_t seed, size_t grids);
// The UUID's text (36 characters).
std::string vdb_deterministic_uuid(uint64_t seed);
// What a file's UUID is derived from: each grid's content (what SparseGrid::checksum covers, so a
// GPU grid and a CPU grid that are equal give the same file), names and the metadata.
uint64_t vdb_file_seed(const std::vector<const SparseGrid*>& grids, const Metadata& meta);

// Names OpenVDB keeps as they are: distinct and non-empty (else it adds suffixes).
bool vdb_distinct_names(const std::vector<const SparseGrid*>& grids);
// Whether write_direct_vdb writes these grids as OpenVDB would: non-empty grids (binary solids'
// interior runs included, as active tiles, where no 4096^3 node is all interior) over at most 1024
// nodes of 4096^3 voxels, with distinct non-empty names, and metadata whose keys do not collide
// with the grid's own ("dims", "origin").
bool direct_vdb_writable(const std::vector<const SparseGrid*>& grids, const Metadata& meta);
// Writes them (atomic, see AtomicFile) and returns true; returns false, writing
// nothing, where direct_vdb_writable says no. Throws Error(kOutput), or Error(kUsage) for a voxel
// size no .vdb transform holds. options: binary grids as BoolGrids (true where active), float and
// vector values as half floats (io/vdb.h).
bool write_direct_vdb(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta,
                      const VdbWriteOptions& options = {});

// A float as OpenVDB's math::half(float) stores it (IEEE binary16, rounded to nearest, ties to even;
// beyond its range infinity), and the float a half's bits hold (exact).
uint16_t half_bits(float x);
float half_to_float(uint16_t h);

// What both .vdb readers (this one and OpenVDB's in io/vdb.cpp) do with what they read:
// an active tile of a binary grid (the voxels from `lo` to before `end`, multiples of 8, lo >= 0)
// appended as runs of full bricks inside the grid's dims and bricks the dims cut as masks;
// then the bricks (keys, masks, and values: the active voxels', brick by brick in the bricks' given
// order) and runs in ascending key order, the values indexed (SparseGrid::index_values).
void append_active_tile(SparseGrid& g, const Int3& lo, const Int3& end);
void sort_bricks_by_key(SparseGrid& g);

// Reads the grid named `name` (the first when empty) or, with `all`, every grid of a .vdb file into
// `out`, as OpenVDB's reader would (io/vdb.cpp read_vdb, read_vdb_grids: the same SparseGrids), for
// files of the grids write_direct_vdb writes, from any writer of the current format (224): MaskGrids
// and BoolGrids (their active voxels, whatever their values), Int32Grids, FloatGrids and Vec3SGrids,
// Blosc or no compression. Returns false, reading nothing,
// for anything else (other grid or map types, half floats, ZIP, active tiles in grids of values, a
// missing or inconsistent file), which OpenVDB's reader then takes or names the problem of.
bool read_direct_vdb(const std::string& path, const std::string& name, bool all, std::vector<SparseGrid>* out);

// What `voxtile info` prints of one grid of a .vdb file (describe_vdb): its name, type ("mask" or
// OpenVDB's value type name), active voxels and their index bounding box, voxel size, the index
// origin's corner (-0.5, -0.5, -0.5) in world space, and voxtile's dims metadata where present.
struct VdbGridSummary {
  std::string name, type;
  bool half = false;  // values stored as half floats (saveFloatAsHalf): " storage=half" after the type
  uint64_t active_voxels = 0;
  bool has_bbox = false;
  Int3 bbox_lo{0, 0, 0}, bbox_hi{0, 0, 0};
  double voxel_size[3] = {0, 0, 0}, origin[3] = {0, 0, 0};
  bool has_dims = false;
  Int3 dims{0, 0, 0};
};
std::string describe_vdb_grid(const VdbGridSummary& g);
// describe_vdb's lines for the files read_direct_vdb reads (their topology only, no values
// decompressed); false for any other file, which OpenVDB then describes.
bool describe_direct_vdb(const std::string& path, std::vector<std::string>* lines);
// read_vdb_meta for the files read_direct_vdb reads (the grids' metadata only): the string
// "voxtile_<key>" of the first grid that has it, or ""; false for any other file.
bool read_direct_vdb_meta(const std::string& path, const std::string& key, std::string* value);

}  // namespace voxtile
