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
// A lower bound on a triangle's distance from the voxel centres, to skip the voxels (and the bricks)
// of its band box that lie beyond its band: the distance to the triangle is at least the distance to
// its plane and to the outer side of each edge's line in the plane, four linear functions of the
// voxel's position, max(|f0|, f1, f2, f3). It skips only voxels whose voxel_distance is at least the
// width, so band_min's minimum, which starts at the width, is unchanged bit for bit: the functions'
// directions are taken in double from the triangle as given (then kept in float, a relative change
// of 2^-24), their values at a brick in double, and `limit` adds to the width a margin over the
// float distance's error: its rounding of the vertices and the sums (relative to the triangle's size
// and the voxel's distance, 2^-12) and, where voxel_distance takes the plane's distance, its float
// normal's error in direction (about 5 units of roundoff over the sine of the triangle's angle at
// vertex 0; 64 are allowed). Triangles with that sine under 2^-16 (and degenerate ones) skip
// nothing, nor do triangles under twice the width across (their band box is mostly band: the tests
// would cost more than they save). The GPU's band uses it (kernels/solid/solid.cu); the CPU's was no
// faster with it. tests/test_inside.cpp checks the bound voxel by voxel on slivers, needles, large and far
// triangles.
struct BandBound {
  float a[4][3];  // change of f_k per voxel along x, y, z (world units); f_k is 0 at vertex k (f0: vertex 0)
  float limit;    // skip where max(|f0|, f1, f2, f3) > limit (infinity: never)
  VT_HD bool skips() const { return limit < INFINITY; }
};
VT_HD inline BandBound band_bound(const Vec3f t[3], const BandSetup& bs) {
  BandBound c;
  const double vs[3] = {bs.vs.x, bs.vs.y, bs.vs.z};
  double p[3][3];  // the vertices, world units
  for (int q = 0; q < 3; ++q) {
    const float g[3] = {t[q].x, t[q].y, t[q].z};
    for (int a = 0; a < 3; ++a) p[q][a] = static_cast<double>(g[a]) * vs[a];
  }
  double e[3][3], len[3];
  for (int k = 0; k < 3; ++k) {
    const int k1 = k == 2 ? 0 : k + 1;
    for (int a = 0; a < 3; ++a) e[k][a] = p[k1][a] - p[k][a];
    len[k] = sqrt(e[k][0] * e[k][0] + e[k][1] * e[k][1] + e[k][2] * e[k][2]);
  }
  const double emax = len[0] > len[1] ? (len[0] > len[2] ? len[0] : len[2]) : (len[1] > len[2] ? len[1] : len[2]);
  c.limit = INFINITY;
  for (int k = 0; k < 4; ++k)
    for (int a = 0; a < 3; ++a) c.a[k][a] = 0.0f;
  // A triangle under twice the width across keeps most of its band box within its band: not worth the
  // bound's tests (the 100k dragon's band at 128^3 took 136 ms on 2 cores without them, 185 with them).
  if (!(emax >= 2.0 * static_cast<double>(bs.width))) return c;
  // n = e0 x (p2 - p0) = e0 x -e2
  const double n[3] = {e[2][1] * e[0][2] - e[2][2] * e[0][1], e[2][2] * e[0][0] - e[2][0] * e[0][2],
                       e[2][0] * e[0][1] - e[2][1] * e[0][0]};
  const double nn = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  const double sine = nn / (len[0] * len[2]);
  if (!(sine >= 1.52587890625e-5) || !(nn <= 1e300)) return c;  // 2^-16 (NaN: degenerate)
  const double u[3] = {n[0] / nn, n[1] / nn, n[2] / nn};
  for (int a = 0; a < 3; ++a) c.a[0][a] = static_cast<float>(u[a] * vs[a]);
  for (int k = 0; k < 3; ++k) {  // m = e_k x u, outward in the plane (the vertices run counter-clockwise about n)
    const double m[3] = {e[k][1] * u[2] - e[k][2] * u[1], e[k][2] * u[0] - e[k][0] * u[2],
                         e[k][0] * u[1] - e[k][1] * u[0]};
    const double mm = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
    if (!(mm > 0.0)) return c;
    for (int a = 0; a < 3; ++a) c.a[1 + k][a] = static_cast<float>(m[a] / mm * vs[a]);
  }
  const double kappa = 2.44140625e-4 + 3.814697265625e-6 / sine;  // 2^-12 + 2^-18 / sine
  c.limit = static_cast<float>(static_cast<double>(bs.width) + 2.0 * kappa * (static_cast<double>(bs.width) + emax));
  return c;
}
// The bound at one brick: f_k = b_k + w.a_k . (x, y, z) at its voxel (x, y, z) (0..7).
struct BandCull {
  BandBound w;
  float b[4];  // f_k at the centre of the brick's voxel (0, 0, 0)
};
// The bound for the voxels base + (0..7)^3 (base: the brick's first voxel).
VT_HD inline void band_cull(const BandBound& w, const Vec3f t[3], const Int3& base, BandCull& c) {
  c.w = w;
  for (int k = 0; k < 4; ++k) {
    const Vec3f& v = t[k == 0 ? 0 : k - 1];
    const double d[3] = {(static_cast<double>(base.x) + 0.5) - static_cast<double>(v.x),
                         (static_cast<double>(base.y) + 0.5) - static_cast<double>(v.y),
                         (static_cast<double>(base.z) + 0.5) - static_cast<double>(v.z)};
    c.b[k] = static_cast<float>((static_cast<double>(w.a[k][0]) * d[0] + static_cast<double>(w.a[k][1]) * d[1]) +
                                static_cast<double>(w.a[k][2]) * d[2]);
  }
}
VT_HD inline BandCull band_cull(const BandBound& w, const Vec3f t[3], const Int3& base) {
  BandCull c;
  band_cull(w, t, base, c);
  return c;
}
// Whether the bound skips voxel base + (x, y, z) (x, y, z in 0..7).
VT_HD inline bool band_culled(const BandCull& c, int x, int y, int z) {
  const float fx = static_cast<float>(x), fy = static_cast<float>(y), fz = static_cast<float>(z);
  float f[4];
  for (int k = 0; k < 4; ++k) f[k] = c.b[k] + ((c.w.a[k][0] * fx + c.w.a[k][1] * fy) + c.w.a[k][2] * fz);
  const float l = c.w.limit;
  return f[0] > l || -f[0] > l || f[1] > l || f[2] > l || f[3] > l;
}
// Whether the bound skips every voxel of the brick (one of the functions beyond the limit on all of it).
VT_HD inline bool band_brick_culled(const BandCull& c) {
  float lo[4], hi[4];
  for (int k = 0; k < 4; ++k) {
    lo[k] = hi[k] = c.b[k];
    for (int a = 0; a < 3; ++a) {
      const float d = c.w.a[k][a] * 7.0f;
      lo[k] += d < 0.0f ? d : 0.0f;
      hi[k] += d > 0.0f ? d : 0.0f;
    }
  }
  // (the sums' rounding is far within the limit's margin)
  const float l = c.w.limit;
  return lo[0] > l || hi[0] < -l || lo[1] > l || lo[2] > l || lo[3] > l;
}
// Unsigned distance (world) of every voxel centre nearer than the band width to a triangle.
SparseGrid band_distance_cpu(const Mesh& mesh, const GridSpec& spec, int band);
// Negates the band's values at the voxels set in `inside`.
void apply_sign(SparseGrid& band, const SparseGrid& inside);

}  // namespace voxtile
