// Mesh input through Assimp: every format Assimp reads, triangulated, node transforms applied.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.h"

namespace voxtile {

struct MeshLoadResult {
  Mesh mesh;
  std::vector<std::string> warnings;  // one line each, without the file name
  std::string format;                 // Assimp's name for the importer, e.g. "Stanford Polygon Library"
  size_t dropped_bad_index = 0;       // faces whose indices point past the vertex array
  size_t non_triangle_primitives = 0; // points and lines, ignored
  size_t points = 0;                  // vertices of point-only meshes (point clouds)
};

// Loads every triangle of every mesh instance in the scene (node transforms applied), keeping the
// source mesh and material index per triangle. Degenerate and NaN/Inf triangles are dropped with
// a warning and a count. Throws Error(kInput) with "<path>: <problem>" when the file is missing,
// empty, unreadable, or has no usable triangle.
// With `textures`, each material's base colour / diffuse texture is decoded too (Mesh::
// material_textures; an unreadable texture is a warning).
MeshLoadResult load_mesh(const std::string& path, bool textures = false);

// Like load_mesh but accepts files without triangles (used by `voxtile info`).
MeshLoadResult inspect_mesh(const std::string& path);

// Throws Error(kInput) if `path` is missing, not a regular file, unreadable or empty.
void check_input_file(const std::string& path);

}  // namespace voxtile
