// Mesh output, for `voxtile generate` and benchmarks: binary or ASCII PLY and STL, OBJ, OFF, binary glTF, 3MF.
#pragma once

#include <string>

#include "core/mesh.h"

namespace voxtile {

// float x, y, z per vertex; uchar-counted int vertex_indices per face. Atomic.
void write_mesh_ply(const Mesh& mesh, const std::string& path);
// The mesh format of `format` ("ply", "stl", "obj", "off", "glb" or "3mf", any case) or, when it is empty, of the
// extension of `path`. Throws Error(kUsage) naming the path for another one (and for standard output,
// "-", without a format).
std::string mesh_format(const std::string& path, const std::string& format = "");
// Whether a mesh of that format is written as binary bytes (not .obj or .off, nor ASCII .ply / .stl).
inline bool binary_mesh(const std::string& format, bool ascii) {
  return format == "3mf" || !(ascii || format == "obj" || format == "off");
}
// In mesh_format(path, format): .ply (binary little-endian, or ASCII), .stl (binary, or ASCII), .obj
// (v and f lines), .off (OFF, or NOFF with normals), .glb (one mesh: float positions, uint32 indices),
// .3mf (one object, deflated). Text numbers are the shortest decimal that reads back to the same
// float. Atomic.
void write_mesh(const Mesh& mesh, const std::string& path, bool ascii = false, const std::string& format = "");

}  // namespace voxtile
