// "Inside": which voxel centres a mesh encloses, defined once for the CPU reference and the GPU
// (solid and sdf targets). Shared host/device code; every decision is made with the same integer
// and double operations on both sides (no FMA contraction, no library atan), so GPU = CPU bit for bit.
//
// The mesh as the inside test sees it: grid-space vertices (GridSpec::world_to_grid) whose two
// coordinates across the column axis are snapped to 1/1024 voxel (int64 fixed point, clamped to
// +-2^19 voxels), the coordinate along the column kept as a float. Columns run through voxel centres
// along one axis w (z for parity and winding; x, y and z for vote), with (u, v, w) a cyclic
// permutation of (x, y, z) so that orientations are kept.
//
// Crossings. A column at (pu, pv) crosses a triangle when the point lies inside its projection, with
// the edge functions evaluated exactly in integers and ties (the column through an edge or a vertex)
// broken by simulation of simplicity: the point is taken as (pu + e, pv + e^2). Two triangles that
// share an edge (the same snapped positions) see the same edge function with opposite signs, so a
// column through a closed mesh's edge or vertex is counted exactly once. A triangle whose projection
// has no area is never crossed. The crossing's sign is +1 where the triangle faces down the column
// (its outward normal along -w: a point above it is behind it) and -1 where it faces up; the crossing
// lies below voxel centre k when its w is < k + 0.5 (the barycentric w, in double).
//
// Methods (c = the signed sum of the crossings below a voxel centre):
//   parity   c odd: exact for closed meshes, whatever their orientation; open meshes leak along the
//            columns through their holes.
//   winding  the generalized winding number w(p) >= 0.5 (Jacobson et al. 2013). Along a column it is
//            computed exactly (up to double rounding) as w = c + B(p) / 4pi, where B sums, over the
//            mesh's boundary edges a->b (directed edges whose net count over all triangles is not
//            zero, vertices welded by position), the signed solid angle of the spherical triangle
//            (a - p, b - p, +w): the surface swept by the boundary to infinity along +w closes the
//            mesh, so its winding number is the crossing count below p (the antipodal ray). Closed
//            meshes have no boundary: w = c, an integer (overlapping closed parts: their sum;
//            inverted parts: negative, so an inverted closed mesh encloses nothing). Where the
//            boundary subtends less than half a turn around a column (the sum of the azimuth angles
//            of its edges seen from the column is < 0.99 pi), |B| < 2pi, so w >= 0.5 exactly when
//            c >= 1 and B is not evaluated. In the columns through or near holes B is bounded over
//            ranges of voxels span by span between crossings (core/inside_tree.h
//            inside_winding_walk) and summed over every edge only where the bounds leave a voxel
//            open; the bounds decide only what that sum would, so the answer is each voxel's own
//            exact sum.
//   vote     parity along x, along y and along z; inside where at least two agree (binvox's carving
//            vote, without its depth buffers).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/hd.h"
#include "core/vec.h"

namespace voxtile {

enum class InsideMethod : uint8_t { kParity = 0, kWinding = 1, kVote = 2 };
const char* inside_name(InsideMethod m);
// "parity", "winding" or "vote"; anything else: Error(kUsage).
InsideMethod parse_inside(const std::string& text);

constexpr int kInsideFracBits = 10;
constexpr double kInsideScale = 1024.0;        // 2^kInsideFracBits
constexpr double kInsideMaxVoxels = 524288.0;  // 2^19: |snapped coordinate| <= 2^29
constexpr double kInsideDecidedTurn = 0.99;    // columns whose boundary azimuth sum < 0.99 pi

// A grid coordinate snapped to the fixed point of the inside test.
VT_HD inline int64_t inside_snap(float g) {
  double d = static_cast<double>(g);
  d = d < -kInsideMaxVoxels ? -kInsideMaxVoxels : (d > kInsideMaxVoxels ? kInsideMaxVoxels : d);
  return static_cast<int64_t>(floor(d * kInsideScale + 0.5));
}
// A vertex coordinate's bits as a position for welding (the boundary's vertices, its loops): -0 and
// +0 are one position. The same on the host and the device.
VT_HD inline uint32_t inside_position_bits(float f) {
  if (f == 0.0f) f = 0.0f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
// The snapped coordinate of the centre of voxel column i.
VT_HD inline int64_t inside_column(int32_t i) {
  return int64_t(i) * (int64_t(1) << kInsideFracBits) + (int64_t(1) << (kInsideFracBits - 1));  // (i may be < 0)
}

// Columns i whose snapped centre lies in [lo, hi]: [*first, *last] clamped to [0, n) (empty when
// *first > *last).
VT_HD inline void inside_column_range(int64_t lo, int64_t hi, int32_t n, int32_t* first, int32_t* last) {
  const int64_t one = int64_t(1) << kInsideFracBits, half = one >> 1;
  const int64_t a = lo - half, b = hi - half;
  int64_t f = a >= 0 ? (a + one - 1) / one : -((-a) / one);  // ceil(a / one)
  int64_t l = b >= 0 ? b / one : -((-b + one - 1) / one);    // floor(b / one)
  f = f < 0 ? 0 : f;
  l = l > int64_t(n) - 1 ? int64_t(n) - 1 : l;
  *first = static_cast<int32_t>(f > int64_t(n) ? int64_t(n) : f);
  *last = static_cast<int32_t>(l < -1 ? -1 : l);
}

// Edge function of a->b at p: > 0 when p is left of the edge (exact: |terms| < 2^60).
VT_HD inline int64_t inside_edge(int64_t au, int64_t av, int64_t bu, int64_t bv, int64_t pu, int64_t pv) {
  return (bu - au) * (pv - av) - (bv - av) * (pu - au);
}
// The sign of the edge function at p + (e, e^2): its own sign, else the sign of its gradient.
VT_HD inline int inside_side(int64_t e, int64_t au, int64_t av, int64_t bu, int64_t bv) {
  if (e != 0) return e > 0 ? 1 : -1;
  const int64_t gu = av - bv;  // d/dpu
  if (gu != 0) return gu > 0 ? 1 : -1;
  const int64_t gv = bu - au;  // d/dpv
  return gv > 0 ? 1 : (gv < 0 ? -1 : 0);
}

// The crossing of the column (pu, pv) with a triangle: 0 when it misses, else its sign (+1 where
// the triangle faces down the column), with the crossing's w in *wc.
VT_HD inline int inside_crossing(const int64_t u[3], const int64_t v[3], const float w[3], int64_t pu, int64_t pv,
                                 double* wc) {
  const int64_t area = (u[1] - u[0]) * (v[2] - v[0]) - (v[1] - v[0]) * (u[2] - u[0]);
  if (area == 0) return 0;
  const int want = area > 0 ? 1 : -1;
  const int64_t e0 = inside_edge(u[1], v[1], u[2], v[2], pu, pv);
  if (inside_side(e0, u[1], v[1], u[2], v[2]) != want) return 0;
  const int64_t e1 = inside_edge(u[2], v[2], u[0], v[0], pu, pv);
  if (inside_side(e1, u[2], v[2], u[0], v[0]) != want) return 0;
  const int64_t e2 = inside_edge(u[0], v[0], u[1], v[1], pu, pv);
  if (inside_side(e2, u[0], v[0], u[1], v[1]) != want) return 0;
  const double num =
      (static_cast<double>(e0) * static_cast<double>(w[0]) + static_cast<double>(e1) * static_cast<double>(w[1])) +
      static_cast<double>(e2) * static_cast<double>(w[2]);
  *wc = num / static_cast<double>(area);
  return -want;
}
// The columns i of [u0, u1] in row pv (a snapped column centre) whose column the triangle crosses
// (inside_crossing's non-zero answer): one run, [*lo, *hi], false when there is none. Each edge's test
// is monotone along the row (its edge function is linear in pu, a zero taking the sign of its
// gradient), so each cuts the run at one end: estimated in double, then fixed up with the exact test.
// Enumerating these runs instead of the triangle's bounding box of columns tests the columns a long
// thin triangle crosses rather than its whole box.
VT_HD inline bool inside_row_span(const int64_t u[3], const int64_t v[3], int64_t pv, int32_t u0, int32_t u1,
                                  int32_t* lo, int32_t* hi) {
  const int64_t area = (u[1] - u[0]) * (v[2] - v[0]) - (v[1] - v[0]) * (u[2] - u[0]);
  if (area == 0 || u0 > u1) return false;
  const int want = area > 0 ? 1 : -1;
  int32_t a = u0, b = u1;
  for (int k = 0; k < 3; ++k) {
    const int p = k == 0 ? 1 : (k == 1 ? 2 : 0), q = k == 0 ? 2 : (k == 1 ? 0 : 1);  // e0: 1->2, e1: 2->0, e2: 0->1
    const int64_t au = u[p], av = v[p], bu = u[q], bv = v[q];
    const auto pass = [&](int32_t i) {
      return inside_side(inside_edge(au, av, bu, bv, inside_column(i), pv), au, av, bu, bv) == want;
    };
    const int64_t s = bv - av;  // the edge function falls by s per unit of pu
    if (s == 0) {
      if (!pass(a)) return false;  // constant along the row
      continue;
    }
    // Where the edge function is 0: pu = au + (bu - au)(pv - av) / s; column i at pu = i 2^f + 2^(f-1).
    const double root =
        (static_cast<double>(au) +
         static_cast<double>(bu - au) * static_cast<double>(pv - av) / static_cast<double>(s) - 0.5 * kInsideScale) /
        kInsideScale;
    const bool upper = (want > 0) == (s > 0);  // passes for small pu: cuts the run's high end
    if (upper) {
      double e = floor(root);
      e = e < static_cast<double>(a) - 1.0 ? static_cast<double>(a) - 1.0 : (e > static_cast<double>(b) ? b : e);
      int32_t h = static_cast<int32_t>(e);  // the last passing column, within [a - 1, b]
      while (h >= a && !pass(h)) --h;
      while (h < b && pass(h + 1)) ++h;
      b = h;
    } else {
      double e = ceil(root);
      e = e < static_cast<double>(a) ? a : (e > static_cast<double>(b) + 1.0 ? static_cast<double>(b) + 1.0 : e);
      int32_t l = static_cast<int32_t>(e);  // the first passing column, within [a, b + 1]
      while (l <= b && !pass(l)) ++l;
      while (l > a && pass(l - 1)) --l;
      a = l;
    }
    if (a > b) return false;
  }
  *lo = a;
  *hi = b;
  return true;
}
// The first voxel (along w) whose centre lies above a crossing at wc: floor(wc - 0.5) + 1.
VT_HD inline int64_t inside_first_above(double wc) {
  const double f = floor(wc - 0.5);
  return f < -1.0 ? 0 : (f > 2147483646.0 ? 2147483647 : static_cast<int64_t>(f) + 1);
}

// Cephes' rational approximation of atan on the reduced range (|x| <= tan(pi/8) after inside_atan's
// reduction), shared by inside_atan and the CPU's branch-free copy (core/vectorized.cpp).
VT_HD inline double inside_atan_reduced(double x) {
  const double z = x * x;
  const double p =
      (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z - 7.500855792314704667340e1) * z -
       1.228866684490136173410e2) *
          z -
      6.485021904942025371773e1;
  const double q =
      ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z + 4.328810604912902668951e2) * z +
       4.853903996359136964868e2) *
          z +
      1.945506571482613964425e2;
  return x * (z * p / q) + x;
}
// atan of x >= 0 (Cephes' atan: range reduction and a rational approximation, ~1e-16 relative),
// written out so that the host and the device compute the same bits.
VT_HD inline double inside_atan(double x) {
  const double kT3P8 = 2.41421356237309504880, kMoreBits = 6.123233995736765886130e-17;
  double y, flag_bits = 0.0;
  if (x > kT3P8) {
    y = 1.57079632679489661923;
    flag_bits = kMoreBits;
    x = -1.0 / x;
  } else if (x <= 0.66) {
    y = 0.0;
  } else {
    y = 0.78539816339744830962;
    flag_bits = 0.5 * kMoreBits;
    x = (x - 1.0) / (x + 1.0);
  }
  return y + (inside_atan_reduced(x) + flag_bits);
}
// atan2(y, x) in (-pi, pi], from inside_atan.
VT_HD inline double inside_atan2(double y, double x) {
  const double kPi = 3.14159265358979323846;
  const double ay = y < 0 ? -y : y, ax = x < 0 ? -x : x;
  if (ax == 0.0) return y > 0 ? 0.5 * kPi : (y < 0 ? -0.5 * kPi : 0.0);
  double a = inside_atan(ay / ax);
  if (x < 0) a = kPi - a;
  return y < 0 ? -a : a;
}

// A boundary edge a->b of the mesh (net multiplicity `mult`, in the triangles' orientation), snapped
// across the column axis like the triangles.
struct InsideEdge {
  int64_t au, av, bu, bv;
  float aw, bw;
  int32_t mult;
};

// World-space scales of the snapped and the column coordinates.
struct InsideScale {
  double su, sv, sw;  // voxel size along u, v, w
};

// Azimuth angle (0..pi) of the edge seen from the column (pu, pv), in world units, times |mult|.
VT_HD inline double inside_edge_azimuth(const InsideEdge& e, int64_t pu, int64_t pv, const InsideScale& s) {
  const double inv = 1.0 / kInsideScale;
  const double ax = static_cast<double>(e.au - pu) * inv * s.su, ay = static_cast<double>(e.av - pv) * inv * s.sv;
  const double bx = static_cast<double>(e.bu - pu) * inv * s.su, by = static_cast<double>(e.bv - pv) * inv * s.sv;
  double cr = ax * by - ay * bx;
  cr = cr < 0 ? -cr : cr;
  const double m = static_cast<double>(e.mult < 0 ? -e.mult : e.mult);
  return inside_atan2(cr, ax * bx + ay * by) * m;
}

// Signed solid angle of the spherical triangle (a - p, b - p, +w) of edge a->b (snapped ends
// (au, av), (bu, bv)), given a - p = (ax, ay, az) and b - p = (bx, by, bz) in world units: where the
// edge function en of a->b at p is not 0, angle(en, d) (2 atan2(n, d), n = en in world units: the
// triple product (a - p) x (b - p) . w), else the tie rule's.
template <class Angle>
VT_HD inline double inside_solid_angle_with(double ax, double ay, double az, double bx, double by, double bz,
                                            int64_t au, int64_t av, int64_t bu, int64_t bv, int64_t pu, int64_t pv,
                                            Angle&& angle) {
  const double kPi = 3.14159265358979323846;
  const double la = sqrt((ax * ax + ay * ay) + az * az), lb = sqrt((bx * bx + by * by) + bz * bz);
  const double d = ((la * lb + ((ax * bx + ay * by) + az * bz)) + az * lb) + bz * la;
  const int64_t en = inside_edge(au, av, bu, bv, pu, pv);
  if (en == 0) return d < 0 ? 2.0 * kPi * inside_side(0, au, av, bu, bv) : 0.0;
  return angle(en, d);
}
// The exact angle: 2 atan2(n, d) in double.
struct InsideExactAngle {
  InsideScale s;
  VT_HD double operator()(int64_t en, double d) const {
    const double inv = 1.0 / kInsideScale;
    const double n = static_cast<double>(en) * (inv * inv) * (s.su * s.sv);
    return 2.0 * inside_atan2(n, d);
  }
};
VT_HD inline double inside_solid_angle(double ax, double ay, double az, double bx, double by, double bz, int64_t au,
                                       int64_t av, int64_t bu, int64_t bv, int64_t pu, int64_t pv,
                                       const InsideScale& s) {
  return inside_solid_angle_with(ax, ay, az, bx, by, bz, au, av, bu, bv, pu, pv, InsideExactAngle{s});
}
// inside_solid_angle of boundary edge e at p = (pu, pv, pw) (pw in grid units) times the edge's
// multiplicity. At the column through the edge's projection it jumps by 4pi with the same tie rule
// as the crossings (inside_side), so c + B/4pi stays continuous.
VT_HD inline double inside_edge_solid_angle(const InsideEdge& e, int64_t pu, int64_t pv, double pw,
                                            const InsideScale& s) {
  const double inv = 1.0 / kInsideScale;
  const double ax = static_cast<double>(e.au - pu) * inv * s.su, ay = static_cast<double>(e.av - pv) * inv * s.sv;
  const double bx = static_cast<double>(e.bu - pu) * inv * s.su, by = static_cast<double>(e.bv - pv) * inv * s.sv;
  const double az = (static_cast<double>(e.aw) - pw) * s.sw, bz = (static_cast<double>(e.bw) - pw) * s.sw;
  return inside_solid_angle(ax, ay, az, bx, by, bz, e.au, e.av, e.bu, e.bv, pu, pv, s) * static_cast<double>(e.mult);
}

// An InsideEdge with its coordinates and multiplicity also as doubles, for the exact sums' inner loop
// (the GPU's): the same terms bit for bit without converting them at every voxel. The conversions are
// exact (|snapped| <= 2^29, w a float), so are the differences of two snapped coordinates, and
// x * 2^-10 * s = x * (2^-10 * s) where both products are one rounding of the same real number.
struct InsideEdgeX {
  int64_t au, av, bu, bv;
  double fau, fav, fbu, fbv, aw, bw, mult;
};
VT_HD inline InsideEdgeX inside_edge_x(const InsideEdge& e) {
  return {e.au,
          e.av,
          e.bu,
          e.bv,
          static_cast<double>(e.au),
          static_cast<double>(e.av),
          static_cast<double>(e.bu),
          static_cast<double>(e.bv),
          static_cast<double>(e.aw),
          static_cast<double>(e.bw),
          static_cast<double>(e.mult)};
}
// inside_edge_solid_angle of the same edge (the same bits), or with another angle (Angle above).
template <class Angle>
VT_HD inline double inside_edge_solid_angle_with(const InsideEdgeX& e, int64_t pu, int64_t pv, double pw,
                                                 const InsideScale& s, Angle&& angle) {
  const double inv = 1.0 / kInsideScale;
  const double fu = inv * s.su, fv = inv * s.sv, fpu = static_cast<double>(pu), fpv = static_cast<double>(pv);
  const double ax = (e.fau - fpu) * fu, ay = (e.fav - fpv) * fv;
  const double bx = (e.fbu - fpu) * fu, by = (e.fbv - fpv) * fv;
  const double az = (e.aw - pw) * s.sw, bz = (e.bw - pw) * s.sw;
  return inside_solid_angle_with(ax, ay, az, bx, by, bz, e.au, e.av, e.bu, e.bv, pu, pv, angle) * e.mult;
}
VT_HD inline double inside_edge_solid_angle(const InsideEdgeX& e, int64_t pu, int64_t pv, double pw,
                                            const InsideScale& s) {
  return inside_edge_solid_angle_with(e, pu, pv, pw, s, InsideExactAngle{s});
}

// A quicker term with a proved error bound, for the GPU's exact sums over every edge: where the
// bounds from these terms decide a voxel they decide what the exact sums would (they are widened by
// kInsideApproxRel of the terms' magnitudes), and only a voxel they leave open takes the exact sum.
// The term's n and d are the exact term's (the same doubles); its atan2 is taken in float: n and d
// rounded to float (after scaling both by 1 / (su sv), so that no voxel size overflows or underflows
// them), r = min / max (one rounding), atan(r) by a polynomial in float, then the quadrant in double.
// With e = 2^-24 the angle's error is at most (2 + 1 + P) e |angle| (to first order; the second is
// far below the factor left): rounding n and d moves atan2 by at most e |sin 2 angle| <= 2 e |angle|;
// r's rounding moves atan(r) by at most e r / (1 + r^2) <= e atan(r); the polynomial is within
// P e atan(r) of atan(r) at every float r in [0, 1] (P = 1.46: every float checked against atan,
// scripts/bench-results/winding-approx-h200-2026-11-30.md; the test
// Inside.ApproximateTermsAreWithinTheirBound rechecks a sample); and atan(r) <= |angle| in each
// quadrant's composition (done in double). So a term is within 4.5 e = 2.7e-7 of its magnitude, plus the exact term's
// own error (about 1e-15 of it) and, where r is subnormal, 2^-149 rad (which the margin's 1e-6 rad holds for any number
// of terms). kInsideApproxRel = 1e-6 leaves a factor of 3.7.
constexpr double kInsideApproxRel = 1e-6;
// atan(r) for 0 <= r <= 1: x + x z P(z), z = x^2, P of degree 7 fitted for relative error
// (minimax, 1.7e-8 before rounding); fmaf rounds once on the host and the device alike.
VT_HD inline float inside_atan_unit(float r) {
  const float z = r * r;
  float p = 2.920693718e-03f;
  p = fmaf(p, z, -1.636793464e-02f);
  p = fmaf(p, z, 4.321186990e-02f);
  p = fmaf(p, z, -7.552215457e-02f);
  p = fmaf(p, z, 1.066600531e-01f);
  p = fmaf(p, z, -1.421105564e-01f);
  p = fmaf(p, z, 1.999377310e-01f);
  p = fmaf(p, z, -3.333315253e-01f);
  return fmaf(r * z, p, r);
}
// The approximate angle for en != 0 (above; karea = 1 / (su sv)): n / (su sv) = en 2^-20 (exact in
// double up to 2^53, one rounding beyond) and d / (su sv) (one rounding) to float, atan(min / max) in
// float, the quadrant in double. Also the CPU's vectorised terms' (core/vectorized.cpp), which take
// it for every lane and keep it where en != 0.
VT_HD inline double inside_approx_angle(int64_t en, double d, double karea) {
  const double kPi = 3.14159265358979323846;
  const double inv = 1.0 / kInsideScale;
  const float fn = static_cast<float>(static_cast<double>(en) * (inv * inv)), fd = static_cast<float>(d * karea);
  const float an = fn < 0.0f ? -fn : fn, ad = fd < 0.0f ? -fd : fd;
  const float lo = an < ad ? an : ad, hi = an < ad ? ad : an;
  const double t = static_cast<double>(inside_atan_unit(lo / hi));
  double a = an > ad ? 0.5 * kPi - t : t;
  a = fd < 0.0f ? kPi - a : a;
  return 2.0 * (fn < 0.0f ? -a : a);
}
struct InsideApproxAngle {
  double karea;
  VT_HD double operator()(int64_t en, double d) const { return inside_approx_angle(en, d, karea); }
};
// inside_edge_solid_angle's term within kInsideApproxRel of its magnitude (above).
VT_HD inline double inside_edge_solid_angle_approx(const InsideEdgeX& e, int64_t pu, int64_t pv, double pw,
                                                   const InsideScale& s, double karea) {
  return inside_edge_solid_angle_with(e, pu, pv, pw, s, InsideApproxAngle{karea});
}

}  // namespace voxtile

namespace voxtile {

// Upper bound of inside_edge_azimuth over the columns of 8x8 column tile (tu, tv): the edge, of
// length L across the column, seen from at least distance d subtends at most L / d (and pi).
VT_HD inline double inside_tile_bound(const InsideEdge& e, int32_t tu, int32_t tv, const InsideScale& s) {
  const double kPi = 3.14159265358979323846;
  const double inv = 1.0 / kInsideScale;
  const int64_t t_u0 = inside_column(tu * 8), t_u1 = inside_column(tu * 8 + 7);
  const int64_t t_v0 = inside_column(tv * 8), t_v1 = inside_column(tv * 8 + 7);
  const int64_t e_u0 = e.au < e.bu ? e.au : e.bu, e_u1 = e.au < e.bu ? e.bu : e.au;
  const int64_t e_v0 = e.av < e.bv ? e.av : e.bv, e_v1 = e.av < e.bv ? e.bv : e.av;
  const int64_t gu = e_u0 > t_u1 ? e_u0 - t_u1 : (t_u0 > e_u1 ? t_u0 - e_u1 : 0);
  const int64_t gv = e_v0 > t_v1 ? e_v0 - t_v1 : (t_v0 > e_v1 ? t_v0 - e_v1 : 0);
  const double m = static_cast<double>(e.mult < 0 ? -e.mult : e.mult);
  if (gu == 0 && gv == 0) return kPi * m;
  const double du = static_cast<double>(gu) * inv * s.su, dv = static_cast<double>(gv) * inv * s.sv;
  const double lu = static_cast<double>(e.bu - e.au) * inv * s.su, lv = static_cast<double>(e.bv - e.av) * inv * s.sv;
  const double b = sqrt(lu * lu + lv * lv) / sqrt(du * du + dv * dv);
  return (b < kPi ? b : kPi) * m;
}

// Whether the crossings alone decide every column of 8x8 column tile (tu, tv) / the column (pu, pv):
// the boundary's azimuth bound (inside_tile_bound) / azimuth sum (inside_edge_azimuth), summed in
// edge order, stays under 0.99 pi. The terms are not negative, so the sum stops once it reaches the
// limit (the answer is the same).
template <class Term>
VT_HD inline bool inside_sum_under_turn(const InsideEdge* edges, uint64_t ne, Term&& term) {
  const double limit = kInsideDecidedTurn * 3.14159265358979323846;
  double sum = 0;
  for (uint64_t e = 0; e < ne; ++e) {
    sum += term(edges[e]);
    if (sum >= limit) return false;
  }
  return true;
}
VT_HD inline bool inside_tile_decided(const InsideEdge* edges, uint64_t ne, int32_t tu, int32_t tv,
                                      const InsideScale& s) {
  return inside_sum_under_turn(edges, ne, [&](const InsideEdge& e) { return inside_tile_bound(e, tu, tv, s); });
}
VT_HD inline bool inside_column_decided(const InsideEdge* edges, uint64_t ne, int64_t pu, int64_t pv,
                                        const InsideScale& s) {
  return inside_sum_under_turn(edges, ne, [&](const InsideEdge& e) { return inside_edge_azimuth(e, pu, pv, s); });
}

// w = c + B / 4pi >= 0.5, with B the boundary's solid angle sum.
VT_HD inline bool inside_winding_at_least_half(int64_t c, double b, double pi) {
  return static_cast<double>(c) + b / (4.0 * pi) >= 0.5;
}

// The boundary's solid angle sum B at a point, as its positive and negative terms (B = pos + neg).
// Along a column each edge's term keeps its sign (the strip swept from the edge along +w lies in a
// plane parallel to the column, on one side of it) and its magnitude grows with w (seen from
// p + t w, the strip is the strip seen from p moved down by t, which contains it). So pos(w) rises
// and neg(w) falls along the column, and over voxels [a, b] B lies within
// [pos(a) + neg(b), pos(b) + neg(a)].
struct InsideParts {
  double pos, neg;
};
// The order of the sums, shared so that the host and the device round alike: edge e goes to lane
// e % 32, each lane sums its edges in order, and the lanes are combined in a fixed tree (lane l
// adds lane l + 16, then l + 8, 4, 2, 1: a warp's shuffle-down reduction).
constexpr int kInsideLanes = 32;
template <class Edge>  // InsideEdge or InsideEdgeX: the same sums
VT_HD inline InsideParts inside_lane_parts(const Edge* edges, uint64_t ne, int lane, int64_t pu, int64_t pv, int64_t k,
                                           const InsideScale& s) {
  double pos = 0.0, neg = 0.0;
  for (uint64_t e = static_cast<uint64_t>(lane); e < ne; e += kInsideLanes) {
    const double o = inside_edge_solid_angle(edges[e], pu, pv, static_cast<double>(k) + 0.5, s);
    if (o > 0.0)
      pos += o;
    else
      neg += o;
  }
  return {pos, neg};
}
// inside_lane_parts of the approximate terms (inside_edge_solid_angle_approx): each part within
// kInsideApproxRel of pos - neg of the exact one's (and the sums' rounding, which the margin holds).
VT_HD inline InsideParts inside_lane_parts_approx(const InsideEdgeX* edges, uint64_t ne, int lane, int64_t pu,
                                                  int64_t pv, int64_t k, const InsideScale& s, double karea) {
  double pos = 0.0, neg = 0.0;
  for (uint64_t e = static_cast<uint64_t>(lane); e < ne; e += kInsideLanes) {
    const double o = inside_edge_solid_angle_approx(edges[e], pu, pv, static_cast<double>(k) + 0.5, s, karea);
    if (o > 0.0)
      pos += o;
    else
      neg += o;
  }
  return {pos, neg};
}
// The host's evaluation of B's parts at voxel k of column (pu, pv), in the lanes' order.
inline InsideParts inside_boundary_parts(const InsideEdge* edges, uint64_t ne, int64_t pu, int64_t pv, int64_t k,
                                         const InsideScale& s) {
  InsideParts p[kInsideLanes];
  for (int l = 0; l < kInsideLanes; ++l) p[l] = inside_lane_parts(edges, ne, l, pu, pv, k, s);
  for (int off = kInsideLanes / 2; off > 0; off /= 2)
    for (int l = 0; l < off; ++l) {
      p[l].pos = p[l].pos + p[l + off].pos;
      p[l].neg = p[l].neg + p[l + off].neg;
    }
  return p[0];
}

// The winding test over voxels [k_lo, k_hi) of a column whose crossings q0 <= q < q1 are given by
// crossing(q, &first_voxel_above, &sign) in ascending order: span(c, k0, k1) for each span between
// crossings (core/inside_tree.h inside_winding_walk), c its crossing sum.
template <class Span, class Crossing>
VT_HD inline void inside_winding_column(Span&& span, uint64_t q0, uint64_t q1, int64_t k_lo, int64_t k_hi,
                                        Crossing&& crossing) {
  int64_t c = 0, kq = 0;
  int32_t sign = 0;
  uint64_t q = q0;
  if (q < q1) crossing(q, &kq, &sign);
  for (int64_t k = k_lo; k < k_hi;) {
    while (q < q1 && kq <= k) {
      c += sign;
      if (++q < q1) crossing(q, &kq, &sign);
    }
    const int64_t next = q < q1 && kq < k_hi ? kq : k_hi;
    span(c, k, next);
    k = next;
  }
}

// ---- Narrow band (sdf) ------------------------------------------------------------------------

struct BandSetup {
  float width;  // band x the smallest voxel size (world units): active where distance < width
  Vec3f reach;  // width in voxels along each axis
  Vec3f vs;     // voxel size (float)
};

// A grid-space triangle's bounds along x, y, z.
VT_HD inline void band_tri_bounds(const Vec3f t[3], float lo[3], float hi[3]) {
  lo[0] = fminf(fminf(t[0].x, t[1].x), t[2].x);
  lo[1] = fminf(fminf(t[0].y, t[1].y), t[2].y);
  lo[2] = fminf(fminf(t[0].z, t[1].z), t[2].z);
  hi[0] = fmaxf(fmaxf(t[0].x, t[1].x), t[2].x);
  hi[1] = fmaxf(fmaxf(t[0].y, t[1].y), t[2].y);
  hi[2] = fmaxf(fmaxf(t[0].z, t[1].z), t[2].z);
}

// The voxels whose centre may lie within the band of a grid-space triangle (a superset):
// false when none is in the grid.
VT_HD inline bool band_voxel_range(const Vec3f t[3], const BandSetup& b, const Int3& dims, Int3* lo, Int3* hi) {
  float mn[3], mx[3];
  band_tri_bounds(t, mn, mx);
  const float r[3] = {b.reach.x, b.reach.y, b.reach.z};
  const int32_t d[3] = {dims.x, dims.y, dims.z};
  int32_t l[3], h[3];
  for (int a = 0; a < 3; ++a) {
    const double f = ceil(static_cast<double>(mn[a]) - static_cast<double>(r[a]) - 0.501);
    const double g = floor(static_cast<double>(mx[a]) + static_cast<double>(r[a]) - 0.499);
    if (!(f <= g) || g < 0.0 || f > static_cast<double>(d[a] - 1)) return false;
    l[a] = f < 0.0 ? 0 : static_cast<int32_t>(f);
    h[a] = g > static_cast<double>(d[a] - 1) ? d[a] - 1 : static_cast<int32_t>(g);
  }
  *lo = {l[0], l[1], l[2]};
  *hi = {h[0], h[1], h[2]};
  return true;
}

}  // namespace voxtile
