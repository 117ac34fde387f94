// Grid output dispatch by file extension or --format.
#pragma once

#include <string>
#include <vector>

#include "core/sparse_grid.h"
#include "io/dense.h"
#include "io/metadata.h"
#include "io/vdb.h"

namespace voxtile {

enum class OutputFormat { kVdb, kPly, kRaw, kNpy, kBinvox, kVox, kLas, kXyz };

// "vdb", "ply", "raw", "npy", "binvox", "vox", "las", "xyz".
const char* format_name(OutputFormat f);
// Every format's name, in the order the help and messages list them.
std::vector<std::string> format_names();
// Whether files of the format hold one grid only (every format but .vdb, .ply, .las and .xyz).
bool holds_one_grid(OutputFormat f);
// Whether the format's bytes are binary (every format but .xyz text).
inline bool binary_format(OutputFormat f) { return f != OutputFormat::kXyz; }
// From a --format value; throws Error(kUsage) on an unknown one.
OutputFormat parse_format(const std::string& name);
// From the extension of `path` (case-insensitive); throws Error(kUsage) naming the path if unknown.
OutputFormat format_from_path(const std::string& path);

struct WriteOptions {
  Metadata meta;
  DenseOptions dense;
  VdbWriteOptions vdb{};  // .vdb: BoolGrids for binary grids, half floats (io/vdb.h)
};

void write_grid(const SparseGrid& grid, const std::string& path, OutputFormat format, const WriteOptions& options);
// Several grids of one voxelization (one per target): all in one .vdb (one grid each) or one .ply
// (one property each); dense formats hold one grid, so more is a usage error.
// The "job" metadata recorded in an existing output (.vdb metadata, .ply header comment, .raw JSON
// sidecar), or "" when there is none (.npy outputs never record it) or the file is unreadable.
std::string recorded_metadata(const std::string& path, OutputFormat format, const std::string& key);

void write_grids(const std::vector<SparseGrid>& grids, const std::string& path, OutputFormat format,
                 const WriteOptions& options);

// Throws the error write_grids would give, where the grid's spec and value type tell it before any
// voxel is made: dense outputs (.raw, .npy, .binvox) over the dense limit, .binvox of voxels that are
// not cubic. So that a grid too large for its format fails at once, not after it is voxelized.
void check_grid_output(const GridSpec& spec, ValueType type, const std::string& path, OutputFormat format,
                       const WriteOptions& options);

}  // namespace voxtile
