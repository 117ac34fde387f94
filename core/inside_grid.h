// Host side of the inside test (core/inside.h): the mesh as the test sees it, the CPU reference of
// the inside grid, and the narrow band of the sdf target.
#pragma once

#include <vector>

#include "core/grid_spec.h"
#include "core/inside.h"
#include "core/mesh.h"
#include "core/sparse_grid.h"
#include "core/targets.h"

namespace voxtile {

// One column axis's view of a mesh: snapped triangles and, for the winding test, the boundary.
struct InsideMesh {
  int axis = 2;                      // column axis w (0 x, 1 y, 2 z); (u, v, w) cyclic
  Int3 dims{};                       // grid size along u, v, w
  InsideScale scale{};               // voxel size along u, v, w
  std::vector<int64_t> u, v;         // 3 per triangle: snapped coordinates across the column
  std::vector<float> w;              // 3 per triangle: grid coordinate along the column
  std::vector<InsideEdge> boundary;  // directed edges with a non-zero net count, in welded-edge order
};
// `g` = to_grid_space(mesh, spec). The boundary only when `boundary` is set; the snapped
// triangles unless `triangles` is false (the GPU snaps them itself).
InsideMesh prepare_inside(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, int axis, bool boundary,
                          bool triangles = true);

// Voxels per axis whose centres lie within the mesh's grid-space bounds: [lo, hi).
struct InsideRange {
  int32_t lo[3], hi[3];
};
InsideRange inside_range(const Mesh& mesh, const GridSpec& spec);


// Voxel centres inside along m's axis (parity or winding), for the columns and voxels of `range`
// (nothing outside the mesh's bounds can be inside).
SparseGrid inside_grid_cpu(const InsideMesh& m, InsideMethod method, const InsideRange& range);
// The CPU reference of Voxelizer's inside grid: occupancy of the voxel centres inside the mesh.
SparseGrid inside_cpu(const Mesh& mesh, const GridSpec& spec, InsideMethod method);
// Masks of voxels set in at least `at_least` (1..3) of up to three grids (sorted merge).
SparseGrid combine_masks(const std::vector<const SparseGrid*>& grids, int at_least);

BandSetup band_setup(const GridSpec& spec, int band);
// A triangle's band box: its bounds grown by the reach, plus a margin, in grid space. A voxel whose
// centre is outside it is farther from the triangle than the width.
struct BandBox {
  float lo[3], hi[3];
};
VT_HD inline BandBox band_box(const Vec3f t[3], const BandSetup& b) {
  const float r[3] = {b.reach.x * 1.001f + 1e-3f, b.reach.y * 1.001f + 1e-3f, b.reach.z * 1.001f + 1e-3f};
  const float mn[3] = {fminf(fminf(t[0].x, t[1].x), t[2].x), fminf(fminf(t[0].y, t[1].y), t[2].y),
                       fminf(fminf(t[0].z, t[1].z), t[2].z)};
  const float mx[3] = {fmaxf(fmaxf(t[0].x, t[1].x), t[2].x), fmaxf(fmaxf(t[0].y, t[1].y), t[2].y),
                       fmaxf(fmaxf(t[0].z, t[1].z), t[2].z)};
  BandBox x;
  for (int a = 0; a < 3; ++a) {
    x.lo[a] = mn[a] - r[a];
    x.hi[a] = mx[a] + r[a];
  }
  return x;
}
// Whether voxel index v's centre along `axis` lies within the band box (the box holds a centre
// when it holds it along all three axes).
VT_HD inline bool band_box_holds(const BandBox& x, int axis, int32_t v) {
  const float c = static_cast<float>(v) + 0.5f;
  return !(c < x.lo[axis] || c > x.hi[axis]);
}
// Distance to the nearest triangle, min-blended over the triangles near a voxel (the same value
// whatever their order).
// Triangles whose band box misses the voxel centre are farther than the width: skipped, which
// leaves the minimum unchanged since it starts at the width.
VT_HD inline float band_min(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const BandSetup& b, float best) {
  const BandBox x = band_box(t, b);
  if (!band_box_holds(x, 0, i) || !band_box_holds(x, 1, j) || !band_box_holds(x, 2, k)) return best;
  const float d = voxel_distance(t, i, j, k, b.vs);
  return d < best ? d : best;
}
// Unsigned distance (world) of every voxel centre nearer than the band width to a triangle.
SparseGrid band_distance_cpu(const Mesh& mesh, const GridSpec& spec, int band);
// Negates the band's values at the voxels set in `inside`.
void apply_sign(SparseGrid& band, const SparseGrid& inside);

}  // namespace voxtile
