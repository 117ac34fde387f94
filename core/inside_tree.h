// The winding test's boundary term B (core/inside.h) summed far from the column in few operations:
// the boundary edges chained into closed pieces of a few edges each, the pieces gathered into trees,
// and a piece or a subtree whose ball the column passes far from taken as its dipole term with a
// proved bound on the rest. Shared host/device code (the CPU reference and the GPU walk the same
// trees); the bounds only ever settle a voxel whose answer they prove, so where the two sides sum
// them in different orders their answers still agree (inside_winding_walk).
//
// Why a far closed piece is a dipole. Where a column misses a closed polygon's projection, the strips
// swept from its edges along +w and any surface spanning it (the fan from a point c) bound a volume
// without the point p, so the strips' solid angle (the polygon's share of B) equals the fan's, the
// integral of n . g(x) over the fan with g(x) = (x - p) / |x - p|^3: m . g(c) (m the fan's vector
// area) plus at most A r |g'| (A the fan's area, r the radius of a ball about c that holds it), where
// g's Jacobian has norm 2 / |x - p|^3, so the rest is at most 2 A r / (d - r)^3 at distance d from c.
// Over a range of voxels along the column, m . g(c) moves by at most 2 |m| h / rho^3 from its value at
// the range's middle (h its half length, rho the least distance from c to the range). A subtree's
// pieces lie in one ball about its centre: the same bound with their summed m and A.
//
// Pieces. The boundary's edges of multiplicity +-1, oriented by their sign, are chained through
// vertices with one edge in and one out; an open chain a0 -> ... -> an is closed by an -> a0, and
// its opposite a0 -> an is summed exactly always (a loose edge). A loop of more than kInsidePieceEdges
// edges is cut into runs of consecutive edges, each closed by its chord (the run's last vertex back
// to its first): the pieces; the chords taken forward form a loop of their own (the first loop minus
// its pieces), cut again, until a loop has few enough edges to be a piece itself. A chord appears
// once in each direction, whose terms cancel bit for bit (inside_edge_solid_angle is odd in the
// edge's direction), so the pieces sum to the boundary exactly. Edges of another multiplicity are
// loose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/inside.h"

namespace voxtile {

constexpr int kInsidePieceEdges = 8;     // a loop's run (a piece: its edges and its chord)
constexpr double kInsideFarRadii = 3.0;  // a ball is far when the column passes > 3 radii from its centre
// inside_tree_point's bound on a far ball's rest at a voxel (radians): kInsidePointRest, then a tenth
// of it, ..., kInsidePointLevels tries before the exact sum (2 cores, Sponza's sdf at 256^3: 3e-2, 1e-2
// and 3e-3 measured, one to three levels; scripts/bench-results/winding-point-2026-11-29.md).
constexpr double kInsidePointRest = 1e-2;
constexpr int kInsidePointLevels = 3;
VT_HD inline double inside_point_rest(int level) {
  double r = kInsidePointRest;
  for (int i = 0; i < level; ++i) r *= 0.1;
  return r;
}

// A node of a piece tree: a piece (count > 0: its edges) or a subtree (count 0, its nodes follow it
// in preorder up to `skip`). World units relative to the grid's origin, along (u, v, w).
struct InsideNode {
  double c[3];     // centre of the ball
  double m[3];     // vector area of the fans
  double r;        // radius of the ball (holds every fan)
  double ar2;      // 2 x fans' area x r
  double m2;       // 2 |m|
  uint32_t skip;   // the node after this subtree
  uint32_t first;  // a piece's edges in InsideTree::edges
  uint32_t count;  // their number (0: a subtree)
  uint32_t pad;
};

// A boundary's trees (host): one binary tree in preorder (node 0 its root), whose subtrees of about
// eight pieces each are the chunks (chunk q's tree: nodes [chunks[q], nodes[chunks[q]].skip)). The
// GPU's lanes walk the chunks (a lane each); the CPU walks the whole tree from its root, whose upper
// nodes take far groups of chunks as one dipole each.
struct InsideTree {
  std::vector<InsideNode> nodes;
  std::vector<uint32_t> chunks;   // chunk roots, then the number of nodes
  std::vector<InsideEdge> edges;  // the pieces' edges (multiplicity 1)
  std::vector<InsideEdge> loose;  // edges summed exactly at every voxel
  // Voxels per column that the trees may leave to the exact sum over every edge before the column
  // goes on with every edge exactly (inside_winding_span): one per 1024 boundary edges, 1 to 16; 0
  // where there are no trees.
  int patience = 0;
};
InsideTree build_inside_tree(const std::vector<InsideEdge>& boundary, const InsideScale& s);
// Boundary edges from which the walk takes the trees: under it the exact sums cost less than the trees'
// walk (on the CPU they are summed eight edges at a time: 2 cores, the open terrain at 256^3 took 504 ms
// with every edge exactly, 950 with the trees; the scan fragment at 128^3, 1,493 edges, 392 and 330; on
// an H200 with trees from 256 edges the terrain at 512^3 took 91.5 ms against 14.8).
constexpr size_t kInsideTreeMinEdges = 2048;
// The trees of a boundary of min_edges to max_edges edges (else none: patience 0), for the walk.
InsideTree inside_walk_trees(const std::vector<InsideEdge>& boundary, const InsideScale& s,
                             size_t min_edges = kInsideTreeMinEdges, size_t max_edges = SIZE_MAX);

struct InsideTreeView {
  const InsideNode* nodes;
  const uint32_t* chunks;
  uint32_t num_chunks;
  const InsideEdge* edges;
  const InsideEdge* loose;
  uint64_t num_loose;
};
inline InsideTreeView inside_tree_view(const InsideTree& t) {
  return {t.nodes.data(), t.chunks.data(), uint32_t(t.chunks.empty() ? 0 : t.chunks.size() - 1),
          t.edges.data(), t.loose.data(),  uint64_t(t.loose.size())};
}
// The whole tree as one chunk (its root, node 0).
inline InsideTreeView inside_tree_whole(const InsideTree& t) {
  static const uint32_t kRoot = 0;
  InsideTreeView v = inside_tree_view(t);
  v.chunks = &kRoot;
  v.num_chunks = t.nodes.empty() ? 0 : 1;
  return v;
}

// A column: its snapped centre and its world position across w.
struct InsideColumn {
  int64_t pu, pv;
  double px, py;
};
VT_HD inline InsideColumn inside_column_at(int32_t i, int32_t j, const InsideScale& s) {
  const int64_t pu = inside_column(i), pv = inside_column(j);
  return {pu, pv, static_cast<double>(pu) / kInsideScale * s.su, static_cast<double>(pv) / kInsideScale * s.sv};
}

VT_HD inline bool inside_node_far(const InsideNode& n, const InsideColumn& col, double radii = kInsideFarRadii) {
  const double du = n.c[0] - col.px, dv = n.c[1] - col.py, f = radii * n.r;
  return du * du + dv * dv > f * f;
}

// Edge e's exact term at w = pw (grid units) into its part.
VT_HD inline void inside_parts_add(const InsideEdge& e, const InsideColumn& col, double pw, const InsideScale& s,
                                   double& pos, double& neg) {
  const double o = inside_edge_solid_angle(e, col.pu, col.pv, pw, s);
  if (o > 0.0)
    pos += o;
  else
    neg += o;
}

// The column's cut of the trees of chunks lane, lane + lanes, ...: on_far(x) for each node x whose
// ball is far (the column passes more than `radii` radii from its centre; its subtree skipped),
// on_near(e) for each edge e of the near pieces.
template <class OnFar, class OnNear>
VT_HD inline void inside_tree_cut(const InsideTreeView& t, int lane, int lanes, const InsideColumn& col, OnFar&& on_far,
                                  OnNear&& on_near, double radii = kInsideFarRadii) {
  for (uint32_t q = static_cast<uint32_t>(lane); q < t.num_chunks; q += static_cast<uint32_t>(lanes))
    for (uint32_t i = t.chunks[q], end = t.nodes[t.chunks[q]].skip; i < end;) {
      const InsideNode& n = t.nodes[i];
      if (inside_node_far(n, col, radii)) {
        on_far(i);
        i = n.skip;
        continue;
      }
      for (uint32_t e = n.first; e < n.first + n.count; ++e) on_near(e);
      ++i;
    }
}

// A column's cut listed (host): its far balls, and the edges of its near pieces and the loose edges,
// whose exact terms are the near part of B at every voxel (inside_boundary_parts over `near`: positive
// and negative parts that rise and fall along the column, InsideParts). The GPU lists the same cut
// in shared memory, a warp's lanes each walking some of the chunks.
inline void inside_cut_lists(const InsideTreeView& t, const InsideColumn& col, std::vector<uint32_t>& far,
                             std::vector<InsideEdge>& near, double radii = kInsideFarRadii) {
  far.clear();
  near.clear();
  inside_tree_cut(
      t, 0, 1, col, [&](uint32_t x) { far.push_back(x); }, [&](uint32_t e) { near.push_back(t.edges[e]); }, radii);
  near.insert(near.end(), t.loose, t.loose + t.num_loose);
}

// The far balls far[lane], far[lane + lanes], ...: their rests at the column summed (2 A r / (d -
// r)^3, d a ball's distance from the column's axis), the most their dipole terms can miss by at any
// voxel. Where they add up to more than kInsideWideRest radians (inside_cut_wider: Sponza's leaf
// cards, at 3 radii each about a fifth of a radian, so the bounds leave the voxels near w = 0.5 open
// and the column soon sums every edge exactly), the CPU and the GPU cut the column again with the
// balls far from kInsideWideRadii radii on (rests (2/3)^3 as large, more near edges). Any cut gives
// the same answers (the bounds decide only what the exact sums would); this one is faster on such
// columns and the others keep theirs.
constexpr double kInsideWideRadii = 4.0;
constexpr double kInsideWideRest = 5.0;
VT_HD inline bool inside_cut_wider(double rest) { return rest > kInsideWideRest; }
VT_HD inline double inside_listed_rest(const InsideNode* nodes, const uint32_t* far, uint32_t nfar, int lane, int lanes,
                                       const InsideColumn& col) {
  double rest = 0.0;
  for (uint32_t q = static_cast<uint32_t>(lane); q < nfar; q += static_cast<uint32_t>(lanes)) {
    const InsideNode& n = nodes[far[q]];
    const double du = n.c[0] - col.px, dv = n.c[1] - col.py, g = sqrt(du * du + dv * dv) - n.r;
    rest += n.ar2 / (g * g * g);
  }
  return rest;
}

// The far part of B over voxels [a, b] of the column: within [d - r, d + r] (d: the far balls'
// dipole terms at the range's middle, r: their change over the range and their rests); mag: the
// terms' magnitudes (for the rounding margin).
struct InsideFar {
  double d, r, mag;
};
// No far part known: decides nothing.
VT_HD inline InsideFar inside_no_far() { return InsideFar{0.0, INFINITY, 0.0}; }
// Far ball n's dipole term at the range's middle w = wm (half length h) into f. Its move over the
// range is at most 2 |m| h / rho^3 (m2 = 2 |m|; rho the least distance from the ball's centre to the
// range); `whole` (a column's whole range, long against rho) caps that by |term| + |m| / rho^2, the
// term's magnitude at the middle plus its largest anywhere on the range (|m . g| <= |m| / rho^2):
// over a long range a ball moves by about its solid angle, not by its slope times the range.
VT_HD inline void inside_far_add(const InsideNode& n, const InsideColumn& col, double wm, double h, InsideFar& f,
                                 bool whole = false) {
  const double du = n.c[0] - col.px, dv = n.c[1] - col.py, dz = n.c[2] - wm;
  const double duv2 = du * du + dv * dv, d2 = duv2 + dz * dz, dist = sqrt(d2);
  const double term = ((n.m[0] * du + n.m[1] * dv) + n.m[2] * dz) / (d2 * dist);
  const double az = (dz < 0.0 ? -dz : dz) - h, ez = az > 0.0 ? az : 0.0;
  const double rho = sqrt(duv2 + ez * ez), rho3 = rho * rho * rho, g = rho - n.r;
  const double at = term < 0.0 ? -term : term, slope = n.m2 * h / rho3, cap = at + 0.5 * n.m2 * rho / rho3;
  f.d += term;
  f.mag += at;
  f.r += (whole && cap < slope ? cap : slope) + n.ar2 / (g * g * g);
}
// The middle and half length (world units) of voxels [a, b] along the column.
VT_HD inline void inside_range_middle(int64_t a, int64_t b, const InsideScale& s, double* wm, double* h) {
  const double wa = (static_cast<double>(a) + 0.5) * s.sw, wb = (static_cast<double>(b) + 0.5) * s.sw;
  *wm = 0.5 * (wa + wb);
  *h = 0.5 * (wb - wa);
}
// The far part over voxels [a, b] from the column's far balls far[lane], far[lane + lanes], ...
// (whole: over the column's whole walk, inside_winding_walk's `coarse`).
VT_HD inline InsideFar inside_listed_far(const InsideNode* nodes, const uint32_t* far, uint32_t nfar, int lane,
                                         int lanes, const InsideColumn& col, int64_t a, int64_t b, const InsideScale& s,
                                         bool whole = false) {
  InsideFar f{0.0, 0.0, 0.0};
  double wm, h;
  inside_range_middle(a, b, s, &wm, &h);
  for (uint32_t q = static_cast<uint32_t>(lane); q < nfar; q += static_cast<uint32_t>(lanes))
    inside_far_add(nodes[far[q]], col, wm, h, f, whole);
  return f;
}

// The far part of B at voxel k of the column within [d - r, d + r] (mag: the terms' magnitudes), from
// the column's far balls `far` (far[lane], far[lane + lanes], ...) looked at from that voxel alone.
// Where the column's bounds leave a voxel open, its far balls are mostly those just beyond
// kInsideFarRadii, whose rests are large (at 3 radii about A / (4 r^2): a fifth of a radian for a leaf
// card of Sponza's, more for a subtree of many), and without this the exact sum went over every edge. Here a ball is
// taken as its dipole term where the column misses its projection (the term's condition) and its
// rest at the voxel, 2 A r / (d - r)^3, is at most `rest`; else a subtree is opened and a piece's
// edges are to be summed exactly (on_edge(e)). Returns the dipoles' part.
template <class OnEdge>
VT_HD inline InsideFar inside_tree_point_cut(const InsideTreeView& t, const uint32_t* far, uint32_t nfar, int lane,
                                             int lanes, const InsideColumn& col, int64_t k, const InsideScale& s,
                                             double rest, OnEdge&& on_edge) {
  InsideFar f{0.0, 0.0, 0.0};
  const double wz = (static_cast<double>(k) + 0.5) * s.sw;
  for (uint32_t q = static_cast<uint32_t>(lane); q < nfar; q += static_cast<uint32_t>(lanes))
    for (uint32_t i = far[q], end = t.nodes[far[q]].skip; i < end;) {
      const InsideNode& n = t.nodes[i];
      const double du = n.c[0] - col.px, dv = n.c[1] - col.py, dz = n.c[2] - wz;
      const double duv2 = du * du + dv * dv;
      if (duv2 > n.r * n.r) {
        const double g = sqrt(duv2 + dz * dz) - n.r;
        if (n.ar2 <= rest * (g * g * g)) {
          inside_far_add(n, col, wz, 0.0, f);
          i = n.skip;
          continue;
        }
      }
      for (uint32_t e = n.first; e < n.first + n.count; ++e) on_edge(e);
      ++i;
    }
  return f;
}
// The far part within [d - r, d + r] (mag) from inside_tree_point_cut's dipoles and the exact parts of
// the edges it opened.
VT_HD inline InsideFar inside_point_far(const InsideParts& opened, const InsideFar& dipoles) {
  return InsideFar{(opened.pos + opened.neg) + dipoles.d, dipoles.r,
                   ((opened.pos - opened.neg) + dipoles.mag) + dipoles.r};
}
// inside_tree_point_cut with the opened edges summed here.
VT_HD inline InsideFar inside_tree_point(const InsideTreeView& t, const uint32_t* far, uint32_t nfar, int lane,
                                         int lanes, const InsideColumn& col, int64_t k, const InsideScale& s,
                                         double rest) {
  InsideParts opened{0.0, 0.0};
  const double pw = static_cast<double>(k) + 0.5;
  const InsideFar f = inside_tree_point_cut(t, far, nfar, lane, lanes, col, k, s, rest, [&](uint32_t e) {
    inside_parts_add(t.edges[e], col, pw, s, opened.pos, opened.neg);
  });
  return inside_point_far(opened, f);
}

// Whether B in [lo, hi] (radians, before the margin) decides w = c + B / 4pi >= 0.5: +1 every such
// w is inside, -1 none is, 0 open. The margin (1e-6 rad plus 1e-8 of the terms' magnitudes) covers
// the rounding of the bounds' sums and of the exact sums the walk falls back to, so a bound decides
// only what the exact sums of any order would: the host and the device agree whatever their orders.
VT_HD inline int inside_bounds_decide(int64_t c, double lo, double hi, double mag) {
  const double kPi = 3.14159265358979323846;
  const double eps = 1e-6 + 1e-8 * mag;
  if (inside_winding_at_least_half(c, lo - eps, kPi)) return 1;
  if (!inside_winding_at_least_half(c, hi + eps, kPi)) return -1;
  return 0;
}

// The winding test over voxels [k0, k1) of a span with crossing sum c: near(k) gives the near parts at
// voxel k (inside_cut_lists' near edges), far(a, b) the far part over [a, b] (inside_listed_far), exact(k) B's
// parts at voxel k summed over every boundary edge in the canonical order (inside_boundary_parts):
// set(a, b) for each run [a, b) of voxels inside. The range [a, last] is decided whole when its
// bounds allow, else split at its middle, left half first, the right ends' near parts kept on a
// stack (a bisection); a voxel the bounds leave open is decided by its exact sum. Each such voxel
// takes one from *patience (null: no limit); once none is left the walk stops and returns the first
// voxel it has not decided (else k1), so that the caller can go on with every edge summed exactly
// (near = exact, no far part), which needs no fallback: where the boundary hugs the threshold
// (a large open sheet: w about 0.5 all along its columns) that is cheaper than the trees. A range's
// bounds hold at both its ends (near parts at a and b, far part over the voxels' centres a to b),
// so the range that ends at `last` decides it too: before, every span took one more far part for
// its last voxel alone (H200, inside_winding: 2,000 short open tubes at 512^3 199 -> 120 ms, their
// spans being short; the open bunny's solid at 1024^3 6.0 -> 4.7, the open terrain's 46.4 -> 43.4;
// Sponza within 1%, sdfs without trees +1-2%). `coarse` (r infinite: none) is a far part that holds
// over the whole walk, the column's far balls over all its voxels (inside_listed_far with `whole`),
// tried before each range's own far(a, b) and each voxel's far(k, k): where the far balls are small
// against their distances (open tubes' ends, leaf cards seen from afar) it decides most ranges, so
// that a column takes one far part instead of one per span and split (H200, inside_winding, the
// sdf at 512^3: 1.2M open tubes 74 -> 32 ms, 144k 22 -> 15, 2,000 short ones 120 -> 90; Sponza
// within 1% from 512^3 on, +4% at 256^3).
// `rel` (0: none): near(k)'s parts are approximate, each within rel of pos - neg of the exact ones
// (inside_lane_parts_approx), and every bound is widened by that much.
template <class Near, class Far, class Point, class Exact, class Set>
VT_HD inline int64_t inside_winding_walk(Near&& near, Far&& far, Point&& point, Exact&& exact, int64_t c, int64_t k0,
                                         int64_t k1, Set&& set, int* patience = nullptr,
                                         const InsideFar& coarse = inside_no_far(), double rel = 0.0) {
  const double kPi = 3.14159265358979323846;
  if (k0 >= k1) return k1;
  const bool has_coarse = coarse.r < INFINITY;
  // Bounds [lo, hi] from parts of magnitude `parts` widened by rel of it (nothing without `rel`).
  auto widen = [rel](double& lo, double& hi, double parts) {
    if (rel > 0.0) {
      lo -= rel * parts;
      hi += rel * parts;
    }
  };
  // One voxel: its own bounds, then those of its far part seen from it alone (point(k), as
  // inside_tree_point; r infinite where there is none), else its exact sum; false when the patience
  // has run out after it.
  auto voxel = [&](int64_t k, const InsideParts& p) {
    auto decide = [&](const InsideFar& f) {
      const double b = p.pos + p.neg + f.d;
      double lo = b - f.r, hi = b + f.r;
      widen(lo, hi, p.pos - p.neg);
      return inside_bounds_decide(c, lo, hi, (p.pos - p.neg) + f.mag + f.r);
    };
    int in = has_coarse ? decide(coarse) : 0;
    if (in == 0) in = decide(far(k, k));
    bool go_on = true;
    for (int level = 0; in == 0; ++level) {
      const InsideFar q = point(k, level);
      if (!(q.r < INFINITY)) break;
      const double bq = p.pos + p.neg + q.d;
      double lo = bq - q.r, hi = bq + q.r;
      widen(lo, hi, p.pos - p.neg);
      in = inside_bounds_decide(c, lo, hi, (p.pos - p.neg) + q.mag);
    }
    if (in == 0) {
      const InsideParts x = exact(k);
      in = inside_winding_at_least_half(c, x.pos + x.neg, kPi) ? 1 : -1;
      if (patience) go_on = --*patience > 0;
    }
    if (in > 0) set(k, k + 1);
    return go_on;
  };
  constexpr int kDepth = 33;  // each push halves b - a < 2^31
  int64_t stack_k[kDepth];
  InsideParts stack_p[kDepth];
  int top = 0;
  const int64_t last = k1 - 1;
  int64_t a = k0;
  InsideParts pa = near(a);
  if (last > a) {
    stack_k[0] = last;
    stack_p[0] = near(last);
    top = 1;
  }
  while (top > 0) {
    const int64_t b = stack_k[top - 1];
    const InsideParts pb = stack_p[top - 1];
    auto decide = [&](const InsideFar& f) {
      double lo = pa.pos + pb.neg + f.d - f.r, hi = pb.pos + pa.neg + f.d + f.r;
      widen(lo, hi, (pa.pos - pa.neg) + (pb.pos - pb.neg));
      return inside_bounds_decide(c, lo, hi, (pb.pos - pa.neg) + f.mag + f.r);
    };
    int in = has_coarse ? decide(coarse) : 0;
    if (in == 0) in = decide(far(a, b));
    if (in != 0 && b == last) {  // [a, last] decided, its last voxel with it (no voxel(last))
      if (in > 0) set(a, k1);
      return k1;
    }
    if (in != 0 || b - a == 1) {  // [a, b) decided, or a alone
      if (in > 0) set(a, b);
      if (in == 0 && !voxel(a, pa)) return b;
      a = b;
      pa = pb;
      --top;
    } else {
      const int64_t m = a + (b - a) / 2;
      stack_k[top] = m;
      stack_p[top] = near(m);
      ++top;
    }
  }
  voxel(last, pa);
  return k1;
}
// Without a point's bounds.
VT_HD inline InsideFar inside_no_point(int64_t, int) { return InsideFar{0.0, INFINITY, 0.0}; }
template <class Near, class Far, class Exact, class Set>
VT_HD inline int64_t inside_winding_walk(Near&& near, Far&& far, Exact&& exact, int64_t c, int64_t k0, int64_t k1,
                                         Set&& set, int* patience = nullptr) {
  return inside_winding_walk(near, far, inside_no_point, exact, c, k0, k1, set, patience);
}

// Voxels [k0, k1) of a span with every edge summed: near(k) B's parts over every edge, exact (rel 0)
// or within rel of their magnitude (inside_lane_parts_approx's, rel kInsideApproxRel), no far part;
// a voxel they leave open takes its exact sum exact(k) (exact: only where B is within the margin of
// the threshold).
template <class Near, class Exact, class Set>
VT_HD inline void inside_winding_every_edge(Near&& near, Exact&& exact, int64_t c, int64_t k0, int64_t k1, Set&& set,
                                            double rel) {
  inside_winding_walk(
      near,
      [](int64_t, int64_t) {
        return InsideFar{0.0, 0.0, 0.0};
      },
      inside_no_point, exact, c, k0, k1, set, nullptr, inside_no_far(), rel);
}
template <class Exact, class Set>
VT_HD inline void inside_winding_exact(Exact&& exact, int64_t c, int64_t k0, int64_t k1, Set&& set) {
  inside_winding_every_edge(exact, exact, c, k0, k1, set, 0.0);
}
template <class Approx, class Exact, class Set>
VT_HD inline void inside_winding_exact_approx(Approx&& approx, Exact&& exact, int64_t c, int64_t k0, int64_t k1,
                                              Set&& set) {
  inside_winding_every_edge(approx, exact, c, k0, k1, set, kInsideApproxRel);
}
// The winding test over the span [k0, k1) with crossing sum c: the trees' walk (near, far, the
// column's coarse far part) while `patience` lasts (it carries over the column's spans), then
// rest(c, k, k1) for the voxels left: the CPU sums them exactly there (inside_winding_exact), the
// GPU hands them to a kernel of its own.
template <class Near, class Far, class Point, class Exact, class Set, class Rest>
VT_HD inline void inside_winding_span(Near&& near, Far&& far, Point&& point, Exact&& exact, int64_t c, int64_t k0,
                                      int64_t k1, Set&& set, int& patience, Rest&& rest, const InsideFar& coarse) {
  if (patience > 0) k0 = inside_winding_walk(near, far, point, exact, c, k0, k1, set, &patience, coarse);
  if (k0 < k1) rest(c, k0, k1);
}

// inside_winding_span over the parts of [k0, k1) in the column's bricks of 8 voxels that need(b)
// wants (brick b: voxels 8b to 8b + 7): the sdf's sign is wanted in its band's bricks only. With
// whole_first (a boundary without the trees: few edges, each exact sum cheap) the whole span's exact
// bounds first (the walk's first range): a span they decide needs no parts (most spans of the bunny:
// split at once, its sdf at 1024^3 took 8.8 ms of winding test against 6.2); else, and with the trees
// (where such bounds rarely decide and each exact sum is long: Sponza's sdf at 1024^3 560-605 ms with
// them, 374 without), each run of wanted bricks is walked alone. Each voxel's answer is its exact
// sum's whichever ranges are bounded (inside_bounds_decide), so the voxels taken get the bits the
// whole span gives them.
template <class Need, class Near, class Far, class Point, class Exact, class Set, class Rest>
VT_HD inline void inside_winding_span_in(Need&& need, bool whole_first, Near&& near, Far&& far, Point&& point,
                                         Exact&& exact, int64_t c, int64_t k0, int64_t k1, Set&& set, int& patience,
                                         Rest&& rest, const InsideFar& coarse) {
  if (k1 - k0 > 1 && whole_first) {
    const InsideParts pa = exact(k0), pb = exact(k1 - 1);
    const int in = inside_bounds_decide(c, pa.pos + pb.neg, pb.pos + pa.neg, pb.pos - pa.neg);
    if (in != 0) {
      if (in > 0) set(k0, k1);
      return;
    }
  }
  for (int64_t k = k0; k < k1;) {
    if (!need(k >> 3)) {
      k = ((k >> 3) + 1) << 3;
      continue;
    }
    int64_t e = ((k >> 3) + 1) << 3;
    while (e < k1 && need(e >> 3)) e += 8;
    const int64_t hi = e < k1 ? e : k1;
    inside_winding_span(near, far, point, exact, c, k, hi, set, patience, rest, coarse);
    k = hi;
  }
}

}  // namespace voxtile
