// PLY output of a SparseGrid: one point per active voxel at its world-space centre.
#pragma once

#include <string>
#include <vector>

#include "core/sparse_grid.h"
#include "io/metadata.h"

namespace voxtile {

class AtomicFile;

// "ply", the binary little-endian format line and one "comment voxtile_<key> <value>" per entry.
std::string ply_header_begin(const Metadata& meta);
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

// Binary little-endian PLY: float x, y, z and the value (uchar 1 for occupancy, int for int32
// targets, float for float targets), in ascending brick key / voxel offset order. Atomic.
void write_ply(const SparseGrid& grid, const std::string& path, const Metadata& meta);
// Several grids with the same active voxels (the targets of one voxelization) as the properties of
// one point per voxel. Scalar properties are named "value" for a single grid, else by the grid's
// name; float3 values are nx, ny, nz for a single grid or one named "normal", else <name>_x, _y, _z.
void write_ply_grids(const std::vector<const SparseGrid*>& grids, const std::string& path, const Metadata& meta);

}  // namespace voxtile
