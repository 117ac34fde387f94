// Mesh output, for `voxtile generate` and benchmarks: binary or ASCII PLY and STL, OBJ, binary glTF.
#pragma once

#include <string>

#include "core/mesh.h"

namespace voxtile {

// float x, y, z per vertex; uchar-counted int vertex_indices per face. Atomic.
void write_mesh_ply(const Mesh& mesh, const std::string& path);
// By extension: .ply (binary little-endian, or ASCII), .stl (binary, or ASCII), .obj (v and f
// lines), .glb (one mesh: float positions, uint32 indices). Text numbers are the shortest decimal
// that reads back to the same float. Atomic; throws Error(kUsage) for another extension.
void write_mesh(const Mesh& mesh, const std::string& path, bool ascii = false);

}  // namespace voxtile
