// io-internal: the one place where a triangle mesh held in Assimp's types, with its node's transform,
// becomes part of voxtile's Mesh. The Assimp reader (its scene's meshes) and the native glTF reader
// (its primitives) both go through it, so that the same vertices and transforms give the same bits.
#pragma once

#include <assimp/matrix4x4.h>
#include <assimp/types.h>
#include <assimp/vector3.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "io/mesh_reader.h"

namespace voxtile {

// A colour as the readers keep it: 0xRRGGBB, each channel clamped to [0, 1] and rounded.
uint32_t pack_color(float r, float g, float b);

// One mesh's arrays: positions, optional normals, texture coordinates (first set, as Assimp keeps
// them: v already flipped for glTF) and colours, triangles as index triples into them.
struct MeshPiece {
  const aiVector3D* positions = nullptr;
  uint32_t num_vertices = 0;
  const aiVector3D* normals = nullptr;
  const aiVector3D* uvs = nullptr;
  const aiColor4D* colors = nullptr;
  const uint32_t* triangles = nullptr;  // 3 per triangle
  size_t num_triangles = 0;
  uint32_t mesh_index = 0, material_index = 0;
  uint32_t material_color = 0xC8C8C8;  // for vertices without colours
};

class MeshAppender {
 public:
  explicit MeshAppender(MeshLoadResult& out) : m_out(out) {}
  // Appends the piece's vertices, transformed by m (normals by its inverse transpose, normalised;
  // missing ones zero), and its triangles (those with an index past the vertices are counted in
  // dropped_bad_index and left out).
  void append(const MeshPiece& piece, const aiMatrix4x4& m);
  // Drops the per-vertex arrays no piece had (and those `drop_*` names), as the Mesh keeps them.
  void finish(bool drop_normals = false, bool drop_uvs = false);

 private:
  MeshLoadResult& m_out;
  bool m_normals = false, m_uvs = false, m_colors = false;
  std::vector<std::pair<size_t, uint32_t>> m_material_color_runs;  // (first vertex, colour) of each piece, until one has colours
};

}  // namespace voxtile
