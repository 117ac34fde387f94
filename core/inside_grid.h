// Host side of the inside test (core/inside.h): the mesh as the test sees it, the CPU reference of
// the inside grid, and the narrow band of the sdf target.
#pragma once

#include <functional>
#include <vector>

#include "core/grid_spec.h"
#include "core/inside.h"
#include "core/inside_tree.h"
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
  size_t tree_min_edges = kInsideTreeMinEdges;  // boundary edges from which the walk takes the piece trees
};
// `g` = to_grid_space(mesh, spec). The boundary only when `boundary` is set; the snapped
// triangles unless `triangles` is false (the GPU snaps them itself).
InsideMesh prepare_inside(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, int axis, bool boundary,
                          bool triangles = true);

// The mesh's grid-space bounds: world_to_grid is monotonic per axis, so those of its world bounds
// (Mesh::bounds: the vertices its triangles use); lo > hi when it has no triangle.
struct GridBox {
  Vec3f lo, hi;
};
GridBox mesh_grid_box(const Mesh& mesh, const GridSpec& spec);

// Voxels per axis whose centres lie within the mesh's grid-space bounds: [lo, hi).
struct InsideRange {
  int32_t lo[3], hi[3];
};
InsideRange inside_range(const Mesh& mesh, const GridSpec& spec);

// Voxel centres inside along m's axis (parity or winding), for the columns and voxels of `range`
// (nothing outside the mesh's bounds can be inside).
// With `only` (a grid of the same spec: the sdf's band), tiles of columns that hold none of its
// bricks are passed over and the winding test's open columns are summed only in its bricks
// (inside_winding_span_in): the voxels there get the bits they get without it, those elsewhere may
// be left outside.
SparseGrid inside_grid_cpu(const InsideMesh& m, InsideMethod method, const InsideRange& range,
                           const SparseGrid* only = nullptr);
// The CPU reference of Voxelizer's inside grid: occupancy of the voxel centres inside the mesh.
SparseGrid inside_cpu(const Mesh& mesh, const GridSpec& spec, InsideMethod method, const SparseGrid* only = nullptr);
// Masks of voxels set in at least `at_least` (1..3) of up to three grids (sorted merge).
SparseGrid combine_masks(const std::vector<const SparseGrid*>& grids, int at_least);

// `--band all`: every voxel of the grid gets its distance (the width infinite; core/band_search.h).
constexpr int kBandAll = 0;
// Widths --band takes: kBandAll, or 1 to this many voxels.
constexpr int kMaxBand = 65536;
BandSetup band_setup(const GridSpec& spec, int band);
// A triangle's band box: its bounds grown by the reach, plus a margin, in grid space. A voxel whose
// centre is outside it is farther from the triangle than the width.
struct BandBox {
  float lo[3], hi[3];
};
// (From the triangle's bounds mn, mx, band_tri_bounds, where the caller has them.)
VT_HD inline BandBox band_box(const float mn[3], const float mx[3], const BandSetup& b) {
  const float r[3] = {b.reach.x * 1.001f + 1e-3f, b.reach.y * 1.001f + 1e-3f, b.reach.z * 1.001f + 1e-3f};
  BandBox x;
  for (int a = 0; a < 3; ++a) {
    x.lo[a] = mn[a] - r[a];
    x.hi[a] = mx[a] + r[a];
  }
  return x;
}
VT_HD inline BandBox band_box(const Vec3f t[3], const BandSetup& b) {
  float mn[3], mx[3];
  band_tri_bounds(t, mn, mx);
  return band_box(mn, mx, b);
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
// (With the triangle's bounds mn, mx, band_tri_bounds, where the caller has them.)
VT_HD inline float band_min(const Vec3f t[3], const float mn[3], const float mx[3], int32_t i, int32_t j, int32_t k,
                            const BandSetup& b, float best) {
  const BandBox x = band_box(mn, mx, b);
  if (!band_box_holds(x, 0, i) || !band_box_holds(x, 1, j) || !band_box_holds(x, 2, k)) return best;
  const float d = voxel_distance(t, i, j, k, b.vs);
  return d < best ? d : best;
}
VT_HD inline float band_min(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const BandSetup& b, float best) {
  float mn[3], mx[3];
  band_tri_bounds(t, mn, mx);
  return band_min(t, mn, mx, i, j, k, b, best);
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
// nothing (k2 and limit infinite); triangles under twice the width across keep only the margin (k2,
// k2e) for the box's bound, band_box_culled (their band box is mostly band: the plane and edges
// would cost more than they save). The GPU's band uses it (kernels/solid/solid.cu); the CPU's was no
// faster with it. The same margin holds at any distance T: where the functions exceed
// limit_at(T) = T + 2 kappa (T + emax), voxel_distance is at least T, so the GPU's band also skips a
// triangle at a voxel where the bound exceeds the voxel's least distance so far (T, the running
// minimum: a triangle no nearer leaves it unchanged). tests/test_inside.cpp checks the bound voxel by
// voxel, at the width and below it, on slivers, needles, small, large and far triangles.
struct BandBound {
  float a[4][3];  // change of f_k per voxel along x, y, z (world units); f_k is 0 at vertex k (f0: vertex 0)
  float limit;    // skip where max(|f0|, f1, f2, f3) > limit (infinity: never): limit_at(width)
  float k2, k2e;  // limit_at(T) = T + k2 T + k2e: 2 kappa and 2 kappa emax (infinity: no margin holds)
  VT_HD bool skips() const { return limit < INFINITY; }
  VT_HD float limit_at(float t) const { return t + (k2 * t + k2e); }
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
  c.limit = c.k2 = c.k2e = INFINITY;
  for (int k = 0; k < 4; ++k)
    for (int a = 0; a < 3; ++a) c.a[k][a] = 0.0f;
  // n = e0 x (p2 - p0) = e0 x -e2
  const double n[3] = {e[2][1] * e[0][2] - e[2][2] * e[0][1], e[2][2] * e[0][0] - e[2][0] * e[0][2],
                       e[2][0] * e[0][1] - e[2][1] * e[0][0]};
  const double nn = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  const double sine = nn / (len[0] * len[2]);
  if (!(sine >= 1.52587890625e-5) || !(nn <= 1e300)) return c;  // 2^-16 (NaN: degenerate)
  const double kappa = 2.44140625e-4 + 3.814697265625e-6 / sine;  // 2^-12 + 2^-18 / sine
  // (limit_at's float rounding, a few 2^-24 of T, is far within the margin: 2^-11 of T at least)
  c.k2 = static_cast<float>(2.0 * kappa);
  c.k2e = static_cast<float>(2.0 * kappa * emax);
  // A triangle under twice the width across keeps most of its band box within its band: not worth the
  // bound's tests (the 100k dragon's band at 128^3 took 136 ms on 2 cores without them, 185 with them).
  if (!(emax >= 2.0 * static_cast<double>(bs.width))) return c;
  const double u[3] = {n[0] / nn, n[1] / nn, n[2] / nn};
  BandBound f = c;
  for (int a = 0; a < 3; ++a) f.a[0][a] = static_cast<float>(u[a] * vs[a]);
  for (int k = 0; k < 3; ++k) {  // m = e_k x u, outward in the plane (the vertices run counter-clockwise about n)
    const double m[3] = {e[k][1] * u[2] - e[k][2] * u[1], e[k][2] * u[0] - e[k][0] * u[2],
                         e[k][0] * u[1] - e[k][1] * u[0]};
    const double mm = sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
    if (!(mm > 0.0)) return c;
    for (int a = 0; a < 3; ++a) f.a[1 + k][a] = static_cast<float>(m[a] / mm * vs[a]);
  }
  f.limit = static_cast<float>(static_cast<double>(bs.width) + 2.0 * kappa * (static_cast<double>(bs.width) + emax));
  return f;
}
// The same margin over the distance to the triangle's box (grid-space lo, hi from band_tri_bounds; the world distance
// from voxel (i, j, k)'s centre): a voxel whose box distance exceeds w.limit_at(T) is at least T
// from the triangle. For triangles of any size where w.k2 is finite (their angle's sine at vertex 0
// at least 2^-16); the GPU's band uses it for those the plane and edges do not bound.
// The squared world distance from voxel (i, j, k)'s centre to the grid-space box [lo, hi].
VT_HD inline float band_box_d2(const float lo[3], const float hi[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs) {
  const float c[3] = {static_cast<float>(i) + 0.5f, static_cast<float>(j) + 0.5f, static_cast<float>(k) + 0.5f};
  const float s[3] = {vs.x, vs.y, vs.z};
  float d2 = 0.0f;
  for (int a = 0; a < 3; ++a) {
    const float below = lo[a] - c[a], above = c[a] - hi[a];
    const float d = (below > above ? (below > 0.0f ? below : 0.0f) : (above > 0.0f ? above : 0.0f)) * s[a];
    d2 += d * d;
  }
  return d2;
}
// band_box_culled with the margins k2, k2e given (core/band_search.h: a box of several triangles with
// the largest of their margins, which each of them would pass over).
// Whether a box at squared distance d2 lies beyond limit_at(t) with margins k2, k2e.
VT_HD inline bool band_beyond(float d2, float t, float k2, float k2e) {
  const float l = t + (k2 * t + k2e);  // (BandBound::limit_at)
  return d2 > l * l;
}
VT_HD inline bool band_box_beyond(const float lo[3], const float hi[3], int32_t i, int32_t j, int32_t k,
                                  const Vec3f& vs, float t, float k2, float k2e) {
  return band_beyond(band_box_d2(lo, hi, i, j, k, vs), t, k2, k2e);
}
VT_HD inline bool band_box_culled(const BandBound& w, const float lo[3], const float hi[3], int32_t i, int32_t j,
                                  int32_t k, const Vec3f& vs, float t) {
  return band_box_beyond(lo, hi, i, j, k, vs, t, w.k2, w.k2e);
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
// Whether the bound skips voxel base + (x, y, z) (x, y, z in 0..7) at limit l (c.w.limit: beyond
// the width; c.w.limit_at(T): at least T away).
VT_HD inline bool band_culled(const BandCull& c, int x, int y, int z, float l) {
  const float fx = static_cast<float>(x), fy = static_cast<float>(y), fz = static_cast<float>(z);
  float f[4];
  for (int k = 0; k < 4; ++k) f[k] = c.b[k] + ((c.w.a[k][0] * fx + c.w.a[k][1] * fy) + c.w.a[k][2] * fz);
  return f[0] > l || -f[0] > l || f[1] > l || f[2] > l || f[3] > l;
}
VT_HD inline bool band_culled(const BandCull& c, int x, int y, int z) { return band_culled(c, x, y, z, c.w.limit); }
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
// Rows of bricks of a triangle's band box along the box's longest axis, for listing only the bricks
// that band_brick_culled may keep. Over the box, each of band_brick_culled's five tests is an affine
// function of the brick (its value at brick (i, j, m), m along the axis and i, j along the others, is
// its value at the box's first brick plus i, j and m steps of eight voxels): solved for m once per
// triangle in double, each row's range is then an affine function of (i, j), with a margin over the
// tests' float rounding (2^-18 of the magnitudes over the box, where they round at 2^-22) and one
// brick more at each end, so that testing the bricks within the rows' ranges finds the same bricks as
// testing the whole box. For a bounded triangle (w.skips()).
struct BandRows {
  int axis, a1, a2;           // the rows' axis and the two others (i along a1, j along a2)
  int32_t n;                  // bricks along the axis
  double c[5], g1[5], g2[5];  // per test: m's bound c - i g1 - j g2 (or, kind 0, the row's slack)
  int kind[5];                // 1: m at most the bound, -1: at least, 0: the row is empty where its slack < 0
};
// lo: the box's first brick, ext: its bricks along x, y, z; axis -1: the longest.
VT_HD inline BandRows band_rows(const BandBound& w, const Vec3f t[3], const Int3& lo, const Int3& ext, int axis = -1) {
  BandRows r;
  const int32_t e[3] = {ext.x, ext.y, ext.z};
  r.axis = axis >= 0 ? axis : (e[0] > e[1] ? (e[0] > e[2] ? 0 : 2) : (e[1] > e[2] ? 1 : 2));
  r.a1 = r.axis == 0 ? 1 : 0;
  r.a2 = r.axis == 2 ? 1 : 2;
  const auto along = [&](int a) { return a == 0 ? ext.x : (a == 1 ? ext.y : ext.z); };  // (no local array)
  r.n = along(r.axis);
  const double l = static_cast<double>(w.limit);
  const double p[3] = {8.0 * static_cast<double>(lo.x) + 0.5, 8.0 * static_cast<double>(lo.y) + 0.5,
                       8.0 * static_cast<double>(lo.z) + 0.5};
  for (int k = 0; k < 4; ++k) {
    const Vec3f& v = t[k == 0 ? 0 : k - 1];
    const double d[3] = {p[0] - static_cast<double>(v.x), p[1] - static_cast<double>(v.y),
                         p[2] - static_cast<double>(v.z)};
    double b = 0.0, neg = 0.0, pos = 0.0, mag = 0.0, step[3];
    for (int a = 0; a < 3; ++a) {
      const double g = static_cast<double>(w.a[k][a]);
      b += g * d[a];
      const double q = 7.0 * g;
      neg += q < 0.0 ? q : 0.0;
      pos += q > 0.0 ? q : 0.0;
      step[a] = 8.0 * g;
      mag += fabs(q) + fabs(step[a]) * static_cast<double>(along(a));
    }
    const double lim = l + 3.814697265625e-6 * (fabs(b) + mag + l);  // the limit and the margin (2^-18)
    // kept only where the lowest value on the brick is at most the limit; for the plane, also where
    // its highest is at least -limit: c0 + i s1 + j s2 + m s <= lim
    for (int h = 0; h < (k == 0 ? 2 : 1); ++h) {
      const double sign = h == 0 ? 1.0 : -1.0;
      const auto pick = [&](int a) { return a == 0 ? step[0] : (a == 1 ? step[1] : step[2]); };
      const double c0 = sign * (h == 0 ? b + neg : b + pos), s = sign * pick(r.axis);
      const double s1 = sign * pick(r.a1), s2 = sign * pick(r.a2);
      const int q = k == 0 ? h : k + 1;
      if (s == 0.0) {
        r.kind[q] = 0;
        r.c[q] = lim - c0;
        r.g1[q] = s1;
        r.g2[q] = s2;
      } else {  // (|s| >= 8 times the least float: the quotients are finite)
        r.kind[q] = s > 0.0 ? 1 : -1;
        r.c[q] = (lim - c0) / s;
        r.g1[q] = s1 / s;
        r.g2[q] = s2 / s;
      }
    }
  }
  return r;
}
// The range [*m0, *m1] of row (i, j) that may hold kept bricks (*m0 > *m1: none).
VT_HD inline void band_row_range(const BandRows& r, int32_t i, int32_t j, int32_t* m0, int32_t* m1) {
  double lo = 0.0, hi = static_cast<double>(r.n) - 1.0;
  const double fi = static_cast<double>(i), fj = static_cast<double>(j);
  for (int q = 0; q < 5; ++q) {
    const double x = r.c[q] - fi * r.g1[q] - fj * r.g2[q];
    if (r.kind[q] > 0) {
      const double f = floor(x) + 1.0;
      hi = f < hi ? f : hi;
    } else if (r.kind[q] < 0) {
      const double f = ceil(x) - 1.0;
      lo = f > lo ? f : lo;
    } else if (x < 0.0) {
      hi = -1.0;
    }
  }
  *m0 = static_cast<int32_t>(lo > static_cast<double>(r.n) ? static_cast<double>(r.n) : lo);
  *m1 = static_cast<int32_t>(hi < -1.0 ? -1.0 : hi);
}
// Unsigned distance (world) of every voxel centre nearer than the band width to a triangle.
// (By the band's pairs, below, or for wide bands by the search: band_by_search, the same bits.)
SparseGrid band_distance_cpu(const Mesh& mesh, const GridSpec& spec, int band);
// The band by its (brick, triangle) pairs: every brick of every triangle's band box (g: the mesh's
// grid-space vertices).
SparseGrid band_pairs_cpu(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, int band);
// The band's grid from its candidate bricks (masks[b], values b * 512 on; key_of(b) ascending with b):
// the non-empty ones, their active voxels' values, copied out on all cores.
SparseGrid band_grid(const GridSpec& spec, const std::vector<BrickMask>& masks, const ValueArray<float>& values,
                     const std::function<uint64_t(size_t)>& key_of);
// Negates the band's values at the voxels set in `inside`.
void apply_sign(SparseGrid& band, const SparseGrid& inside);

}  // namespace voxtile
