// The CPU's vectorised loops (core/vectorized.h): the shared scalar code's operations without its
// branches, a block of independent lanes at a time so that the compiler vectorises them (this file
// is compiled with -fno-math-errno, so that square roots need no library call, and
// -fno-trapping-math, so that operations may run on both sides of a select: the same IEEE results).
#include "core/vectorized.h"

#include <algorithm>
#include <cmath>

#include "core/targets.h"

namespace voxtile {

namespace {

// segment_distance's operations without its branches (the same bits).
inline float segment_distance_select(const Vec3f& a, const Vec3f& b) {
  const Vec3f e = sub(b, a);
  const float len2 = vt_dot(e, e);
  const float q = -vt_dot(a, e) / len2;  // (not taken where len2 is 0)
  float t = len2 > 0.0f ? q : 0.0f;
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  const Vec3f p{a.x + t * e.x, a.y + t * e.y, a.z + t * e.z};
  return std::sqrt(vt_dot(p, p));
}

// origin_triangle_distance's operations without its branches: both the plane's distance and the
// edges' are computed and one is selected, by the same tests (the same bits).
inline float origin_triangle_distance_select(const Vec3f& a, const Vec3f& b, const Vec3f& c) {
  const Vec3f n = cross(sub(b, a), sub(c, a));
  const float n2 = vt_dot(n, n);
  const Vec3f na{-a.x, -a.y, -a.z}, nb{-b.x, -b.y, -b.z}, nc{-c.x, -c.y, -c.z};
  const bool inside = (n2 > 0.0f) & (vt_dot(cross(sub(b, a), na), n) >= 0.0f) &
                      (vt_dot(cross(sub(c, b), nb), n) >= 0.0f) & (vt_dot(cross(sub(a, c), nc), n) >= 0.0f);
  const float plane = std::fabs(vt_dot(a, n)) / std::sqrt(n2);
  const float d0 = segment_distance_select(a, b), d1 = segment_distance_select(b, c),
              d2 = segment_distance_select(c, a);
  const float edges = d0 < d1 ? (d0 < d2 ? d0 : d2) : (d1 < d2 ? d1 : d2);
  return inside ? plane : edges;
}

// voxel_distance (core/targets.h) of kBandMinBlock voxels to t, the voxel of lane l given by
// voxel(l, &i, &j, &k): d[l]. Compiled into each version of its callers.
template <class Voxel>
__attribute__((always_inline)) inline void distance_block(const Vec3f& t0, const Vec3f& t1, const Vec3f& t2,
                                                          const Vec3f& vs, const Voxel& voxel, float* d) {
  for (int l = 0; l < kBandMinBlock; ++l) {
    int32_t i, j, k;
    voxel(l, &i, &j, &k);
    const float cx = static_cast<float>(i) + 0.5f, cy = static_cast<float>(j) + 0.5f, cz = static_cast<float>(k) + 0.5f;
    const Vec3f w0{(t0.x - cx) * vs.x, (t0.y - cy) * vs.y, (t0.z - cz) * vs.z};
    const Vec3f w1{(t1.x - cx) * vs.x, (t1.y - cy) * vs.y, (t1.z - cz) * vs.z};
    const Vec3f w2{(t2.x - cx) * vs.x, (t2.y - cy) * vs.y, (t2.z - cz) * vs.z};
    d[l] = origin_triangle_distance_select(w0, w1, w2);
  }
}

// band_min_voxels' loop.
__attribute__((always_inline)) inline void band_min_block(const Vec3f t[3], const int32_t base[3],
                                                          const uint16_t* offsets, int n, const Vec3f& vs,
                                                          float* best) {
  for (int c = 0; c < n; c += kBandMinBlock) {
    float d[kBandMinBlock];
    distance_block(
        t[0], t[1], t[2], vs,
        [&](int l, int32_t* i, int32_t* j, int32_t* k) {
          const int32_t o = offsets[c + l];  // voxel base + (o >> 6, o >> 3 & 7, o & 7)
          *i = base[0] + (o >> 6);
          *j = base[1] + ((o >> 3) & 7);
          *k = base[2] + (o & 7);
        },
        d);
    for (int l = 0; l < kBandMinBlock; ++l) {
      float& v = best[offsets[c + l]];
      v = d[l] < v ? d[l] : v;
    }
  }
}
// band_distance_lanes' loop.
__attribute__((always_inline)) inline void lanes_block(const Vec3f t[3], const int32_t* i, const int32_t* j,
                                                       const int32_t* k, const Vec3f& vs, float* d) {
  distance_block(
      t[0], t[1], t[2], vs,
      [&](int l, int32_t* vi, int32_t* vj, int32_t* vk) {
        *vi = i[l];
        *vj = j[l];
        *vk = k[l];
      },
      d);
}

#ifdef VT_X86_64_V4
// With AVX-512's 32 vector registers (AVX-512F alone gave the clone 16 and it spilled to the stack:
// the dragon's band at 128^3 on 2 cores 117 -> 106-108 ms, at 512^3 241-246 -> 220-223).
__attribute__((target("arch=x86-64-v4"))) void band_min_v4(const Vec3f t[3], const int32_t base[3],
                                                           const uint16_t* offsets, int n, const Vec3f& vs,
                                                           float* best) {
  band_min_block(t, base, offsets, n, vs, best);
}
__attribute__((target("arch=x86-64-v4"))) void lanes_v4(const Vec3f t[3], const int32_t* i, const int32_t* j,
                                                        const int32_t* k, const Vec3f& vs, float* d) {
  lanes_block(t, i, j, k, vs, d);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(VT_NO_TARGET_CLONES)
#define VT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VT_CLONES
#endif
VT_CLONES void band_min_any(const Vec3f t[3], const int32_t base[3], const uint16_t* offsets, int n, const Vec3f& vs,
                            float* best) {
  band_min_block(t, base, offsets, n, vs, best);
}
VT_CLONES void lanes_any(const Vec3f t[3], const int32_t* i, const int32_t* j, const int32_t* k, const Vec3f& vs,
                         float* d) {
  lanes_block(t, i, j, k, vs, d);
}

}  // namespace

void band_min_voxels(const Vec3f t[3], const int32_t base[3], const uint16_t* offsets, int n, const Vec3f& vs,
                     float* best) {
#ifdef VT_X86_64_V4
  if (cpu_has_x86_64_v4()) return band_min_v4(t, base, offsets, n, vs, best);
#endif
  band_min_any(t, base, offsets, n, vs, best);
}

void band_distance_lanes(const Vec3f t[3], const int32_t* i, const int32_t* j, const int32_t* k, const Vec3f& vs,
                         float* d) {
#ifdef VT_X86_64_V4
  if (cpu_has_x86_64_v4()) return lanes_v4(t, i, j, k, vs, d);
#endif
  lanes_any(t, i, j, k, vs, d);
}

InsideEdgeLanes inside_edge_lanes(const InsideEdge* edges, uint64_t ne) {
  InsideEdgeLanes l;
  inside_edge_lanes(l, edges, ne);
  return l;
}

void inside_edge_lanes(InsideEdgeLanes& l, const InsideEdge* edges, uint64_t ne) {
  // Each field written once (resized, not refilled: the CPU's winding test lists a column's and a
  // voxel's edges this way many times).
  const size_t n = size_t((ne + kInsideLanes - 1) / kInsideLanes * kInsideLanes);
  for (std::vector<int64_t>* v : {&l.au, &l.av, &l.bu, &l.bv}) v->resize(n);
  for (std::vector<double>* v : {&l.aw, &l.bw, &l.mult, &l.abs_mult}) v->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const bool real = i < ne;
    const InsideEdge e = real ? edges[i] : InsideEdge{};
    l.au[i] = real ? e.au : 0;
    l.av[i] = real ? e.av : 0;
    l.bu[i] = real ? e.bu : 0;
    l.bv[i] = real ? e.bv : 0;
    l.aw[i] = real ? static_cast<double>(e.aw) : 0.0;
    l.bw[i] = real ? static_cast<double>(e.bw) : 0.0;
    l.mult[i] = real ? static_cast<double>(e.mult) : 0.0;
    l.abs_mult[i] = real ? static_cast<double>(e.mult < 0 ? -e.mult : e.mult) : 0.0;
  }
  l.count = size_t(ne);
}

bool cpu_has_x86_64_v4() {
#ifdef VT_X86_64_V4
  static const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512cd");
  return v4;
#else
  return false;
#endif
}

namespace {

// inside_atan's operations without its branches: the three range reductions' values selected.
inline double inside_atan_select(double x) {
  const double kT3P8 = 2.41421356237309504880, kMoreBits = 6.123233995736765886130e-17;
  const bool big = x > kT3P8, small = x <= 0.66;
  const double y = big ? 1.57079632679489661923 : (small ? 0.0 : 0.78539816339744830962);
  const double flag_bits = big ? kMoreBits : (small ? 0.0 : 0.5 * kMoreBits);
  const double xb = -1.0 / x, xm = (x - 1.0) / (x + 1.0);
  x = big ? xb : (small ? x : xm);
  return y + (inside_atan_reduced(x) + flag_bits);
}
// inside_atan2's.
inline double inside_atan2_select(double y, double x) {
  const double kPi = 3.14159265358979323846;
  const double ay = y < 0 ? -y : y, ax = x < 0 ? -x : x;
  const double axis = y > 0 ? 0.5 * kPi : (y < 0 ? -0.5 * kPi : 0.0);
  double a = inside_atan_select(ay / ax);
  a = x < 0 ? kPi - a : a;
  a = y < 0 ? -a : a;
  return ax == 0.0 ? axis : a;
}
// What inside_solid_angle's term and its approximate form share, for an edge given by its fields: d,
// the edge function at the column (en) and the term where it is 0 (on_edge).
struct EdgeTermParts {
  double d;
  int64_t en;
  double on_edge;
};
inline EdgeTermParts edge_term_parts_select(int64_t au, int64_t av, int64_t bu, int64_t bv, double aw, double bw,
                                            int64_t pu, int64_t pv, double pw, const InsideScale& s) {
  const double kPi = 3.14159265358979323846;
  const double inv = 1.0 / kInsideScale;
  const double ax = static_cast<double>(au - pu) * inv * s.su, ay = static_cast<double>(av - pv) * inv * s.sv;
  const double bx = static_cast<double>(bu - pu) * inv * s.su, by = static_cast<double>(bv - pv) * inv * s.sv;
  const double az = (aw - pw) * s.sw, bz = (bw - pw) * s.sw;
  const double la = std::sqrt((ax * ax + ay * ay) + az * az), lb = std::sqrt((bx * bx + by * by) + bz * bz);
  const double d = ((la * lb + ((ax * bx + ay * by) + az * bz)) + az * lb) + bz * la;
  // inside_side(0, ...): the sign of the gradient
  const int64_t gu = av - bv, gv = bu - au;
  const int64_t sg = gu != 0 ? gu : gv;
  const double side = static_cast<double>((sg > 0) - (sg < 0));
  return {d, inside_edge(au, av, bu, bv, pu, pv), d < 0 ? 2.0 * kPi * side : 0.0};
}
// inside_edge_solid_angle's, for an edge given by its fields.
inline double inside_edge_solid_angle_select(int64_t au, int64_t av, int64_t bu, int64_t bv, double aw, double bw,
                                             double mult, int64_t pu, int64_t pv, double pw, const InsideScale& s) {
  const double inv = 1.0 / kInsideScale;
  const EdgeTermParts t = edge_term_parts_select(au, av, bu, bv, aw, bw, pu, pv, pw, s);
  const double n = static_cast<double>(t.en) * (inv * inv) * (s.su * s.sv);
  const double omega = t.en == 0 ? t.on_edge : 2.0 * inside_atan2_select(n, t.d);
  return omega * mult;
}
// inside_edge_solid_angle_approx's (core/inside.h), for an edge given by its fields: the same
// operations, so the same bits (a tie lane's angle, perhaps 0 / 0, is not taken).
inline double inside_edge_solid_angle_approx_select(int64_t au, int64_t av, int64_t bu, int64_t bv, double aw,
                                                    double bw, double mult, int64_t pu, int64_t pv, double pw,
                                                    const InsideScale& s, double karea) {
  const EdgeTermParts p = edge_term_parts_select(au, av, bu, bv, aw, bw, pu, pv, pw, s);
  const double angle = inside_approx_angle(p.en, p.d, karea);
  return (p.en == 0 ? p.on_edge : angle) * mult;
}

// inside_edge_azimuth's.
inline double inside_edge_azimuth_select(int64_t au, int64_t av, int64_t bu, int64_t bv, double abs_mult, int64_t pu,
                                         int64_t pv, const InsideScale& s) {
  const double inv = 1.0 / kInsideScale;
  const double ax = static_cast<double>(au - pu) * inv * s.su, ay = static_cast<double>(av - pv) * inv * s.sv;
  const double bx = static_cast<double>(bu - pu) * inv * s.su, by = static_cast<double>(bv - pv) * inv * s.sv;
  double cr = ax * by - ay * bx;
  cr = cr < 0 ? -cr : cr;
  return inside_atan2_select(cr, ax * bx + ay * by) * abs_mult;
}

}  // namespace

#ifdef VT_X86_64_V4
__attribute__((target("arch=x86-64-v4")))
#endif
bool inside_column_decided_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, const InsideScale& s) {
  // inside_sum_under_turn: the terms in edge order, summed one by one until the limit (the terms of
  // a block are evaluated together, the sum is the same).
  const double limit = kInsideDecidedTurn * 3.14159265358979323846;
  const InsideScale sc = s;
  double sum = 0;
  for (size_t b = 0; b < e.count; b += kInsideLanes) {
    const int64_t *au = e.au.data() + b, *av = e.av.data() + b, *bu = e.bu.data() + b, *bv = e.bv.data() + b;
    const double* abs_mult = e.abs_mult.data() + b;
    double t[kInsideLanes];
    for (int l = 0; l < kInsideLanes; ++l)
      t[l] = inside_edge_azimuth_select(au[l], av[l], bu[l], bv[l], abs_mult[l], pu, pv, sc);
    const size_t real = std::min<size_t>(kInsideLanes, e.count - b);
    for (size_t l = 0; l < real; ++l) {
      sum += t[l];
      if (sum >= limit) return false;
    }
  }
  return true;
}

namespace {
// Lane l sums edges l, l + 32, ... in order, as inside_lane_parts; an edge past the real ones adds
// +0.0 to both (which leaves either sum as it is: neither is ever -0.0); the lanes are combined as
// inside_boundary_parts combines them. term(au, av, bu, bv, aw, bw, mult): an edge's term.
template <class Term>
__attribute__((always_inline)) inline InsideParts lane_sums(const InsideEdgeLanes& e, Term&& term) {
  double pos[kInsideLanes] = {}, neg[kInsideLanes] = {};
  for (size_t b = 0; b < e.au.size(); b += kInsideLanes) {
    const int64_t *au = e.au.data() + b, *av = e.av.data() + b, *bu = e.bu.data() + b, *bv = e.bv.data() + b;
    const double *aw = e.aw.data() + b, *bw = e.bw.data() + b, *mult = e.mult.data() + b;
    double o[kInsideLanes];
    for (int l = 0; l < kInsideLanes; ++l) o[l] = term(au[l], av[l], bu[l], bv[l], aw[l], bw[l], mult[l]);
    const size_t real = e.count - std::min(e.count, b);  // lanes with an edge
    for (int l = 0; l < kInsideLanes; ++l) {
      const bool use = size_t(l)<real, positive = o[l]> 0.0;
      pos[l] += use & positive ? o[l] : 0.0;
      neg[l] += use & !positive ? o[l] : 0.0;
    }
  }
  for (int off = kInsideLanes / 2; off > 0; off /= 2)
    for (int l = 0; l < off; ++l) {
      pos[l] = pos[l] + pos[l + off];
      neg[l] = neg[l] + neg[l + off];
    }
  return {pos[0], neg[0]};
}
}  // namespace

#ifdef VT_X86_64_V4
__attribute__((target("arch=x86-64-v4")))
#endif
InsideParts
inside_boundary_parts_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, int64_t k, const InsideScale& s) {
  const double pw = static_cast<double>(k) + 0.5;
  const InsideScale sc{s.su, s.sv, s.sw};
  return lane_sums(e, [&](int64_t au, int64_t av, int64_t bu, int64_t bv, double aw, double bw, double mult) {
    return inside_edge_solid_angle_select(au, av, bu, bv, aw, bw, mult, pu, pv, pw, sc);
  });
}

#ifdef VT_X86_64_V4
__attribute__((target("arch=x86-64-v4")))
#endif
InsideParts
inside_boundary_parts_approx_vectorized(const InsideEdgeLanes& e, int64_t pu, int64_t pv, int64_t k,
                                        const InsideScale& s) {
  const double pw = static_cast<double>(k) + 0.5;
  const InsideScale sc{s.su, s.sv, s.sw};
  const double karea = 1.0 / (s.su * s.sv);
  return lane_sums(e, [&](int64_t au, int64_t av, int64_t bu, int64_t bv, double aw, double bw, double mult) {
    return inside_edge_solid_angle_approx_select(au, av, bu, bv, aw, bw, mult, pu, pv, pw, sc, karea);
  });
}

void inside_far_lanes(InsideFarLanes& l, const InsideNode* nodes, const uint32_t* index, size_t n) {
  const size_t padded = (n + kInsideLanes - 1) / kInsideLanes * kInsideLanes;
  for (std::vector<double>* v : {&l.cu, &l.cv, &l.cw, &l.mu, &l.mv, &l.mw, &l.r, &l.ar2, &l.m2}) v->resize(padded);
  for (size_t q = 0; q < padded; ++q) {
    if (q < n) {
      const InsideNode& x = nodes[index[q]];
      l.cu[q] = x.c[0], l.cv[q] = x.c[1], l.cw[q] = x.c[2];
      l.mu[q] = x.m[0], l.mv[q] = x.m[1], l.mw[q] = x.m[2];
      l.r[q] = x.r, l.ar2[q] = x.ar2, l.m2[q] = x.m2;
    } else {  // terms 0 / (a large positive number)
      l.cu[q] = l.cv[q] = l.cw[q] = 1e30;
      l.mu[q] = l.mv[q] = l.mw[q] = l.r[q] = l.ar2[q] = l.m2[q] = 0.0;
    }
  }
}

#ifdef VT_X86_64_V4
__attribute__((target("arch=x86-64-v4")))
#endif
InsideFar
inside_far_vectorized(const InsideFarLanes& l, const InsideColumn& col, double wm, double h) {
  double d[kInsideLanes] = {}, r[kInsideLanes] = {}, mag[kInsideLanes] = {};
  const double px = col.px, py = col.py;
  for (size_t b = 0; b < l.cu.size(); b += kInsideLanes)
    for (int q = 0; q < kInsideLanes; ++q) {  // inside_far_add
      const size_t i = b + size_t(q);
      const double du = l.cu[i] - px, dv = l.cv[i] - py, dz = l.cw[i] - wm;
      const double duv2 = du * du + dv * dv, d2 = duv2 + dz * dz, dist = std::sqrt(d2);
      const double term = ((l.mu[i] * du + l.mv[i] * dv) + l.mw[i] * dz) / (d2 * dist);
      const double az = (dz < 0.0 ? -dz : dz) - h, ez = az > 0.0 ? az : 0.0;
      const double rho = std::sqrt(duv2 + ez * ez), rho3 = rho * rho * rho, g = rho - l.r[i];
      d[q] += term;
      mag[q] += term < 0.0 ? -term : term;
      r[q] += l.m2[i] * h / rho3 + l.ar2[i] / (g * g * g);
    }
  InsideFar f{0.0, 0.0, 0.0};
  for (int q = 0; q < kInsideLanes; ++q) {
    f.d += d[q];
    f.r += r[q];
    f.mag += mag[q];
  }
  return f;
}

float voxel_distance_select(const Vec3f t[3], int32_t i, int32_t j, int32_t k, const Vec3f& vs) {
  const float cx = static_cast<float>(i) + 0.5f, cy = static_cast<float>(j) + 0.5f, cz = static_cast<float>(k) + 0.5f;
  Vec3f w[3];
  for (int q = 0; q < 3; ++q) w[q] = {(t[q].x - cx) * vs.x, (t[q].y - cy) * vs.y, (t[q].z - cz) * vs.z};
  return origin_triangle_distance_select(w[0], w[1], w[2]);
}

}  // namespace voxtile
