// Mesh: an indexed triangle mesh in world space, as loaded from any input format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grid_spec.h"
#include "core/sparse_grid.h"
#include "core/vec.h"

namespace voxtile {

// An RGB8 image, rows from the top (texel (x, y) at 3 * (y * width + x)).
struct Texture {
  int32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
  bool empty() const { return width <= 0 || height <= 0; }
  // Nearest texel at texture coordinates (u, v), OpenGL convention (v up), repeating: 0xRRGGBB.
  uint32_t lookup(float u, float v) const;
};

// The large per-vertex and per-triangle arrays are ValueArrays: readers size them and then write
// every element (in parallel), with no zero fill first.
struct Mesh {
  ValueArray<Vec3f> positions;        // world space, after node transforms
  ValueArray<uint32_t> indices;       // 3 per triangle, each < positions.size()
  ValueArray<uint32_t> mesh_ids;      // per triangle: index of the source mesh
  ValueArray<uint32_t> material_ids;  // per triangle: material index of the source mesh
  ValueArray<Vec3f> normals;           // per vertex (world space, unit), or empty if the file has none;
                                       // (0,0,0) for vertices of source meshes without normals
  std::vector<Vec2f> uvs;              // per vertex (first texture channel), or empty; (0,0) where missing
  std::vector<uint32_t> colors;        // per vertex 0xRRGGBB (first colour channel), or empty; material
                                       // colour for vertices of source meshes without colours
  std::vector<uint32_t> material_colors;  // per material: diffuse colour 0xRRGGBB, or empty
  std::vector<Texture> material_textures;  // per material: base colour / diffuse texture (empty
                                           // Texture where none), or empty when no material has one
  size_t num_source_meshes = 0;
  size_t num_materials = 0;
  size_t dropped_degenerate = 0;  // zero-area triangles removed by sanitize()
  size_t dropped_nonfinite = 0;   // triangles with NaN/Inf coordinates removed by sanitize()

  size_t num_triangles() const { return indices.size() / 3; }
  Vec3f vertex(size_t tri, int corner) const { return positions[indices[3 * tri + corner]]; }
  Bounds bounds() const;  // of the vertices referenced by triangles
  // Removes triangles with a non-finite coordinate or zero area (computed in double), counting
  // each kind. Triangles keep their order and per-triangle ids. An index past the vertices (the
  // readers drop such faces, so a reader's bug) is Error(kInternal), never a read out of bounds.
  void sanitize();
};

// How far apart the mesh lists neighbouring triangles: the world distances between the first
// vertices of consecutive triangles, over up to 64 windows of 64 pairs spread evenly over the mesh
// (every pair of a smaller mesh; none for fewer than two triangles), ascending. A file listed along
// its surface (scanned, subdivided or generated meshes) has most of them within a few triangles'
// size; one with its triangles shuffled has them spread over the mesh's extent.
std::vector<float> neighbour_distances(const Mesh& mesh);
// The fraction of `sorted` (ascending, as neighbour_distances) below d; 0 when empty.
double fraction_below(const std::vector<float>& sorted, double d);
// A mesh lists its triangles in a local order where at least this fraction of its neighbour
// distances lie below a tile's extent (the GPU then scatters its pairs to their tiles:
// kernels/voxelize/state.cuh kScatterMaxTriangles). Listed along the surface: 0.45-0.47 for the
// Stanford bunny's scan order and a subdivision of it listed quarter by quarter, 0.97-1.0 for
// subdivided meshes and tubes; shuffled: 0.001-0.003 (at 1024^3: tiles of 1/32 of the extent).
constexpr double kScatterLocalOrder = 0.2;

}  // namespace voxtile
