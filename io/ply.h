// PLY in one place: the header parser of every PLY voxtile reads (point clouds, voxel centres,
// recorded metadata), the header writer of every PLY it writes (grids, point clouds, meshes), and the
// voxel-centre writer of a SparseGrid. (Meshes are read by Assimp.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

class AtomicFile;

enum class PlyType { kI8, kU8, kI16, kU16, kI32, kU32, kF32, kF64 };
int ply_type_size(PlyType t);
bool parse_ply_type(const std::string& name, PlyType& t);  // char, uchar, ..., float64
// One value of type t at p, as double (big: big-endian bytes).
double ply_load_binary(const char* p, PlyType t, bool big);

struct PlyProperty {
  std::string name;
  PlyType type = PlyType::kF32;
  bool list = false;
  PlyType count_type = PlyType::kU8;
};
struct PlyElement {
  std::string name;
  uint64_t count = 0;
  std::vector<PlyProperty> props;
};
struct PlyHeader {
  enum Format { kAscii, kLittle, kBig } format = kAscii;
  std::vector<PlyElement> elements;
  std::vector<std::string> comments;  // the text after "comment "
  size_t data_start = 0;              // first byte after end_header
};
// Parses the header at the start of `bytes`; errors name `path` and the line (Error(kInput)).
PlyHeader parse_ply_header(const std::string& bytes, const std::string& path);
// The header of the file at `path` (reads at most 1 MB).
PlyHeader read_ply_header(const std::string& path);

// A header to write: binary little-endian, "comment <c>" lines, elements with their properties
// ("float x", "list uchar int vertex_indices").
struct PlyElementSpec {
  std::string name;
  uint64_t count = 0;
  std::vector<std::string> properties;
};
std::string ply_header(const std::vector<std::string>& comments, const std::vector<PlyElementSpec>& elements);
// "voxtile_<key> <value>" per metadata entry (newlines folded to spaces).
std::vector<std::string> ply_meta_comments(const Metadata& meta);
// Buffers binary records and writes them to `out` in 1 MB pieces.
class PlyBody {
 public:
  explicit PlyBody(AtomicFile& out) : m_out(out) { m_buf.reserve(1 << 20); }
  void put(const void* p, size_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    m_buf.insert(m_buf.end(), c, c + n);
  }
  // Writes the buffer once it holds 1 MB (call after each record), or always with `all`.
  void flush(bool all = false);

 private:
  AtomicFile& m_out;
  std::vector<unsigned char> m_buf;
};

// A colour grid's channel (a mean in [0, 1]) as the 0-255 value point outputs write (.ply red green
// blue, .xyz r g b).
uint8_t color_channel_8bit(float unit);

// Binary little-endian PLY: float x, y, z and the value (uchar 1 for occupancy, int for int32
// targets, float for float targets), in ascending brick key / voxel offset order. Atomic.
void write_ply(const SparseGrid& grid, const std::string& path, const Metadata& meta);
// Several grids with the same active voxels (the targets of one voxelization) as the properties of
// one point per voxel. Scalar properties are named "value" for a single grid, else by the grid's
// name; float3 values are nx, ny, nz for a single grid or one named "normal", else <name>_x, _y, _z.
void write_ply_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta);

}  // namespace voxtile
