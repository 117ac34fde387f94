// The sdf band by nearest-triangle search, for wide bands and `--band all` (every voxel's distance):
// a bounding-volume tree over the grid-space triangles, walked from each voxel centre nearest box
// first. The band's pairs (core/inside.cpp, kernels/solid/solid.cu) list every brick of every
// triangle's band box, work that grows with the width cubed (the bunny at 128^3 with a band of 64:
// 166 s and 5 GB on 2 cores); a voxel's search visits the boxes near it only.
//
// The value is band_min's over every triangle (the pairs' value: Inside.BandIsEveryVoxelsMinimum-
// OverAllTriangles), bit for bit: a node is passed over only where band_box_culled would pass over
// each of its triangles at the voxel's least distance so far (the node's box distance, in the same
// float operations, is at most each triangle's box distance, its margins k2, k2e at least each
// triangle's), so each has voxel_distance >= that distance and leaves the minimum as it is; a leaf's
// triangles go through band_min itself (its band box test, then the distance). (Long triangles are held
// by pieces, each with its part's box: band_pieces below says why that leaves the bits alone.) Triangles for which no
// margin holds (their angle's sine at vertex 0 under 2^-16:
// band_bound) are not in the tree; every voxel takes them. The minimum does not depend on the order
// of the distances, so the walk's order, its start (a neighbour's nearest triangle) and the device
// leave the bits alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/grid_spec.h"
#include "core/hd.h"
#include "core/inside.h"
#include "core/inside_grid.h"
#include "core/mesh.h"
#include "core/overlap.h"
#include "core/vec.h"

namespace voxtile {

// A child of an inner node: its box and margins (the largest of its triangles' band_bound k2, k2e),
// and either an inner node's index or a leaf's triangles.
struct BandRef {
  uint32_t index;  // an inner node (count 0), or a leaf's first triangle in the tree's order
  uint32_t count;  // a leaf's triangles (1 to 4); 0 for an inner node
};
// A box and margins: a reference's (its piece's box and its triangle's band_bound k2, k2e), a
// leaf's from its references, an inner node's from its children's.
struct BandNodeBox {
  float lo[3], hi[3];
  float k2, k2e;
};
// An inner node holds its two children's boxes, so a walk loads each node once.
struct BandNode {
  float lo[2][3], hi[2][3];  // grid-space bounds of each child's triangles
  float k2[2], k2e[2];
  BandRef child[2];
};
static_assert(sizeof(BandNode) == 80, "BandNode is five 16-byte loads");

struct BandTreeView {
  const BandNode* nodes = nullptr;
  BandRef root{0, 0};  // the whole tree: its root node, or a leaf when it holds up to 4 triangles
  float root_lo[3] = {0, 0, 0}, root_hi[3] = {0, 0, 0}, root_k2 = 0, root_k2e = 0;
  bool empty = true;             // no triangle in the tree
  uint32_t num_tris = 0;         // the tree's references (triangles, or pieces of them: band_pieces)
  const Vec3f* tris = nullptr;   // 3 vertices per reference: its triangle's (grid space), in the tree's order
  const BandNodeBox* boxes = nullptr;  // per reference: its piece's box and its triangle's margins
  const Vec3f* loose = nullptr;  // 3 per triangle: those no margin holds for, taken at every voxel
  uint32_t num_loose = 0;
};

// The tree's deepest path is under this many nodes (a balanced split down to leaves of 4 triangles:
// 2^40 triangles), and a walk's stack holds at most one entry per level.
constexpr int kBandTreeStack = 40;
constexpr uint32_t kBandNone = 0xffffffffu;

// The voxels that walk the tree together (band_search_lanes): the kN held here (on the GPU a thread
// holds one or two and the warp's 32 threads walk together; the CPU walks 32 in one thread), each lane's voxel
// (i, j, k), whether it has one, its least distance so far and the tree-order index of the triangle
// that lowered it last. Group says whether a test passes in any lane of the walk beyond those held
// here, and sums a count over them (BandSolo: none beyond; the GPU's warp: its threads).
struct BandSolo {
  VT_HD static bool any(bool x) { return x; }
  VT_HD static int sum(int x) { return x; }
};
template <int N, class G = BandSolo>
struct BandLanes {
  static constexpr int kN = N;
  using Group = G;
  int32_t i[N], j[N], k[N];
  int32_t active[N];  // 1: the lane has a voxel (a word, as its other fields: its tests vectorise)
  float best[N];
  uint32_t arg[N];
  // A leaf's triangle u (tri: its vertices, lo, hi: its bounds, k2, k2e: the leaf's margins): band_min
  // in each lane whose box test keeps it. (A type that derives from this one may take the lanes'
  // distances otherwise, to the same bits: the CPU's, vectorised.)
  VT_HD void take(const Vec3f* tri, const float lo[3], const float hi[3], uint32_t u, const BandSetup& bs, float k2,
                  float k2e) {
    for (int l = 0; l < N; ++l) {
      if (!active[l] || band_box_beyond(lo, hi, i[l], j[l], k[l], bs.vs, best[l], k2, k2e)) continue;
      const float d = band_min(tri, lo, hi, i[l], j[l], k[l], bs, best[l]);
      if (d < best[l]) {
        best[l] = d;
        arg[l] = u;
      }
    }
  }
};

// band_min over every triangle of the tree and the loose ones for each lane's voxel, from its
// `best` (the width, or a triangle's band_min there); each lane's `arg` becomes the tree-order index
// of the triangle that lowered it last (unchanged when none did). The lanes walk together: a node's
// record is read once for all of them, and a child is walked unless band_beyond (band_box_culled's
// test, with the child's box and margins) passes over it for every lane at that lane's least
// distance so far, the nearer box (by the lanes' vote) first; each box's distance is taken once per
// lane, and tested again when its turn comes (the least distances may have fallen since). At a leaf
// each lane takes band_min of the triangles its own box test keeps. A lane thus takes band_min of a
// superset of the triangles a walk of its own would have taken, and the minimum does not depend on
// which other triangles or in what order: the same bits for any grouping of the lanes. (H200, `--band
// all`: a warp's 32 voxels walking together took half the time of a walk per thread, the same bits;
// scripts/bench-results/band-warp-h200-2026-11-29.md.)
template <class L>
VT_HD inline void band_search_lanes(const BandTreeView& t, const BandSetup& bs, L& p) {
  constexpr int N = L::kN;
  using G = typename L::Group;
  for (int l = 0; l < N; ++l)
    if (p.active[l])
      for (uint32_t q = 0; q < t.num_loose; ++q)
        p.best[l] = band_min(&t.loose[3 * q], p.i[l], p.j[l], p.k[l], bs, p.best[l]);
  if (t.empty) return;
  // Each lane's squared distance to a box (a lane without a voxel: infinite, beyond every box).
  auto box_d2 = [&](const float lo[3], const float hi[3], float(&d2)[N]) {
    for (int l = 0; l < N; ++l) {
      const float d = band_box_d2(lo, hi, p.i[l], p.j[l], p.k[l], bs.vs);
      d2[l] = p.active[l] ? d : INFINITY;
    }
  };
  // Whether any lane of the walk keeps a box at distances d2 with margins k2, k2e.
  auto kept = [&](const float(&d2)[N], float k2, float k2e) {
    bool any = false;  // (no early exit: the CPU's lanes' tests vectorise)
    for (int l = 0; l < N; ++l) any |= p.active[l] & !band_beyond(d2[l], p.best[l], k2, k2e);
    return G::any(any);
  };
  // The stack: a child's reference and margins (the same for every lane) and each lane's distance.
  BandRef sref[kBandTreeStack];
  float sk2[kBandTreeStack], sk2e[kBandTreeStack], sd2[kBandTreeStack][N];
  sref[0] = t.root;
  sk2[0] = t.root_k2;
  sk2e[0] = t.root_k2e;
  box_d2(t.root_lo, t.root_hi, sd2[0]);
  int sp = 1;
  while (sp > 0) {
    --sp;
    if (!kept(sd2[sp], sk2[sp], sk2e[sp])) continue;
    BandRef r = sref[sp];
    for (;;) {
      if (r.count) {
        for (uint32_t u = r.index; u < r.index + r.count; ++u) {
          const BandNodeBox& b = t.boxes[u];
          p.take(&t.tris[3 * u], b.lo, b.hi, u, bs, b.k2, b.k2e);
        }
        break;
      }
      const BandNode& nd = t.nodes[r.index];
      float d0[N], d1[N];
      box_d2(nd.lo[0], nd.hi[0], d0);
      box_d2(nd.lo[1], nd.hi[1], d1);
      const bool keep0 = kept(d0, nd.k2[0], nd.k2e[0]), keep1 = kept(d1, nd.k2[1], nd.k2e[1]);
      if (!keep0 && !keep1) break;
      int n = keep0 ? 0 : 1;  // the child walked now
      if (keep0 && keep1) {   // the nearer first (by the lanes' vote), the farther on the stack
        int nearer0 = 0, nearer1 = 0;
        for (int l = 0; l < N; ++l) {
          nearer0 += p.active[l] & (d0[l] <= d1[l]);
          nearer1 += p.active[l] & (d0[l] > d1[l]);
        }
        n = G::sum(nearer0) >= G::sum(nearer1) ? 0 : 1;
        const int f = 1 - n;
        sref[sp] = nd.child[f];
        sk2[sp] = nd.k2[f];
        sk2e[sp] = nd.k2e[f];
        for (int l = 0; l < N; ++l) sd2[sp][l] = f == 0 ? d0[l] : d1[l];
        ++sp;
      }
      r = nd.child[n];
    }
  }
}

// A lane's start at voxel (i, j, k): band_min of the triangle `arg` (kBandNone: the width), the
// triangle nearest the lane's voxel before (a column's voxels walked one after another start from
// the one below's nearest).
VT_HD inline float band_search_start(const BandTreeView& t, uint32_t arg, int32_t i, int32_t j, int32_t k,
                                     const BandSetup& bs) {
  return arg == kBandNone ? bs.width : band_min(&t.tris[3 * arg], i, j, k, bs, bs.width);
}

// The tree's build, shared by the host and the GPU (kernels/solid/solid.cu), which build the same
// tree: its references (a triangle, or pieces of a long or large one: band_pieces) in the Morton
// order of their boxes' centres (ties by reference: the mesh's order, a triangle's pieces in
// band_pieces' order; the triangles no margin holds for last, in the mesh's order: the loose ones),
// halved down to leaves of up to 4.
//
// Pieces. A long thin triangle across the grid's diagonal has a box of mostly empty space: every voxel
// in it found the triangle near by its box, so on CAD slivers (fans and side quads from end to end)
// the walk took most of the mesh's triangles at each voxel, 10-60x slower than the pairs. A triangle
// longer than the piece length along its bounds' longest axis a1 is cut into up to
// kBandPiecesPerAxis slabs across a1, and, where also longer along the next axis a2, each slab's part
// into cells across a2; each non-empty part is a reference with the part's box (the clipped
// polygon's, taken in double, grown by a margin over the clipping's rounding, rounded outwards to
// float and kept within the triangle's bounds and the cut planes). The boxes hold the parts, which
// make up the triangle, so a voxel's distance to the triangle is at least the least of its distances
// to the pieces' boxes: a walk that passes over every piece (band_beyond at its least distance) passes
// over a triangle that band_box_culled would, and a leaf takes band_min of the whole triangle (its
// value, whichever piece led there; twice is the same minimum). A piece's box lies within the
// triangle's, so a triangle the walk takes is one the pairs take too: the same bits.
#ifndef VT_BAND_PIECE  // (measurements: another piece length)
#define VT_BAND_PIECE 8.0f
#endif
constexpr float kBandPieceVoxels = VT_BAND_PIECE;  // the piece length (grid units) before band_piece_length
constexpr uint32_t kBandPiecesPerAxis = 64;        // at most, along each of a1 and a2
// A convex polygon (a triangle cut by up to four planes: at most 7 vertices).
struct BandPoly {
  int n;
  double p[8][3];
};
// The part of q with p[a] >= v (above) or <= v, its cut points on the plane exactly v.
VT_HD inline void band_clip(const BandPoly& q, int a, double v, bool above, BandPoly& out) {
  out.n = 0;
  for (int e = 0; e < q.n; ++e) {
    const double* c = q.p[e];
    const double* d = q.p[e + 1 == q.n ? 0 : e + 1];
    const bool cin = above ? c[a] >= v : c[a] <= v, din = above ? d[a] >= v : d[a] <= v;
    if (cin && out.n < 8) {
      for (int b = 0; b < 3; ++b) out.p[out.n][b] = c[b];
      ++out.n;
    }
    if (cin != din && out.n < 8) {
      const double t = (v - c[a]) / (d[a] - c[a]);
      for (int b = 0; b < 3; ++b) out.p[out.n][b] = b == a ? v : c[b] + t * (d[b] - c[b]);
      ++out.n;
    }
  }
}
// The float nearest below / above x.
VT_HD inline float band_down(double x) {
  const float f = static_cast<float>(x);
  return static_cast<double>(f) > x ? nextafterf(f, -INFINITY) : f;
}
VT_HD inline float band_up(double x) {
  const float f = static_cast<float>(x);
  return static_cast<double>(f) < x ? nextafterf(f, INFINITY) : f;
}
// Cut s of n across [lo, hi] (the ends exactly lo and hi).
VT_HD inline double band_cut(double lo, double hi, uint32_t n, uint32_t s) {
  return s == 0 ? lo : s == n ? hi : lo + (hi - lo) * static_cast<double>(s) / static_cast<double>(n);
}
// Cuts along an extent e at the piece length.
VT_HD inline uint32_t band_cuts(double e, float piece) {
  if (!(e > static_cast<double>(piece))) return 1;
  const double n = ceil(e / static_cast<double>(piece));
  return n >= static_cast<double>(kBandPiecesPerAxis) ? kBandPiecesPerAxis : static_cast<uint32_t>(n);
}
// The axes a triangle with bounds lo, hi is cut across at the piece length (a1 the bounds' longest,
// a2 the next; ties by the lower axis) and the cuts along each (n2 is 1 where n1 is).
struct BandSplit {
  int a1, a2;
  uint32_t n1, n2;
};
VT_HD inline BandSplit band_split(const float lo[3], const float hi[3], float piece) {
  double ext[3];
  for (int a = 0; a < 3; ++a) ext[a] = static_cast<double>(hi[a]) - static_cast<double>(lo[a]);
  BandSplit s;
  s.a1 = 0;
  for (int a = 1; a < 3; ++a)
    if (ext[a] > ext[s.a1]) s.a1 = a;
  s.a2 = s.a1 == 0 ? 1 : 0;
  for (int a = 0; a < 3; ++a)
    if (a != s.a1 && ext[a] > ext[s.a2]) s.a2 = a;
  s.n1 = band_cuts(ext[s.a1], piece);
  s.n2 = s.n1 > 1 ? band_cuts(ext[s.a2], piece) : 1;
  return s;
}
// At least a triangle's pieces (its slabs times its cells), without clipping: band_piece_length's bound.
VT_HD inline uint32_t band_piece_bound(const float lo[3], const float hi[3], float piece) {
  const BandSplit s = band_split(lo, hi, piece);
  return s.n1 * s.n2;
}
// The pieces of a triangle (tri, its bounds lo, hi from band_tri_bounds, not loose) at the piece
// length: emit(lo, hi) for each piece's box in order when `boxes`; returns their count. One piece,
// the triangle's own bounds, where no axis is longer than the piece length.
template <class Emit>
VT_HD inline uint32_t band_pieces(const Vec3f tri[3], const float lo[3], const float hi[3], float piece, bool boxes,
                                  Emit&& emit) {
  const BandSplit sp = band_split(lo, hi, piece);
  const int a1 = sp.a1, a2 = sp.a2;
  const uint32_t n1 = sp.n1, n2 = sp.n2;
  if (n1 == 1) {
    if (boxes) emit(lo, hi);
    return 1;
  }
  double m = 1.0;  // the margin: 2^-30 of the largest coordinate (the clipping's rounding is ~2^-50 of it)
  for (int a = 0; a < 3; ++a) m = fmax(m, fmax(fabs(static_cast<double>(lo[a])), fabs(static_cast<double>(hi[a]))));
  const double eps = m * 9.313225746154785e-10;
  BandPoly t;
  t.n = 3;
  for (int q = 0; q < 3; ++q) {
    t.p[q][0] = tri[q].x;
    t.p[q][1] = tri[q].y;
    t.p[q][2] = tri[q].z;
  }
  // The box of polygon q grown by eps, within the box b (the part's known bounds); b itself where
  // the clipping left nothing (a part within rounding of a cut).
  auto part_box = [&](const BandPoly& q, const double(&b)[2][3], double(&out)[2][3]) {
    for (int a = 0; a < 3; ++a) {
      double l = INFINITY, h = -INFINITY;
      for (int v = 0; v < q.n; ++v) {
        l = fmin(l, q.p[v][a]);
        h = fmax(h, q.p[v][a]);
      }
      out[0][a] = q.n ? fmax(b[0][a], l - eps) : b[0][a];
      out[1][a] = q.n ? fmin(b[1][a], h + eps) : b[1][a];
    }
  };
  auto put = [&](const double(&b)[2][3]) {
    float l[3], h[3];
    for (int a = 0; a < 3; ++a) {
      l[a] = band_down(b[0][a]);
      h[a] = band_up(b[1][a]);
    }
    emit(l, h);
  };
  uint32_t count = 0;
  const double lo1 = lo[a1], hi1 = hi[a1], lo2 = lo[a2], hi2 = hi[a2];
  for (uint32_t s = 0; s < n1; ++s) {
    const double x0 = band_cut(lo1, hi1, n1, s), x1 = band_cut(lo1, hi1, n1, s + 1);
    BandPoly p0, p1;
    band_clip(t, a1, x0, true, p0);
    band_clip(p0, a1, x1, false, p1);
    double tb[2][3], sb[2][3];  // the triangle's bounds within the slab, the slab's part's box
    for (int a = 0; a < 3; ++a) {
      tb[0][a] = a == a1 ? x0 : static_cast<double>(lo[a]);
      tb[1][a] = a == a1 ? x1 : static_cast<double>(hi[a]);
    }
    part_box(p1, tb, sb);
    if (n2 == 1) {
      ++count;
      if (boxes) put(sb);
      continue;
    }
    // The cells across a2 that the slab's part (within sb) may reach.
    auto cell = [&](double y) {
      const double c = floor((y - lo2) / (hi2 - lo2) * static_cast<double>(n2));
      return c < 0.0 ? 0u : (c >= static_cast<double>(n2 - 1) ? n2 - 1 : static_cast<uint32_t>(c));
    };
    const uint32_t c0 = cell(sb[0][a2]), c1 = cell(sb[1][a2]);
    count += c1 - c0 + 1;
    if (!boxes) continue;
    for (uint32_t c = c0; c <= c1; ++c) {
      const double y0 = band_cut(lo2, hi2, n2, c), y1 = band_cut(lo2, hi2, n2, c + 1);
      BandPoly p2, p3;
      band_clip(p1, a2, y0, true, p2);
      band_clip(p2, a2, y1, false, p3);
      double cb[2][3], pb[2][3];
      for (int a = 0; a < 3; ++a) {
        cb[0][a] = a == a2 ? fmax(sb[0][a], y0) : sb[0][a];
        cb[1][a] = a == a2 ? fmin(sb[1][a], y1) : sb[1][a];
      }
      part_box(p3, cb, pb);
      put(pb);
    }
  }
  return count;
}
// The references the tree may hold for nt triangles (band_piece_length).
inline uint64_t band_piece_budget(uint64_t nt) {
  const uint64_t b = 4 * nt > (uint64_t(1) << 22) ? 4 * nt : (uint64_t(1) << 22);
  return b < (uint64_t(1) << 31) ? b : (uint64_t(1) << 31);
}
// The piece length for a mesh whose pieces count(piece) gives, and bound(piece) bounds from above
// without clipping (sums over its triangles of band_pieces and band_piece_bound: the same on every
// device): `start` (kBandPieceVoxels) where its pieces fit band_piece_budget(nt), else the least
// start x 2^k, k 1 to 40, whose bound fits (found by halving the range: a few passes even where
// huge triangles keep 64 cuts a side over many lengths), else INFINITY (no triangle cut). *refs
// gets the count.
template <class Count, class Bound>
inline float band_piece_length(uint64_t nt, Count&& count, Bound&& bound, uint64_t* refs,
                               float start = kBandPieceVoxels) {
  const uint64_t budget = band_piece_budget(nt);
  *refs = count(start);
  if (*refs <= budget) return start;
  int lo = 0, hi = 41;  // bound(start) >= the count > budget; 41 stands for INFINITY
  while (hi - lo > 1) {
    const int m = (lo + hi) / 2;
    if (bound(std::ldexp(start, m)) <= budget)
      hi = m;
    else
      lo = m;
  }
  const float piece = hi == 41 ? INFINITY : std::ldexp(start, hi);
  *refs = count(piece);
  return piece;
}

// A reference's sort key: the Morton code of its box's centre (l, h) in the mesh's grid-space box
// lo, hi (21 bits per axis), or ~0 where no margin holds for its triangle (k2, k2e from band_bound:
// loose).
VT_HD inline bool band_loose(float k2, float k2e) { return !(k2 < INFINITY && k2e < INFINITY); }
VT_HD inline uint64_t band_tree_key(const float l[3], const float h[3], const float lo[3], const float hi[3], float k2,
                                    float k2e) {
  if (band_loose(k2, k2e)) return ~uint64_t(0);
  uint64_t key = 0;
  for (int a = 0; a < 3; ++a) {
    const double ext = double(hi[a]) - double(lo[a]);
    double c = ext > 0.0 ? ((0.5 * (double(l[a]) + double(h[a])) - double(lo[a])) / ext) : 0.0;
    c = c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);  // (NaN stays NaN: its conversion below is not reached for finite meshes)
    key |= spread3(uint64_t(c * 2097151.0)) << a;
  }
  return key;
}
// A leaf's box and margins from its references' (boxes, in the tree's order).
VT_HD inline BandNodeBox band_leaf_box(const BandNodeBox* boxes, uint32_t first, uint32_t count) {
  BandNodeBox n;
  for (int a = 0; a < 3; ++a) {
    n.lo[a] = INFINITY;
    n.hi[a] = -INFINITY;
  }
  n.k2 = n.k2e = 0.0f;
  for (uint32_t u = first; u < first + count; ++u) {
    const BandNodeBox& b = boxes[u];
    for (int a = 0; a < 3; ++a) {
      n.lo[a] = vt_minf(n.lo[a], b.lo[a]);
      n.hi[a] = vt_maxf(n.hi[a], b.hi[a]);
    }
    n.k2 = vt_maxf(n.k2, b.k2);
    n.k2e = vt_maxf(n.k2e, b.k2e);
  }
  return n;
}
VT_HD inline BandNodeBox band_join(const BandNodeBox& l, const BandNodeBox& r) {
  BandNodeBox n;
  for (int a = 0; a < 3; ++a) {
    n.lo[a] = vt_minf(l.lo[a], r.lo[a]);
    n.hi[a] = vt_maxf(l.hi[a], r.hi[a]);
  }
  n.k2 = vt_maxf(l.k2, r.k2);
  n.k2e = vt_maxf(l.k2e, r.k2e);
  return n;
}
// The tree's shape for `kept` triangles depends on their count alone: its nodes in pre-order, an
// inner node's first child following it. Halving keeps the counts of one depth within one of each
// other, so the sizes of the subtrees of each depth (the nodes they hold) make a small table, from
// which each node finds its place by a descent from the root, independently of the others.
struct BandShapeTable {
  static constexpr int kMaxDepth = 40;  // (2^32 triangles halved down to 4: 31 depths)
  uint32_t kept = 0, depths = 0;        // depths: the depths that hold inner nodes, at most
  uint32_t lo[kMaxDepth];               // a subtree of depth d holds lo[d] or lo[d] + 1 triangles
  uint32_t size[kMaxDepth][2];          // and size[d][0] or size[d][1] nodes
  VT_HD uint32_t subtree(uint32_t d, uint32_t count) const { return count <= 4 ? 1u : size[d][count - lo[d]]; }
  VT_HD uint32_t nodes() const { return kept ? subtree(0, kept) : 0u; }
};
BandShapeTable band_shape_table(uint32_t kept);
// Node b's triangles [first, first + count), its depth and its second child (-1 for a leaf).
VT_HD inline void band_shape_node(const BandShapeTable& t, uint32_t b, uint32_t* first, uint32_t* count,
                                  uint32_t* depth, int32_t* right) {
  uint32_t f = 0, c = t.kept, at = 0, d = 0;
  while (at != b) {  // (an inner node: b lies in one of its children's subtrees)
    const uint32_t h = c / 2, second = at + 1 + t.subtree(d + 1, h);
    if (b < second) {
      c = h;
      at = at + 1;
    } else {
      f += h;
      c -= h;
      at = second;
    }
    ++d;
  }
  *first = f;
  *count = c;
  *depth = d;
  *right = c <= 4 ? -1 : int32_t(b + 1 + t.subtree(d + 1, c / 2));
}
// The BandNode of the shape's inner node b from the nodes' boxes.
VT_HD inline BandRef band_ref(const int32_t* right, const uint32_t* first, const uint32_t* count, const uint32_t* inner,
                              size_t b) {
  return right[b] < 0 ? BandRef{first[b], count[b]} : BandRef{inner[b], 0};
}
VT_HD inline BandNode band_node(const int32_t* right, const uint32_t* first, const uint32_t* count,
                                const uint32_t* inner, const BandNodeBox* boxes, size_t b) {
  BandNode n;
  const size_t c[2] = {b + 1, size_t(right[b])};
  for (int h = 0; h < 2; ++h) {
    for (int a = 0; a < 3; ++a) {
      n.lo[h][a] = boxes[c[h]].lo[a];
      n.hi[h][a] = boxes[c[h]].hi[a];
    }
    n.k2[h] = boxes[c[h]].k2;
    n.k2e[h] = boxes[c[h]].k2e;
    n.child[h] = band_ref(right, first, count, inner, c[h]);
  }
  return n;
}

// The view's root: the shape's node 0 with its box.
inline void band_set_top(BandTreeView& top, const int32_t* right, const uint32_t* first, const uint32_t* count,
                         const uint32_t* inner, const BandNodeBox& root) {
  top.empty = false;
  top.root = band_ref(right, first, count, inner, 0);
  for (int a = 0; a < 3; ++a) {
    top.root_lo[a] = root.lo[a];
    top.root_hi[a] = root.hi[a];
  }
  top.root_k2 = root.k2;
  top.root_k2e = root.k2e;
}

struct BandTree {
  std::vector<BandNode> nodes;  // the inner nodes, the root's first
  BandTreeView top;             // the root's box and reference (pointers unset)
  std::vector<Vec3f> tris, loose;
  std::vector<BandNodeBox> boxes;  // per reference (BandTreeView::boxes)
  float piece = kBandPieceVoxels;  // the piece length it was cut at (band_piece_length)
  BandTreeView view() const;
};
// The tree of the mesh's grid-space triangles (g = to_grid_space(mesh, spec), box = mesh_grid_box;
// the order and shape above), on the host's cores.
// (piece: the piece length to start from, band_piece_length; shorter in tests.)
BandTree build_band_tree(const Mesh& mesh, const std::vector<Vec3f>& g, const GridBox& box, const BandSetup& bs,
                         float piece = kBandPieceVoxels);

// The bricks the search walks: those of the grid within the mesh's box grown by the band's reach
// (all of them for kBandAll), as [lo, hi] brick coordinates; false when none.
bool band_search_bricks(const GridBox& box, const GridSpec& spec, const BandSetup& bs, Int3* lo, Int3* hi);

// The pairs' work for a triangle: the voxels of its band box (band_voxel_range: the distances the
// pairs take for it) plus per_brick for each brick the box touches (each (brick, triangle) pair's
// own cost, which dominates for narrow bands).
VT_HD inline double band_box_work(const Vec3f tri[3], const BandSetup& bs, const Int3& dims, double per_brick) {
  Int3 lo, hi;
  if (!band_voxel_range(tri, bs, dims, &lo, &hi)) return 0.0;
  const double voxels = double(hi.x - lo.x + 1) * double(hi.y - lo.y + 1) * double(hi.z - lo.z + 1);
  const double bricks = double((hi.x >> 3) - (lo.x >> 3) + 1) * double((hi.y >> 3) - (lo.y >> 3) + 1) *
                        double((hi.z >> 3) - (lo.z >> 3) + 1);
  return voxels + per_brick * bricks;
}
// The pairs' work over the mesh (per_brick 0: the voxels of the triangles' band boxes), and the
// voxels the search walks (band_search_bricks).
double band_box_voxels(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const BandSetup& bs,
                       double per_brick = 0.0);
double band_search_voxels(const GridBox& box, const GridSpec& spec, const BandSetup& bs);

// When a band of `band` voxels is taken by the search rather than by the pairs: always for kBandAll,
// else where the pairs' work (the triangles' band-box voxels, plus `per_brick` for each (brick,
// triangle) pair) is over `ratio` times the voxels the search walks (scaled by the triangles' size,
// below) plus `per_triangle` times the triangles (the tree's cost). Either way gives the same bits.
// Fitted on the dragon and the bunny, bands of 1 to 48 voxels at 64^3 to 512^3
// (scripts/bench-results/band-warp-h200-2026-11-29.md, band-pieces-h200-2026-11-29.md): on the CPU
// (2 cores) the pairs take about
// 3 ns per band-box voxel, the search 0.1-0.35 us per walked voxel on the dragon and the bunny, and
// its tree about 0.35 us per triangle: a ratio of 40 and 100 per triangle, from bands of 1; on the GPU
// (H200, the tree built there in 0.3 ms, the count on the device: no cost measurable at the default
// band) a ratio of 80 with 300 per pair chose the faster way in 60 of 64 cases (6-38% slower in the
// others; voxels alone, a ratio of 40: 56 of 64, up to 2.7x slower at bands of 1 to 3 on small grids,
// where the pairs' bricks cost more than their voxels; the rule was a ratio of 800 from bands of 16:
// up to 10x). Meshes of large triangles (CAD slivers: `generate cad`, fans and side quads from end to
// end) need another scale: their band boxes overstate the pairs' work (the pairs' plane and edge
// bounds skip most of a sliver's box) and the search walks more triangles per voxel, so the ratio is
// scaled by a power of the triangles' size (takes_search): on the CPU by its square root (40, 100 per
// triangle: the faster way in 29 of 30 measured cases on the dragon, the bunny and two CAD meshes,
// 1.03x slower in the other; the size itself, as before the search cut long triangles into pieces,
// took the pairs on CAD at 128^3 with a band of 8, 1.7x slower), on the GPU by its square (the faster
// way in 114 of 125 measured cases on the dragon, the bunny, CAD and 1M tubes, up to 1.5x slower in
// the others, 1.3% over the best on average; the size itself: 14 wrong, up to 2.8x on CAD slivers of
// 307k triangles at 128^3, bands 1 to 3).
struct BandRule {
  double ratio;
  double per_triangle;
  double per_brick;
  double size_power;
  // Whether the search is taken, given the pairs' work (band_box_voxels with per_brick), the voxels
  // the search walks, the triangles and a compact triangle's work (band_compact_work). The ratio is
  // scaled by a power of how many times a triangle's work is, on average, a compact triangle's.
  bool takes_search(double pairs_work, double walked, uint64_t triangles, double compact_work) const {
    const double size = triangles ? std::max(1.0, pairs_work / double(triangles) / compact_work) : 1.0;
    return pairs_work > ratio * std::pow(size, size_power) * walked + per_triangle * double(triangles);
  }
};
constexpr BandRule kBandRuleCpu{40, 100, 0, 0.5}, kBandRuleGpu{80, 0, 300, 2};
// A compact triangle's pairs' work (band_box_work of a triangle no larger than a voxel: (2 reach + 1)
// voxels per axis and at most that many bricks plus one), the scale of BandRule::takes_search.
inline double band_compact_work(const BandSetup& bs, double per_brick) {
  const double side[3] = {2.0 * double(bs.reach.x) + 1.0, 2.0 * double(bs.reach.y) + 1.0,
                          2.0 * double(bs.reach.z) + 1.0};
  double voxels = 1.0, bricks = 1.0;
  for (double a : side) {
    voxels *= a;
    bricks *= std::ceil(a / 8.0) + 1.0;
  }
  return voxels + per_brick * bricks;
}
// Whether `rule` takes the search for this band; *box_voxels gets the pairs' work (band_box_voxels
// with the rule's per_brick) where it was counted (every width but kBandAll).
bool band_by_search(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box, int band,
                    const BandRule& rule, double* box_voxels = nullptr);

// The band of the sdf target by the search, on the CPU's cores (as band_distance_cpu).
SparseGrid band_search_cpu(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box,
                           int band);

// The level set's background for a band of `band` voxels: its width, or for kBandAll the largest
// distance in the grid (every voxel of the grid is active), the smallest voxel size if it has none.
float band_background(const SparseGrid& band_grid, const GridSpec& spec, int band);

}  // namespace voxtile
