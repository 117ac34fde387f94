// Mesh output: binary little-endian PLY (vertices and triangles).
#pragma once

#include <string>

#include "core/mesh.h"

namespace voxtile {

// float x, y, z per vertex; uchar-counted int vertex_indices per face. Atomic.
void write_mesh_ply(const Mesh& mesh, const std::string& path);

}  // namespace voxtile
