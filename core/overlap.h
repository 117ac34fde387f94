// Triangle/voxel overlap tests (VoxelPipe section 3.1, after Schwarz & Seidel 2010), written once
// for the CPU reference (g++) and the GPU kernels (nvcc).
//
// Everything here works in grid space: voxel (i,j,k) is the closed box [i,i+1]x[j,j+1]x[k,k+1].
// Every test is a fixed sequence of IEEE single-precision operations (no FMA contraction: the
// host builds with -ffp-contract=off, the kernels with -fmad=false), so CPU and GPU agree bit for
// bit. The enumerators (scanline bounds, column loops) are accelerations that visit exactly the
// voxels the per-voxel tests accept: each estimated range is fixed up at its ends with the exact
// per-voxel test, which is monotone along a scanline or column.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "core/hd.h"
#include "core/vec.h"

namespace voxtile {

enum class VoxelMode : uint8_t {
  kThin = 0,          // 6-separating: one voxel per column along the dominant axis
  kConservative = 1,  // 26-separating: every voxel the closed triangle touches
};

// Inclusive voxel box.
struct VoxelBox {
  int32_t lo[3], hi[3];
};

// Per-triangle setup in grid space.
struct TriSetup {
  Vec3f v[3];
  Vec3f n;      // cross(v1 - v0, v2 - v0), not normalised
  int dom;      // dominant axis: largest |n| component, ties to the lower axis
  Vec3f lo, hi; // bounding box of the vertices
};

VT_HD inline float vt_absf(float x) { return x < 0.0f ? -x : x; }
VT_HD inline float vt_maxf(float a, float b) { return a > b ? a : b; }
VT_HD inline float vt_minf(float a, float b) { return a < b ? a : b; }
// a / b where only an estimate is needed: the GPU's fast division (within 2 units of roundoff for
// 2^-126 < |b| < 2^126), a true division elsewhere.
VT_HD inline float vt_fast_div(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdividef(a, b);
#else
  return a / b;
#endif
}
VT_HD inline int vt_axis_a(int c) { return c == 2 ? 0 : c + 1; }  // first 2D axis of the projection along c
VT_HD inline int vt_axis_b(int c) { return c == 0 ? 2 : c - 1; }  // second 2D axis

// The bounding box of the setup's vertices (t.lo, t.hi).
VT_HD inline void set_vertex_bounds(TriSetup& t) {
  const Vec3f &a = t.v[0], &b = t.v[1], &c = t.v[2];
  t.lo = {vt_minf(a.x, vt_minf(b.x, c.x)), vt_minf(a.y, vt_minf(b.y, c.y)), vt_minf(a.z, vt_minf(b.z, c.z))};
  t.hi = {vt_maxf(a.x, vt_maxf(b.x, c.x)), vt_maxf(a.y, vt_maxf(b.y, c.y)), vt_maxf(a.z, vt_maxf(b.z, c.z))};
}

VT_HD inline TriSetup setup_triangle(const Vec3f& a, const Vec3f& b, const Vec3f& c) {
  TriSetup t;
  t.v[0] = a;
  t.v[1] = b;
  t.v[2] = c;
  t.n = cross(sub(b, a), sub(c, a));
  const float ax = vt_absf(t.n.x), ay = vt_absf(t.n.y), az = vt_absf(t.n.z);
  t.dom = (ax >= ay && ax >= az) ? 0 : (ay >= az ? 1 : 2);
  set_vertex_bounds(t);
  return t;
}

// The setup in the coordinates (a, b, c) = (vt_axis_a(dom), vt_axis_b(dom), dom) of its dominant
// projection, with dom = 2. That is a cyclic permutation of (x, y, z), under which the cross
// product, the edge functions and every test here are the same operations on the same values, so
// they give the same bits and accept the same voxels (u, v, w along a, b, c); code that sees the
// setup built here knows the axes at compile time, so no run-time axis selects or indexed locals.
// Boxes and sizes go through in_dominant_frame too; the setup's own dom stays the caller's to keep.
VT_HD inline Vec3f in_dominant_frame(const Vec3f& p, int dom) {
  return dom == 2 ? p : (dom == 0 ? Vec3f{p.y, p.z, p.x} : Vec3f{p.z, p.x, p.y});
}
VT_HD inline Vec3f from_dominant_frame(const Vec3f& f, int dom) {  // the inverse
  return dom == 2 ? f : (dom == 0 ? Vec3f{f.z, f.x, f.y} : Vec3f{f.y, f.z, f.x});
}
VT_HD inline Int3 in_dominant_frame(const Int3& p, int dom) {
  return dom == 2 ? p : (dom == 0 ? Int3{p.y, p.z, p.x} : Int3{p.z, p.x, p.y});
}
VT_HD inline Int3 from_dominant_frame(const Int3& f, int dom) {  // the inverse
  return dom == 2 ? f : (dom == 0 ? Int3{f.z, f.x, f.y} : Int3{f.y, f.z, f.x});
}
VT_HD inline VoxelBox in_dominant_frame(const VoxelBox& box, int dom) {
  const Int3 lo = in_dominant_frame(Int3{box.lo[0], box.lo[1], box.lo[2]}, dom);
  const Int3 hi = in_dominant_frame(Int3{box.hi[0], box.hi[1], box.hi[2]}, dom);
  return VoxelBox{{lo.x, lo.y, lo.z}, {hi.x, hi.y, hi.z}};
}
VT_HD inline TriSetup in_dominant_frame(const TriSetup& t) {
  TriSetup f;
  for (int i = 0; i < 3; ++i) f.v[i] = in_dominant_frame(t.v[i], t.dom);
  f.n = in_dominant_frame(t.n, t.dom);
  f.dom = 2;  // (not recomputed: ties between |n| components would pick a lower axis)
  f.lo = in_dominant_frame(t.lo, t.dom);
  f.hi = in_dominant_frame(t.hi, t.dom);
  return f;
}

// True when the setup has no usable plane (zero normal after rounding). Such triangles are
// segments or points: the conservative test still handles them exactly (the plane test passes
// and the three 2D tests bound the segment); the thin mode skips them.
VT_HD inline bool is_flat(const TriSetup& t) { return t.n.x == 0.0f && t.n.y == 0.0f && t.n.z == 0.0f; }

// Inclusive voxel range [first, last] of closed voxels [i, i+1] touching the closed interval [lo, hi].
VT_HD inline int32_t first_voxel(float lo) { return static_cast<int32_t>(std::ceil(lo)) - 1; }
VT_HD inline int32_t last_voxel(float hi) { return static_cast<int32_t>(std::floor(hi)); }

// 2D edge functions of the projection along axis c, onto axes a = vt_axis_a(c), b = vt_axis_b(c).
// E_i(u, v) = na_i * (u - va_i) + (nb_i * (v - vb_i) + off_i)  >= 0 for every edge  <=>  overlap.
// Box form (conservative): off = max(0, na) + max(0, nb), the critical corner of pixel [u,u+1]x[v,v+1].
// Diamond form (thin): the diamond |x - (u+.5)| + |y - (v+.5)| <= .5 inscribed in the pixel,
// off = .5 na + .5 nb + .5 max(|na|, |nb|).
// The diamond form adds the diamond's own separating axes, the diagonals (1,1) and (1,-1), as four
// more half-planes of the same shape, so that together they are the complete separating-axis test
// of the projected triangle against the closed diamond. (In box form those axes are the grid axes,
// which the bounding box covers.)
template <int N>
struct HalfPlanes {
  static constexpr int kCount = N;
  float na[N], nb[N];  // inward normals
  float va[N], vb[N];  // origins
  float off[N];        // critical-point offsets
};
using BoxEdges = HalfPlanes<3>;      // conservative: the pixel box
using DiamondEdges = HalfPlanes<7>;  // thin: the inscribed diamond

// The origins of projection c's edge functions: the vertices in its axes a, b.
template <int N>
VT_HD inline void set_edge_origins(const TriSetup& t, int c, HalfPlanes<N>& e) {
  const int a = vt_axis_a(c), b = vt_axis_b(c);
  for (int i = 0; i < 3; ++i) {
    e.va[i] = component(t.v[i], a);
    e.vb[i] = component(t.v[i], b);
  }
}

template <int N>
VT_HD inline void setup_triangle_edges(const TriSetup& t, int c, HalfPlanes<N>& e) {
  const int a = vt_axis_a(c), b = vt_axis_b(c);
  const float s = component(t.n, c) >= 0.0f ? 1.0f : -1.0f;
  set_edge_origins(t, c, e);
  for (int i = 0; i < 3; ++i) {
    const Vec3f& p = t.v[i];
    const Vec3f& q = t.v[i == 2 ? 0 : i + 1];
    const float ea = component(q, a) - component(p, a);
    const float eb = component(q, b) - component(p, b);
    e.na[i] = -eb * s;
    e.nb[i] = ea * s;
    if (N == 7) {
      e.off[i] = (0.5f * e.na[i] + 0.5f * e.nb[i]) + 0.5f * vt_maxf(vt_absf(e.na[i]), vt_absf(e.nb[i]));
    } else {
      e.off[i] = vt_maxf(0.0f, e.na[i]) + vt_maxf(0.0f, e.nb[i]);
    }
  }
}

VT_HD inline BoxEdges setup_box_edges(const TriSetup& t, int c) {
  BoxEdges e;
  setup_triangle_edges(t, c, e);
  return e;
}

VT_HD inline DiamondEdges setup_diamond_edges(const TriSetup& t, int c) {
  DiamondEdges e;
  setup_triangle_edges(t, c, e);
  const int a = vt_axis_a(c), b = vt_axis_b(c);
  float smin = 0, smax = 0, dmin = 0, dmax = 0;
  for (int i = 0; i < 3; ++i) {
    const float pa = component(t.v[i], a), pb = component(t.v[i], b);
    const float sum = pa + pb, dif = pa - pb;
    smin = i == 0 ? sum : vt_minf(smin, sum);
    smax = i == 0 ? sum : vt_maxf(smax, sum);
    dmin = i == 0 ? dif : vt_minf(dmin, dif);
    dmax = i == 0 ? dif : vt_maxf(dmax, dif);
  }
  // Diamond of column (u,v): u+v+1 +- 1/2 along (1,1), u-v +- 1/2 along (1,-1).
  const float dna[4] = {1.0f, -1.0f, 1.0f, -1.0f}, dnb[4] = {1.0f, -1.0f, -1.0f, 1.0f};
  const float doff[4] = {1.5f - smin, smax - 0.5f, 0.5f - dmin, dmax + 0.5f};
  for (int k = 0; k < 4; ++k) {
    e.na[3 + k] = dna[k];
    e.nb[3 + k] = dnb[k];
    e.va[3 + k] = 0.0f;
    e.vb[3 + k] = 0.0f;
    e.off[3 + k] = doff[k];
  }
  return e;
}

// Row constants of scanline v: c_i = nb_i * (v - vb_i) + off_i.
template <int N>
struct EdgeRow {
  float c[N];
};
template <int N>
VT_HD inline EdgeRow<N> edge_row(const HalfPlanes<N>& e, int32_t v) {
  EdgeRow<N> r;
  const float fv = static_cast<float>(v);
  for (int i = 0; i < N; ++i) r.c[i] = e.nb[i] * (fv - e.vb[i]) + e.off[i];
  return r;
}
template <int N>
VT_HD inline bool edge_row_pass(const HalfPlanes<N>& e, const EdgeRow<N>& r, int32_t u) {
  const float fu = static_cast<float>(u);
  bool pass = true;
  for (int i = 0; i < N; ++i) pass = pass && (e.na[i] * (fu - e.va[i]) + r.c[i] >= 0.0f);
  return pass;
}
template <int N>
VT_HD inline bool edges_pass(const HalfPlanes<N>& e, int32_t u, int32_t v) {
  return edge_row_pass(e, edge_row(e, v), u);
}

// Scans of at most kNarrowSpan positions (scanline_range) are searched from their ends without
// an estimate: the result is the same, the estimate's divisions cost more than the tests they save.
constexpr int32_t kNarrowSpan = 3;
// Columns (conservative_column_run) whose box holds one voxel are searched without the depth
// estimate; from two voxels on it pays (a reciprocal kept per triangle, no division). Measured on an
// H200 (fine raster, the estimate from 2 voxels on against from 4): 3M tubes -3.2%, 1M tubes -3.2%,
// 100k dragon -4.8%, Sponza -6%, bunny at 2048^3 -1.3%, CAD slivers unchanged, count target on the
// dragon -5.9%; seeding every column (also boxes of one voxel) no better (Sponza 2% and the 3M tubes
// 0.2% faster still, the dragon, the bunny, CAD and CAD's count 0.3-1.3% slower); the rows'
// threshold at 1 or 6 instead of 3 within 1%.
constexpr int32_t kNarrowColumn = 1;

// The run [lo, hi] within [u0, u1] of the positions that pass N tests along a scan, each monotone
// along it (so together they pass on one run): test(i, u) is test i at u, k[i] gives the direction
// in which it changes (> 0: it passes from some u on; < 0: up to some u; 0: it is constant along the
// scan) and root(i) estimates where (only for the estimate, which seeds the search: a poor one costs
// steps, never the result). The estimated range is fixed up at its ends with the exact tests, so the
// result is exactly the set of u in [u0, u1] passing every test. Returns false when it is empty.
template <int N, class Test, class Root>
VT_HD inline bool monotone_scan(const float (&k)[N], const Test& test, const Root& root, int32_t u0, int32_t u1,
                                int32_t* out_lo, int32_t* out_hi) {
  auto pass = [&](int32_t u) {
    bool p = true;
    for (int i = 0; i < N; ++i) p = p && test(i, u);
    return p;
  };
  int32_t lo = u0, hi = u1;
  // A scan of at most kNarrowSpan positions (small triangles) is fixed up from its ends directly:
  // fewer operations than the estimate's divisions.
  if (u1 - u0 >= kNarrowSpan) {
    float flo = static_cast<float>(u0), fhi = static_cast<float>(u1);
    for (int i = 0; i < N; ++i) {
      if (k[i] == 0.0f) {
        if (!test(i, u0)) return false;  // constant along the scan, and failing
        continue;
      }
      const float x = root(i);
      if (k[i] > 0.0f) {
        flo = vt_maxf(flo, std::floor(x));
      } else {
        fhi = vt_minf(fhi, std::ceil(x));
      }
    }
    if (!(flo <= fhi + 2.0f)) return false;  // estimate far from any passing u (also catches NaN)
    lo = static_cast<int32_t>(vt_maxf(flo - 1.0f, static_cast<float>(u0)));
    hi = static_cast<int32_t>(vt_minf(fhi + 1.0f, static_cast<float>(u1)));
    while (lo > u0 && pass(lo - 1)) --lo;
    while (hi < u1 && pass(hi + 1)) ++hi;
  }
  while (lo <= hi && !pass(lo)) ++lo;
  while (hi >= lo && !pass(hi)) --hi;
  *out_lo = lo;
  *out_hi = hi;
  return lo <= hi;
}

// Estimated [lo, hi] of scanline v (within [u0, u1]) from the reciprocal form of the paper's
// equation (6), then fixed up with the exact test (monotone_scan), so that the result is exactly
// the set of u in [u0, u1] passing edge_row_pass. Returns false when the scanline is empty.
template <int N>
VT_HD inline bool scanline_range(const HalfPlanes<N>& e, const EdgeRow<N>& r, int32_t u0, int32_t u1, int32_t* out_lo,
                                 int32_t* out_hi) {
  return monotone_scan(
      e.na, [&](int i, int32_t u) { return e.na[i] * (static_cast<float>(u) - e.va[i]) + r.c[i] >= 0.0f; },
      [&](int i) { return e.va[i] - r.c[i] / e.na[i]; },  // E_i(root) == 0
      u0, u1, out_lo, out_hi);
}

// The same tests along the other axis: the v in [v0, v1] for which pixel (u, v) passes edges_pass,
// u fixed. Each test is the same sum na (u - va) + (nb (v - vb) + off) of the same rounded terms,
// with its first term fixed instead of its second, so it gives the same bits (addition commutes).
template <int N>
VT_HD inline bool scanline_range_along_b(const HalfPlanes<N>& e, int32_t u, int32_t v0, int32_t v1, int32_t* out_lo,
                                         int32_t* out_hi) {
  float a[N];
  const float fu = static_cast<float>(u);
  for (int i = 0; i < N; ++i) a[i] = e.na[i] * (fu - e.va[i]);
  return monotone_scan(
      e.nb, [&](int i, int32_t v) { return a[i] + (e.nb[i] * (static_cast<float>(v) - e.vb[i]) + e.off[i]) >= 0.0f; },
      [&](int i) { return e.vb[i] - (a[i] + e.off[i]) / e.nb[i]; }, v0, v1, out_lo, out_hi);
}

// The three 2D projections of a triangle, box form, in the order of the dominant axis first.
struct ConservativeSetup {
  TriSetup t;
  BoxEdges e[3];  // e[0]: projection along t.dom, e[1], e[2]: along the other two axes
  int axis[3];
  float inv_nc;   // 1 / the normal's dominant component (0 when it is 0): the column runs' estimate
};
VT_HD inline float inverse_or_zero(float x) { return x != 0.0f ? 1.0f / x : 0.0f; }
// What every column of a triangle tests beyond its setup: the coefficients (na, nb, off) of the edge
// functions of the two projections other than the dominant one (ConservativeSetup::e[1], e[2]), and
// inv_nc. Values that may be kept elsewhere (the GPU's fine raster keeps them per triangle in shared
// memory) and given back to setup_conservative.
struct ConservativeCoeffs {
  float na[2][3], nb[2][3], off[2][3];
  float inv_nc;
};
VT_HD inline ConservativeCoeffs conservative_coeffs(const TriSetup& t) {
  ConservativeCoeffs k;
  for (int p = 0; p < 2; ++p) {
    const BoxEdges e = setup_box_edges(t, p == 0 ? vt_axis_a(t.dom) : vt_axis_b(t.dom));
    for (int i = 0; i < 3; ++i) {
      k.na[p][i] = e.na[i];
      k.nb[p][i] = e.nb[i];
      k.off[p][i] = e.off[i];
    }
  }
  k.inv_nc = inverse_or_zero(component(t.n, t.dom));
  return k;
}
// The setup of t with the coefficients k (conservative_coeffs(t), computed here or earlier).
VT_HD inline ConservativeSetup setup_conservative(const TriSetup& t, const ConservativeCoeffs& k) {
  ConservativeSetup s;
  s.t = t;
  s.axis[0] = t.dom;
  s.axis[1] = vt_axis_a(t.dom);
  s.axis[2] = vt_axis_b(t.dom);
  s.e[0] = setup_box_edges(t, s.axis[0]);
  for (int p = 0; p < 2; ++p) {
    BoxEdges& e = s.e[1 + p];
    set_edge_origins(t, s.axis[1 + p], e);
    for (int i = 0; i < 3; ++i) {
      e.na[i] = k.na[p][i];
      e.nb[i] = k.nb[p][i];
      e.off[i] = k.off[p][i];
    }
  }
  s.inv_nc = k.inv_nc;
  return s;
}
VT_HD inline ConservativeSetup setup_conservative(const TriSetup& t) {
  return setup_conservative(t, conservative_coeffs(t));
}

VT_HD inline bool in_bbox(const TriSetup& t, const int32_t ijk[3]) {
  return ijk[0] >= first_voxel(t.lo.x) && ijk[0] <= last_voxel(t.hi.x) && ijk[1] >= first_voxel(t.lo.y) &&
         ijk[1] <= last_voxel(t.hi.y) && ijk[2] >= first_voxel(t.lo.z) && ijk[2] <= last_voxel(t.hi.z);
}

// The part of the conservative test that varies along column (u, v) of the dominant projection
// (u along a = vt_axis_a(c), v along b = vt_axis_b(c), the depth w along the dominant axis c): the
// plane and the two non-dominant projections, with what does not depend on w evaluated once.
// Plane/box overlap: the plane's value at the voxel's corners that minimise and maximise it
// brackets zero, evaluated as (n_a (x_a - v0_a) + n_b (x_b - v0_b)) + n_c (x_c - v0_c). The
// projection along a has axes (b, c) and the one along b has axes (c, a), so their edge functions
// (edge_row_pass: na (u' - va) + (nb (v' - vb) + off)) take (v, w) and (w, u). Each of these float
// tests is monotone in w (every rounding step is), so the accepted voxels of a column form one run.
struct ConservativeColumn {
  const ConservativeSetup& s;
  float fu, fv, nc, v0c;
  float p0, p1;  // the plane's a,b part at the pixel corners that minimise and maximise it
  VT_HD ConservativeColumn(const ConservativeSetup& setup, int32_t u, int32_t v)
      : s(setup), fu(static_cast<float>(u)), fv(static_cast<float>(v)) {
    const TriSetup& t = s.t;
    const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
    const float na = component(t.n, a), nb = component(t.n, b);
    const float v0a = component(t.v[0], a), v0b = component(t.v[0], b);
    nc = component(t.n, c);
    v0c = component(t.v[0], c);
    p0 = na * ((na > 0.0f ? fu : fu + 1.0f) - v0a) + nb * ((nb > 0.0f ? fv : fv + 1.0f) - v0b);
    p1 = na * ((na > 0.0f ? fu + 1.0f : fu) - v0a) + nb * ((nb > 0.0f ? fv + 1.0f : fv) - v0b);
  }
  // The plane test, and the two projections' tests: each is an intersection of tests monotone in w,
  // so each passes on one run of the column. Every test is evaluated (no early exit): on the GPU the
  // lanes of a warp test different voxels, and a branch per test costs more than the test.
  VT_HD bool plane(int32_t w) const {
    const float fw = static_cast<float>(w);
    const float cmin = nc > 0.0f ? fw : fw + 1.0f, cmax = nc > 0.0f ? fw + 1.0f : fw;
    return (p0 + nc * (cmin - v0c) <= 0.0f) & (p1 + nc * (cmax - v0c) >= 0.0f);
  }
  VT_HD bool edges(int32_t w) const {
    const float fw = static_cast<float>(w);
    const BoxEdges& e1 = s.e[1];
    const BoxEdges& e2 = s.e[2];
    bool ok = true;
    for (int i = 0; i < 3; ++i) ok &= e1.na[i] * (fv - e1.va[i]) + (e1.nb[i] * (fw - e1.vb[i]) + e1.off[i]) >= 0.0f;
    for (int i = 0; i < 3; ++i) ok &= e2.na[i] * (fw - e2.va[i]) + (e2.nb[i] * (fu - e2.vb[i]) + e2.off[i]) >= 0.0f;
    return ok;
  }
  VT_HD bool pass(int32_t w) const { return plane(w) & edges(w); }
};

VT_HD inline bool conservative_column_voxel(const ConservativeSetup& s, const int32_t ijk[3]) {
  const int c = s.t.dom;
  return ConservativeColumn(s, ijk[vt_axis_a(c)], ijk[vt_axis_b(c)]).pass(ijk[c]);
}

// The 26-separating (conservative) test for one voxel: bounding boxes, plane, three projections.
VT_HD inline bool conservative_voxel(const ConservativeSetup& s, const int32_t ijk[3]) {
  const int c = s.axis[0];
  return in_bbox(s.t, ijk) && edges_pass(s.e[0], ijk[vt_axis_a(c)], ijk[vt_axis_b(c)]) &&
         conservative_column_voxel(s, ijk);
}

constexpr int32_t kNoVoxel = -2147483647 - 1;

// Thin mode: depth voxel of column (u, v) of the dominant projection. The plane's depth at the
// column centre selects voxel floor(depth) (voxels are half-open along the dominant axis), except
// that a depth exactly on the grid's far face (dims_c) selects the last voxel, dims_c - 1.
VT_HD inline int32_t thin_depth_voxel(const TriSetup& t, int32_t u, int32_t v, int32_t dims_c) {
  const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
  const float ca = static_cast<float>(u) + 0.5f, cb = static_cast<float>(v) + 0.5f;
  const float num = component(t.n, a) * (ca - component(t.v[0], a)) + component(t.n, b) * (cb - component(t.v[0], b));
  const float depth = component(t.v[0], c) - num / component(t.n, c);
  if (depth == static_cast<float>(dims_c)) return dims_c - 1;
  if (!(depth > -1e9f && depth < 1e9f)) return kNoVoxel;  // far outside any grid, or NaN
  return static_cast<int32_t>(std::floor(depth));
}

// The 6-separating (thin) test for one voxel.
VT_HD inline bool thin_voxel(const TriSetup& t, const DiamondEdges& dom_edges, const int32_t ijk[3], int32_t dims_c) {
  if (is_flat(t)) return false;
  const int c = t.dom;
  const int32_t u = ijk[vt_axis_a(c)], v = ijk[vt_axis_b(c)];
  return edges_pass(dom_edges, u, v) && thin_depth_voxel(t, u, v, dims_c) == ijk[c];
}

// Voxel range a triangle may write, clipped to the grid [0, dims). Thin voxels can lie up to half
// a voxel beyond the triangle along its dominant axis, so that axis is widened by one voxel.
// Returns false when the range is empty.
VT_HD inline bool triangle_voxel_range(const TriSetup& t, VoxelMode mode, const Int3& dims, VoxelBox* box) {
  const float lo[3] = {t.lo.x, t.lo.y, t.lo.z}, hi[3] = {t.hi.x, t.hi.y, t.hi.z};
  for (int a = 0; a < 3; ++a) {
    const float dim = static_cast<float>(component(dims, a));
    if (!(lo[a] <= dim + 2.0f) || !(hi[a] >= -2.0f)) return false;  // also rejects NaN
    int32_t l = first_voxel(vt_maxf(lo[a], -2.0f)), h = last_voxel(vt_minf(hi[a], dim + 2.0f));
    if (mode == VoxelMode::kThin && a == t.dom) {
      --l;
      ++h;
    }
    box->lo[a] = l > 0 ? l : 0;
    box->hi[a] = h < component(dims, a) - 1 ? h : component(dims, a) - 1;
    if (box->lo[a] > box->hi[a]) return false;
  }
  return true;
}

// Rows of work: the enumerators below visit scanlines v (along axis b of the dominant projection)
// one at a time, so a GPU warp can spread the rows of large triangles across its lanes. The
// bounds functions give the voxel box (triangle range intersected with `clip`) whose b-range
// lists the rows; the row functions visit exactly the accepted voxels of one row.

// Conservative: bounding box of the triangle intersected with clip. False when empty.
VT_HD inline bool conservative_bounds(const TriSetup& t, const VoxelBox& clip, VoxelBox* r) {
  const int32_t lo[3] = {first_voxel(t.lo.x), first_voxel(t.lo.y), first_voxel(t.lo.z)};
  const int32_t hi[3] = {last_voxel(t.hi.x), last_voxel(t.hi.y), last_voxel(t.hi.z)};
  for (int d = 0; d < 3; ++d) {
    r->lo[d] = lo[d] > clip.lo[d] ? lo[d] : clip.lo[d];
    r->hi[d] = hi[d] < clip.hi[d] ? hi[d] : clip.hi[d];
    if (r->lo[d] > r->hi[d]) return false;
  }
  return true;
}

// The span [ulo, uhi] of row v (r from conservative_bounds): the columns of the row that pass the
// dominant projection. False when the row is empty.
VT_HD inline bool conservative_row_span(const ConservativeSetup& s, const VoxelBox& r, int32_t v, int32_t* ulo,
                                        int32_t* uhi) {
  const int a = vt_axis_a(s.t.dom);
  return scanline_range(s.e[0], edge_row(s.e[0], v), r.lo[a], r.hi[a], ulo, uhi);
}

// Rows along the other axis of the projection: the span [vlo, vhi] of "row" u (its pixels (u, v), v
// in r's range along b) that pass the dominant projection, the same tests as conservative_row_span's
// (scanline_range_along_b). Long thin triangles that lie along a (u) cross fewer rows this way.
VT_HD inline bool conservative_row_span_along_b(const ConservativeSetup& s, const VoxelBox& r, int32_t u, int32_t* vlo,
                                                int32_t* vhi) {
  const int b = vt_axis_b(s.t.dom);
  return scanline_range_along_b(s.e[0], u, r.lo[b], r.hi[b], vlo, vhi);
}

// The rows of box r (from conservative_bounds) that can hold a pixel of t's projection onto axes
// (pixel_axis, row_axis): rows indexed along row_axis, their pixels along pixel_axis (in t's
// dominant frame, (0, 1): rows v, spans along u, as conservative_row_span; (1, 0): rows u, spans along
// v, as conservative_row_span_along_b; the CPU's lines along other axes use other projections). The bounding
// box lists every row the triangle's box crosses; a long thin triangle crossing a tile diagonally
// reaches far fewer of them. This is the extent along row_axis of the projected triangle within the
// strip of r's pixels along the other axis, both grown by a margin m that covers every pixel the
// float tests can accept beyond the exact triangle: their rounding errors are a few units of
// roundoff (2^-24) of the terms, so an accepted pixel lies within about 2^-20 (M + 2) of the
// triangle, M the largest coordinate involved; m = 2^-16 (M + 2) (1/64 voxel at 1024). Only a
// skip of rows whose spans are empty: the voxels are those of the bounding box's rows. Coordinates
// beyond 2^24 keep the bounding box's rows. Returns the number of rows, *lo the first.
VT_HD inline int32_t conservative_row_range(const TriSetup& t, const VoxelBox& r, int pixel_axis, int row_axis,
                                            int32_t* lo) {
  const int y = row_axis, x = pixel_axis;
  *lo = r.lo[y];
  const int32_t box_rows = r.hi[y] - r.lo[y] + 1;
  float px[3], py[3];
  float big = vt_maxf(vt_maxf(vt_absf(static_cast<float>(r.lo[x])), vt_absf(static_cast<float>(r.hi[x]) + 1.0f)),
                      vt_maxf(vt_absf(static_cast<float>(r.lo[y])), vt_absf(static_cast<float>(r.hi[y]) + 1.0f)));
  for (int i = 0; i < 3; ++i) {
    px[i] = component(t.v[i], x);
    py[i] = component(t.v[i], y);
    big = vt_maxf(big, vt_maxf(vt_absf(px[i]), vt_absf(py[i])));
  }
  if (!(big < 16777216.0f)) return box_rows;
  const float m = (big + 2.0f) * (1.0f / 65536.0f);
  const float x0 = static_cast<float>(r.lo[x]) - m, x1 = (static_cast<float>(r.hi[x]) + 1.0f) + m;
  float ylo = 3.0e38f, yhi = -3.0e38f;
  auto take = [&](float yv) {
    ylo = vt_minf(ylo, yv);
    yhi = vt_maxf(yhi, yv);
  };
  for (int i = 0; i < 3; ++i) {
    if (px[i] >= x0 && px[i] <= x1) take(py[i]);
    const int j = i == 2 ? 0 : i + 1;
    const bool cross0 = (px[i] < x0) != (px[j] < x0), cross1 = (px[i] < x1) != (px[j] < x1);
    if (!cross0 && !cross1) continue;
    const float dx = px[j] - px[i], dy = py[j] - py[i];
    if (vt_absf(dx) < 1.0f / 1048576.0f) {  // (not 0: it crosses) within 2^-20 of the side along x: its whole y range
      take(py[i]);
      take(py[j]);
      continue;
    }
    // The edge's y where it crosses a side; the slope with the GPU's fast division (about 2 units of
    // roundoff: the kernel keeps the code small), its errors a few units of roundoff of |dy|.
    const float k = vt_fast_div(dy, dx), ymin = vt_minf(py[i], py[j]), ymax = vt_maxf(py[i], py[j]);
    if (cross0) take(vt_minf(ymax, vt_maxf(ymin, py[i] + k * (x0 - px[i]))));
    if (cross1) take(vt_minf(ymax, vt_maxf(ymin, py[i] + k * (x1 - px[i]))));
  }
  if (ylo > yhi) return 0;  // the triangle misses the strip
  const int32_t first = first_voxel(ylo - m), last = last_voxel(yhi + m);
  *lo = first > r.lo[y] ? first : r.lo[y];
  const int32_t hi = last < r.hi[y] ? last : r.hi[y];
  return hi >= *lo ? hi - *lo + 1 : 0;
}

// Box r (from conservative_bounds or thin_bounds) narrowed along the two axes of the dominant
// projection (c = t.dom) to the box of the triangle's part within r's depth range [r.lo[c],
// r.hi[c] + 1]. Where a tile cuts a long triangle's depth range, its rows and columns in the tile are
// those of this piece (measured on the CPU, 32^3 tiles at 1024^3: the CAD slivers' columns in the fine
// raster 191M -> 123M, of which 117M hold voxels; the 1M tubes' 62M -> 56M).
// The triangle is taken lifted onto the plane (v0, n) that the tests use: its projection with each
// vertex's depth on that plane (a sliver's float normal, a cross product of almost parallel edges,
// can tilt that plane by many voxels from its far vertices). The slab is grown by
// g (|k_a| + |k_b|), k = n / n_c (|k_a|, |k_b| <= 1), and by the margin m = 2^-16 (M + 2), M the
// largest coordinate involved; the box by m. A conservative voxel (g = 1) straddles the
// plane within rounding at a point X of its box, and its pixel holds a point Q of the projected
// triangle (the dominant projection's test); X and Q lie in one pixel, so the plane's depths above
// them differ by at most |k_a| + |k_b|: the lifted Q lies in the grown slab and in the pixel. A thin
// voxel (g = 1/2) holds the plane's depth at its pixel's centre, within 1/2 (L1, the diamond
// test) of such a Q. The rounding of the tests and of this function (a few units of roundoff of
// terms below 4M) is far below m. So only pixels with no voxel leave the box. Returns false when no
// part of the lifted triangle lies in the grown slab (then the pair has no voxel); coordinates beyond
// 2^24 keep r. Flat setups (n = 0: the plane test passes everywhere, the other tests are those of a
// segment or a point, complete for it) use the vertices' own depths.
// Where r already lies within the triangle's own depth range (grown by the voxel a thin voxel may lie
// beyond it), nothing can be dropped: r is kept without the work (most pairs of small triangles).
VT_HD inline bool slab_box(const TriSetup& t, VoxelMode mode, VoxelBox* r) {
  const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
  const int32_t reach = mode == VoxelMode::kThin ? 1 : 0;
  if (first_voxel(component(t.lo, c)) - reach >= r->lo[c] && last_voxel(component(t.hi, c)) + reach <= r->hi[c])
    return true;
  const float g = mode == VoxelMode::kThin ? 0.5f : 1.0f;
  float big = 0.0f;
  for (int i = 0; i < 3; ++i)
    big = vt_maxf(big, vt_maxf(vt_maxf(vt_absf(t.v[i].x), vt_absf(t.v[i].y)), vt_absf(t.v[i].z)));
  for (int d = 0; d < 3; ++d)
    big = vt_maxf(big, vt_maxf(vt_absf(static_cast<float>(r->lo[d])), vt_absf(static_cast<float>(r->hi[d]) + 1.0f)));
  if (!(big < 16777216.0f)) return true;
  const float m = (big + 2.0f) * (1.0f / 65536.0f);
  // Each vertex's depth on the plane (v0, n) (the vertices' own for a flat setup).
  const float nc = component(t.n, c);
  const float ka = nc != 0.0f ? component(t.n, a) / nc : 0.0f, kb = nc != 0.0f ? component(t.n, b) / nc : 0.0f;
  const float v0a = component(t.v[0], a), v0b = component(t.v[0], b), v0c = component(t.v[0], c);
  float depth[3];
  for (int i = 0; i < 3; ++i)
    depth[i] = nc != 0.0f ? v0c - (ka * (component(t.v[i], a) - v0a) + kb * (component(t.v[i], b) - v0b))
                          : component(t.v[i], c);
  const float grow = m + g * (vt_absf(ka) + vt_absf(kb));
  const float zlo = static_cast<float>(r->lo[c]) - grow, zhi = (static_cast<float>(r->hi[c]) + 1.0f) + grow;
  float alo = 3.0e38f, ahi = -3.0e38f, blo = 3.0e38f, bhi = -3.0e38f;
  auto take = [&](float x, float y) {
    alo = vt_minf(alo, x);
    ahi = vt_maxf(ahi, x);
    blo = vt_minf(blo, y);
    bhi = vt_maxf(bhi, y);
  };
  for (int i = 0; i < 3; ++i) {
    const int j = i == 2 ? 0 : i + 1;
    const float pa = component(t.v[i], a), pb = component(t.v[i], b), pc = depth[i];
    const float qa = component(t.v[j], a), qb = component(t.v[j], b), qc = depth[j];
    if (pc >= zlo && pc <= zhi) take(pa, pb);
    for (int k = 0; k < 2; ++k) {
      const float z = k == 0 ? zlo : zhi;
      if ((pc < z) == (qc < z)) continue;
      // The crossing (qc != pc: they lie on either side), its parameter clamped to the edge; its
      // rounding (a few units of roundoff of the edge's extent) is within the margin.
      const float f = vt_minf(1.0f, vt_maxf(0.0f, vt_fast_div(z - pc, qc - pc)));
      take(pa + f * (qa - pa), pb + f * (qb - pb));
    }
  }
  if (!(alo <= ahi)) return false;
  const int32_t a0 = first_voxel(alo - m), a1 = last_voxel(ahi + m);
  const int32_t b0 = first_voxel(blo - m), b1 = last_voxel(bhi + m);
  if (a0 > r->lo[a]) r->lo[a] = a0;
  if (a1 < r->hi[a]) r->hi[a] = a1;
  if (b0 > r->lo[b]) r->lo[b] = b0;
  if (b1 < r->hi[b]) r->hi[b] = b1;
  return r->lo[a] <= r->hi[a] && r->lo[b] <= r->hi[b];
}

// The conservative voxels of column (u, v) of the dominant projection (u in the span of row v, r
// from conservative_bounds): the run [*out_lo, *out_hi] along the dominant axis (ConservativeColumn:
// the column passed the bounding box and the dominant projection, the rest of the test is monotone
// along it): the plane's run, found by fixing up the ends of an estimate, then cut at its ends by the
// two other projections. False when the column is empty.
VT_HD inline bool conservative_column_run(const ConservativeSetup& s, const VoxelBox& r, int32_t u, int32_t v,
                                          int32_t* out_lo, int32_t* out_hi) {
  const ConservativeColumn col(s, u, v);
  const int c = s.t.dom;
  const int32_t rlo = r.lo[c], rhi = r.hi[c];
  int32_t wlo = rlo, whi = rhi;
  // Estimated depth range of the plane over pixel [u,u+1]x[v,v+1] (not where the box holds one voxel).
  // The estimate only seeds the fix-up, so a reciprocal is good enough.
  if (col.nc != 0.0f && rhi - rlo >= kNarrowColumn) {
    const float inv_nc = s.inv_nc;
    const float d0 = col.v0c - col.p0 * inv_nc, d1 = col.v0c - col.p1 * inv_nc;
    const float dlo = vt_minf(d0, d1), dhi = vt_maxf(d0, d1);
    // Voxel w touches depths [dlo, dhi] iff ceil(dlo) - 1 <= w <= floor(dhi).
    const float elo = std::ceil(dlo) - 1.0f, ehi = std::floor(dhi);
    if (elo > static_cast<float>(wlo)) wlo = elo < static_cast<float>(whi) ? static_cast<int32_t>(elo) : whi;
    if (ehi < static_cast<float>(whi)) whi = ehi > static_cast<float>(wlo) ? static_cast<int32_t>(ehi) : wlo;
  }
  // The plane's run first (its tests are a fifth of pass's work), then the projections' run cuts
  // it from its ends: both are runs, so the result is the run of pass, with the projections tested
  // at the run's two ends only where they cut nothing.
  while (wlo > rlo && col.plane(wlo - 1)) --wlo;
  while (whi < rhi && col.plane(whi + 1)) ++whi;
  while (wlo <= whi && !col.plane(wlo)) ++wlo;
  if (wlo > whi) return false;
  while (whi > wlo && !col.plane(whi)) --whi;
  while (wlo <= whi && !col.edges(wlo)) ++wlo;
  if (wlo > whi) return false;
  while (whi > wlo && !col.edges(whi)) --whi;
  *out_lo = wlo;
  *out_hi = whi;
  return true;
}

// Visits the conservative voxels of column (u, v) of the dominant projection, u in the span of row
// v (r from conservative_bounds), calling f(i, j, k).
template <class F>
VT_HD inline void conservative_column(const ConservativeSetup& s, const VoxelBox& r, int32_t u, int32_t v, F&& f) {
  int32_t wlo, whi;
  if (!conservative_column_run(s, r, u, v, &wlo, &whi)) return;
  for (int32_t w = wlo; w <= whi; ++w) {
    const Int3 g = from_dominant_frame(Int3{u, v, w}, s.t.dom);
    f(g.x, g.y, g.z);
  }
}

// Visits the conservative voxels of row v (r from conservative_bounds), calling f(i, j, k).
template <class F>
VT_HD inline void conservative_row(const ConservativeSetup& s, const VoxelBox& r, int32_t v, F&& f) {
  int32_t ulo, uhi;
  if (!conservative_row_span(s, r, v, &ulo, &uhi)) return;
  for (int32_t u = ulo; u <= uhi; ++u) conservative_column(s, r, u, v, f);
}

// Runs along any axis. Every test of the conservative test is monotone in each coordinate (each is
// a chain of rounded products and sums in which the coordinate appears once), so the accepted voxels
// of any line of voxels along any axis form one run, not only along the dominant axis. Along the
// dominant axis runs are short (a triangle's conservative voxels are a slab about one voxel thick
// across it) and there are as many lines as pixels in the triangle's largest projection; along an
// axis in which the triangle extends, the same voxels come in fewer, longer runs (measured on the
// CPU, lines within 32^3 tiles: 185M along the dominant axis against 119M along the dominant frame's
// first axis for 3M long thin triangles, 23M against 2.5M for the room's walls and tiny objects, 3.2M
// against 2.0M for the 100k dragon at 1024^3). The axis is chosen per triangle (conservative_line_axis).
//
// Axis z of the dominant frame (0: u, 1: v, 2: w, the dominant axis): lines are indexed by (x, y)
// along the frame's axes z + 1 and z + 2 (mod 3), a cyclic order; they are the pixels of the
// projection along z that its box-form 2D test accepts, listed by rows y (conservative_line_span).
// Along a line, the plane's two tests and the edge functions of the two other projections vary: the
// projection along z + 1 has axes (z + 2, z), so z is the inner coordinate of its edge functions (na
// (y - va) + (nb (z - vb) + off)); the projection along z + 2 has axes (z, z + 1), so z is the outer
// one (na (z - va) + (nb (x - vb) + off)). ConservativeSetup::e[j] is the projection along frame axis
// (j + 2) mod 3, and frame axis k is the grid axis s.axis[(k + 1) mod 3] (frame_axis): the setup's
// values serve in the grid's axes, with no frame of their own (they are the same bits in the frame,
// Overlap.DominantFrameGivesTheSameBitsAndVoxels). The CPU reference visits a triangle's voxels this way where it pays
// (for_each_conservative_voxel); the GPU's fine raster keeps columns along the dominant axis (lines
// along the chosen axis measured slower there: scripts/bench-results/lines-h200-2026-11-25.md).

VT_HD inline int frame_axis(const ConservativeSetup& s, int k) { return s.axis[k == 2 ? 0 : k + 1]; }

// What the lines along axis z of one triangle test (conservative_line_run): the plane's normal and
// first vertex in the order (z, z + 1, z + 2), and the edge functions of the projections along z + 1
// (inner) and z + 2 (outer).
struct LineSetup {
  float nz, nx, ny, oz, ox, oy;
  BoxEdges inner, outer;
  float inv_nz, inv_inner[3], inv_outer[3];  // reciprocals of the coefficients along the line (0 for 0)
};
VT_HD inline LineSetup line_setup(const ConservativeSetup& s, int z) {
  const int gz = frame_axis(s, z), gx = frame_axis(s, z == 2 ? 0 : z + 1), gy = frame_axis(s, z == 0 ? 2 : z - 1);
  LineSetup l;
  l.nz = component(s.t.n, gz);
  l.nx = component(s.t.n, gx);
  l.ny = component(s.t.n, gy);
  l.oz = component(s.t.v[0], gz);
  l.ox = component(s.t.v[0], gx);
  l.oy = component(s.t.v[0], gy);
  l.inner = s.e[(z + 2) % 3];  // the projection along frame axis z + 1
  l.outer = s.e[z];            // along z + 2
  l.inv_nz = inverse_or_zero(l.nz);
  for (int i = 0; i < 3; ++i) {
    l.inv_inner[i] = inverse_or_zero(l.inner.nb[i]);
    l.inv_outer[i] = inverse_or_zero(l.outer.na[i]);
  }
  return l;
}

// One test along a line in a common form: s (p + (k ((z + d) - o) + q)) >= 0, s = +-1. Each of the
// eight is this sequence of rounded operations on the same values as the per-voxel test
// (ConservativeColumn, edge_row_pass): the plane's halves (p and q: the other two terms, summed in
// the frame's order, as addition commutes; d: the corner), the inner edge functions (p: na (y - va),
// q: off) and the outer ones (p: 0, q: nb (x - vb) + off), where adding a zero changes at most the
// sign of a zero, which no comparison with zero sees.
struct LineTest {
  float p, q, k, o, d, s;
  float inv_k;  // 1 / k, or anything when k == 0: only the estimate of the root uses it
  VT_HD bool pass(int32_t z) const { return s * (p + (k * ((static_cast<float>(z) + d) - o) + q)) >= 0.0f; }
};

// Narrows [lo, hi] to where test t passes. It is monotone along the line: it passes on a suffix
// when s k > 0, a prefix when s k < 0, everywhere or nowhere when k == 0. The search starts at the
// estimated root and walks to the exact end, so a poor estimate (or NaN) costs steps, never the
// result. lo > hi: empty.
VT_HD inline void narrow_run(const LineTest& t, int32_t* lo, int32_t* hi) {
  if (*lo > *hi) return;
  const float dir = t.s * t.k;
  if (dir == 0.0f) {
    if (!t.pass(*lo)) *hi = *lo - 1;
    return;
  }
  const float root = (t.o - t.d) - (t.p + t.q) * t.inv_k;
  const float r = dir > 0.0f ? std::ceil(root) : std::floor(root);
  int32_t z = r > static_cast<float>(*lo) ? (r < static_cast<float>(*hi) ? static_cast<int32_t>(r) : *hi) : *lo;
  const int32_t step = dir > 0.0f ? -1 : 1;  // towards the passing side's far end
  // Walk while the neighbour towards the end passes (z passing), or away while z fails.
  if (t.pass(z)) {
    while (z + step >= *lo && z + step <= *hi && t.pass(z + step)) z += step;
  } else {
    z -= step;
    while (z >= *lo && z <= *hi && !t.pass(z)) z -= step;
  }
  if (dir > 0.0f) *lo = z;
  else *hi = z;
}

// The span [xlo, xhi] of row y of lines along frame axis z (r from conservative_bounds, in the
// grid's axes): the pixels of the projection along z (axes z + 1, z + 2) that its 2D test accepts.
// False when empty.
VT_HD inline bool conservative_line_span(const ConservativeSetup& s, int z, const VoxelBox& r, int32_t y,
                                         int32_t* xlo, int32_t* xhi) {
  const BoxEdges& e = s.e[(z + 1) % 3];
  const int gx = frame_axis(s, (z + 1) % 3);
  return scanline_range(e, edge_row(e, y), r.lo[gx], r.hi[gx], xlo, xhi);
}

// The run [*out_lo, *out_hi] of line (x, y) along axis z within [zlo, zhi] (the box's range along
// z), x in the span of row y: each of the eight tests that vary along the line narrows the range in
// turn, from an estimate of where it changes (the plane's first: for the dominant axis that leaves a
// voxel or two). False when the run is empty. l: line_setup(s, z).
VT_HD inline bool conservative_line_run(const LineSetup& l, int z, int32_t zlo, int32_t zhi, int32_t x, int32_t y,
                                        int32_t* out_lo, int32_t* out_hi) {
  const float fx = static_cast<float>(x), fy = static_cast<float>(y);
  int32_t lo = zlo, hi = zhi;
  // The plane, ((t_0 + t_1) + t_2) at the minimising (maximising) corner: along the dominant axis the
  // other two terms are summed first (p); along axis 0 or 1 the varying term is added to the other
  // of t_0, t_1 (q), then t_2 (p).
  for (int half = 0; half < 2; ++half) {
    const float c = static_cast<float>(half);  // 0: minimising corner, 1: maximising
    const float tx = l.nx * ((l.nx > 0.0f ? fx + c : fx + (1.0f - c)) - l.ox);
    const float ty = l.ny * ((l.ny > 0.0f ? fy + c : fy + (1.0f - c)) - l.oy);
    LineTest t;
    t.p = z == 2 ? tx + ty : (z == 0 ? ty : tx);
    t.q = z == 2 ? 0.0f : (z == 0 ? tx : ty);
    t.k = l.nz;
    t.o = l.oz;
    t.d = l.nz > 0.0f ? c : 1.0f - c;
    t.s = half == 0 ? -1.0f : 1.0f;
    t.inv_k = l.inv_nz;
    narrow_run(t, &lo, &hi);
  }
  for (int i = 0; i < 3; ++i) {
    const BoxEdges& e = l.inner;
    narrow_run(LineTest{e.na[i] * (fy - e.va[i]), e.off[i], e.nb[i], e.vb[i], 0.0f, 1.0f, l.inv_inner[i]}, &lo, &hi);
  }
  for (int i = 0; i < 3; ++i) {
    const BoxEdges& e = l.outer;
    narrow_run(LineTest{0.0f, e.nb[i] * (fx - e.vb[i]) + e.off[i], e.na[i], e.va[i], 0.0f, 1.0f, l.inv_outer[i]}, &lo,
               &hi);
  }
  *out_lo = lo;
  *out_hi = hi;
  return lo <= hi;
}

// The axis of the dominant frame along which a triangle's conservative voxels are visited: the
// dominant one (2) unless another lists far fewer lines. The projection along z has about (area + x
// extent + y extent + 1) pixels (the projected triangle grown by a pixel; |n_z| / 2 is its area) in (y
// extent + 1) rows. A line along another axis costs kLineCost dominant columns: its eight tests are
// searched from estimates, where a dominant column takes its run from the plane's estimate and tests
// the other projections at the run's ends only (conservative_column_run). Measured on the CPU (one
// thread, every conservative voxel of the mesh, ms, dominant columns only / this rule, two runs):
// room at 2048^3 (12 huge walls, 300 small objects) 383-436 / 113-125, bunny at 2048^3 446-487 /
// 378-409, 100k dragon at 1024^3 167-169 / 168-174; the factor from a sweep of 1.5 to 10
// (scripts/bench-results/lines-h200-2026-11-25.md).
constexpr float kLineCost = 4.0f;
VT_HD inline int conservative_line_axis(const ConservativeSetup& s) {
  const TriSetup& t = s.t;
  auto extent = [&](int k) { return component(t.hi, frame_axis(s, k)) - component(t.lo, frame_axis(s, k)); };
  int best = 2;
  float best_cost = 0.0f;
  for (int z = 2; z >= 0; --z) {
    const float ex = extent((z + 1) % 3), ey = extent((z + 2) % 3), nz = vt_absf(component(t.n, frame_axis(s, z)));
    const float cost = (z == 2 ? 1.0f : kLineCost) * (0.5f * nz + ex + ey + 1.0f) + (ey + 1.0f);
    if (z == 2 || cost < best_cost) {
      best = z;
      best_cost = cost;
    }
  }
  return best;
}

// Visits the conservative voxels within r (from conservative_bounds) in runs along frame axis z,
// calling f(i, j, k) once each: rows y of lines x along the projection along z, each line's run.
template <class F>
VT_HD inline void for_each_conservative_line_voxel(const ConservativeSetup& s, const VoxelBox& r, int z, F&& f) {
  const int gx = frame_axis(s, (z + 1) % 3), gy = frame_axis(s, (z + 2) % 3), gz = frame_axis(s, z);
  const LineSetup line = line_setup(s, z);
  int32_t y0 = 0;
  const int32_t rows = conservative_row_range(s.t, r, gx, gy, &y0);  // (those that can hold lines)
  for (int32_t y = y0; y < y0 + rows; ++y) {
    int32_t xlo, xhi;
    if (!conservative_line_span(s, z, r, y, &xlo, &xhi)) continue;
    for (int32_t x = xlo; x <= xhi; ++x) {
      int32_t zlo, zhi;
      if (!conservative_line_run(line, z, r.lo[gz], r.hi[gz], x, y, &zlo, &zhi)) continue;
      for (int32_t w = zlo; w <= zhi; ++w) {
        int32_t c[3];
        c[gx] = x;
        c[gy] = y;
        c[gz] = w;
        f(c[0], c[1], c[2]);
      }
    }
  }
}

// Visits every voxel of `clip` that the conservative test accepts, calling f(i, j, k) once each:
// in runs along the frame axis conservative_line_axis picks (along the dominant one, columns).
template <class F>
VT_HD inline void for_each_conservative_voxel(const ConservativeSetup& s, const VoxelBox& clip, F&& f) {
  VoxelBox r;
  if (!conservative_bounds(s.t, clip, &r)) return;
  const int z = conservative_line_axis(s);
  if (z != 2) return for_each_conservative_line_voxel(s, r, z, f);
  // Columns along the dominant axis, in the rows of the dominant projection that can hold pixels.
  int32_t v0 = 0;
  const int32_t rows = conservative_row_range(s.t, r, vt_axis_a(s.t.dom), vt_axis_b(s.t.dom), &v0);
  for (int32_t v = v0; v < v0 + rows; ++v) conservative_row(s, r, v, f);
}

// Thin: rows and columns of the dominant projection within the triangle's bounding box and clip
// (the dominant axis keeps the clip's range). False when empty or when the triangle is flat.
VT_HD inline bool thin_bounds(const TriSetup& t, const VoxelBox& clip, VoxelBox* r) {
  if (is_flat(t)) return false;
  const int c = t.dom, a = vt_axis_a(c), b = vt_axis_b(c);
  const float tlo[3] = {t.lo.x, t.lo.y, t.lo.z}, thi[3] = {t.hi.x, t.hi.y, t.hi.z};
  *r = clip;
  for (int d : {a, b}) {
    const int32_t lo = first_voxel(tlo[d]), hi = last_voxel(thi[d]);
    r->lo[d] = lo > clip.lo[d] ? lo : clip.lo[d];
    r->hi[d] = hi < clip.hi[d] ? hi : clip.hi[d];
    if (r->lo[d] > r->hi[d]) return false;
  }
  return true;
}

// The span [ulo, uhi] of row v (r from thin_bounds): the columns of the row whose diamond the
// dominant projection overlaps. False when the row is empty.
VT_HD inline bool thin_row_span(const TriSetup& t, const DiamondEdges& e, const VoxelBox& r, int32_t v, int32_t* ulo,
                                int32_t* uhi) {
  const int a = vt_axis_a(t.dom);
  return scanline_range(e, edge_row(e, v), r.lo[a], r.hi[a], ulo, uhi);
}

// The thin voxel *w of column (u, v), u in the span of row v, if it lies in r (false if not); dims_c
// is the grid's size along the triangle's dominant axis (for the far-face rule).
VT_HD inline bool thin_column_voxel(const TriSetup& t, const VoxelBox& r, int32_t u, int32_t v, int32_t dims_c,
                                    int32_t* w) {
  const int c = t.dom;
  *w = thin_depth_voxel(t, u, v, dims_c);
  return *w >= r.lo[c] && *w <= r.hi[c];
}

// Visits the thin voxel of column (u, v) (thin_column_voxel).
template <class F>
VT_HD inline void thin_column(const TriSetup& t, const VoxelBox& r, int32_t u, int32_t v, int32_t dims_c, F&& f) {
  int32_t w;
  if (!thin_column_voxel(t, r, u, v, dims_c, &w)) return;
  const Int3 g = from_dominant_frame(Int3{u, v, w}, t.dom);
  f(g.x, g.y, g.z);
}

// Visits the thin voxels of row v (r from thin_bounds).
template <class F>
VT_HD inline void thin_row(const TriSetup& t, const DiamondEdges& e, const VoxelBox& r, int32_t v, int32_t dims_c,
                           F&& f) {
  int32_t ulo, uhi;
  if (!thin_row_span(t, e, r, v, &ulo, &uhi)) return;
  for (int32_t u = ulo; u <= uhi; ++u) thin_column(t, r, u, v, dims_c, f);
}

// Visits every voxel of `clip` that the thin test accepts (at most one per dominant column).
template <class F>
VT_HD inline void for_each_thin_voxel(const TriSetup& t, const DiamondEdges& e, const VoxelBox& clip, int32_t dims_c,
                                      F&& f) {
  VoxelBox r;
  if (!thin_bounds(t, clip, &r)) return;
  const int b = vt_axis_b(t.dom);
  for (int32_t v = r.lo[b]; v <= r.hi[b]; ++v) thin_row(t, e, r, v, dims_c, f);
}

// Visits every voxel of `clip` in the voxelization of `t` in `mode` (`dims`: the grid size, which
// the thin test's column rule needs).
template <class F>
VT_HD inline void for_each_voxel(const TriSetup& t, VoxelMode mode, const VoxelBox& clip, const Int3& dims, F&& f) {
  if (mode == VoxelMode::kConservative) for_each_conservative_voxel(setup_conservative(t), clip, f);
  else for_each_thin_voxel(t, setup_diamond_edges(t, t.dom), clip, component(dims, t.dom), f);
}

}  // namespace voxtile
