// The winding test's piece trees (core/inside_tree.h): the boundary chained into loops, the loops cut
// into closed pieces, the pieces ordered along a Morton curve and gathered into small trees.
#include "core/inside_tree.h"

#include <tbb/parallel_invoke.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/hd.h"

namespace voxtile {
namespace {

struct V3 {
  double x, y, z;
};
V3 sub(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
V3 cross(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double norm(V3 a) { return std::sqrt(a.x * a.x + a.y * a.y + a.z * a.z); }

InsideEdge reversed(const InsideEdge& e) { return {e.bu, e.bv, e.au, e.av, e.bw, e.aw, e.mult}; }
// The edge from `first`'s start to `last`'s end (multiplicity 1).
InsideEdge spanning(const InsideEdge& first, const InsideEdge& last) {
  return {first.au, first.av, last.bu, last.bv, first.aw, last.bw, 1};
}
bool zero_length(const InsideEdge& e) {
  return e.au == e.bu && e.av == e.bv && inside_position_bits(e.aw) == inside_position_bits(e.bw);
}

struct Piece {
  size_t first, count;  // its edges in the pieces' list
  V3 c, m;
  double r, area;
};

}  // namespace

InsideTree build_inside_tree(const std::vector<InsideEdge>& boundary, const InsideScale& s) {
  InsideTree t;
  auto world = [&](int64_t u, int64_t v, float w) {
    return V3{static_cast<double>(u) / kInsideScale * s.su, static_cast<double>(v) / kInsideScale * s.sv,
              static_cast<double>(w) * s.sw};
  };
  // Edges of multiplicity +-1, oriented; the others are loose.
  std::vector<InsideEdge> unit;
  unit.reserve(boundary.size());
  for (const InsideEdge& e : boundary) {
    if (e.mult == 1)
      unit.push_back(e);
    else if (e.mult == -1)
      unit.push_back(reversed(InsideEdge{e.au, e.av, e.bu, e.bv, e.aw, e.bw, 1}));  // (multiplicity 1)
    else
      t.loose.push_back(e);
  }
  const size_t n = unit.size();
  // Vertex ids by position: the snapped coordinates (inside_snap: within +-2^29) and the bits of w
  // packed into one 128-bit key, ids in order of first appearance from an open-addressing table (only
  // which ends share an id matters below, not the ids' order).
  using Key = unsigned __int128;
  auto key_of = [](int64_t u, int64_t v, float w) {
    const int64_t off = int64_t(kInsideMaxVoxels * kInsideScale);  // 2^29
    return (static_cast<Key>(uint64_t(u + off)) << 63) | (static_cast<Key>(uint64_t(v + off)) << 32) |
           inside_position_bits(w);
  };
  // At least 2n slots for the 2n ends: a boundary's vertices each begin and end an edge (the boundary
  // of the triangles is closed but where loose edges left), so about n are distinct, a load of 1/2.
  int bits = 6;
  while ((size_t(1) << bits) < 2 * n) ++bits;
  const size_t mask = (size_t(1) << bits) - 1;
  struct Slot {
    Key key;
    uint32_t id;  // kFree: empty
  };
  constexpr uint32_t kFree = ~0u;
  std::vector<Slot> table(mask + 1, Slot{0, kFree});
  std::vector<uint32_t> from(n), to(n);
  uint32_t nv = 0;
  auto id_of = [&](Key k) {
    const uint64_t lo = uint64_t(k), hi = uint64_t(k >> 64);
    uint64_t x = lo ^ (hi * 0xC2B2AE3D27D4EB4Full);  // (splitmix64's finalizer)
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    size_t i = size_t((x ^ (x >> 31)) >> (64 - bits));
    for (;; i = (i + 1) & mask) {
      if (table[i].id == kFree) {
        table[i] = Slot{k, nv};
        return nv++;
      }
      if (table[i].key == k) return table[i].id;
    }
  };
  for (size_t e = 0; e < n; ++e) {
    from[e] = id_of(key_of(unit[e].au, unit[e].av, unit[e].aw));
    to[e] = id_of(key_of(unit[e].bu, unit[e].bv, unit[e].bw));
  }
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> outs(nv, 0), ins(nv, 0), out_edge(nv, kNone);
  for (size_t e = 0; e < n; ++e) {
    ++outs[from[e]];
    ++ins[to[e]];
    out_edge[from[e]] = uint32_t(e);
  }
  // Chains through vertices with one edge in and one out.
  std::vector<uint32_t> next(n, kNone);
  std::vector<uint8_t> has_prev(n, 0), used(n, 0);
  for (size_t e = 0; e < n; ++e) {
    const uint32_t v = to[e];
    if (outs[v] == 1 && ins[v] == 1) {
      next[e] = out_edge[v];
      has_prev[next[e]] = 1;
    }
  }
  // The pieces' edges one after another (piece i: edges [first, first + count) of `piece_edges`).
  std::vector<Piece> pieces;
  std::vector<InsideEdge> piece_edges;
  pieces.reserve(n / 4 + 1);
  piece_edges.reserve(n + n / 4 + 8);
  auto add_piece = [&](size_t first) {  // the edges from `first` to the end of piece_edges
    Piece p;
    p.first = first;
    p.count = piece_edges.size() - first;
    const InsideEdge* edges = piece_edges.data() + first;
    V3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < p.count; ++i) {
      const InsideEdge& e = edges[i];
      for (const V3 q : {world(e.au, e.av, e.aw), world(e.bu, e.bv, e.bw)}) {
        lo = {std::min(lo.x, q.x), std::min(lo.y, q.y), std::min(lo.z, q.z)};
        hi = {std::max(hi.x, q.x), std::max(hi.y, q.y), std::max(hi.z, q.z)};
      }
    }
    p.c = {0.5 * (lo.x + hi.x), 0.5 * (lo.y + hi.y), 0.5 * (lo.z + hi.z)};
    p.m = {0, 0, 0};
    p.r = p.area = 0;
    for (size_t i = 0; i < p.count; ++i) {
      const InsideEdge& e = edges[i];
      const V3 a = sub(world(e.au, e.av, e.aw), p.c), b = sub(world(e.bu, e.bv, e.bw), p.c);
      const V3 x = cross(a, b);
      p.m = {p.m.x + 0.5 * x.x, p.m.y + 0.5 * x.y, p.m.z + 0.5 * x.z};
      p.area += 0.5 * norm(x);
      p.r = std::max({p.r, norm(a), norm(b)});
    }
    p.r *= 1.0 + 1e-9;  // (over the rounding of the world positions)
    p.area *= 1.0 + 1e-9;
    pieces.push_back(p);
  };
  // A closed loop into pieces: runs of at most kInsidePieceEdges edges, each closed by its chord; the
  // chords forward, a loop again.
  std::vector<InsideEdge> coarse;
  auto decompose = [&](std::vector<InsideEdge>& loop) {
    while (!loop.empty()) {
      const size_t m = loop.size();
      if (m <= size_t(kInsidePieceEdges)) {
        const size_t first = piece_edges.size();
        piece_edges.insert(piece_edges.end(), loop.begin(), loop.end());
        add_piece(first);
        return;
      }
      const size_t k = (m + kInsidePieceEdges - 1) / kInsidePieceEdges;
      coarse.clear();
      for (size_t i = 0; i < k; ++i) {
        const size_t b0 = i * m / k, b1 = (i + 1) * m / k;
        const size_t first = piece_edges.size();
        piece_edges.insert(piece_edges.end(), loop.begin() + std::ptrdiff_t(b0), loop.begin() + std::ptrdiff_t(b1));
        const InsideEdge forward = spanning(loop[b0], loop[b1 - 1]);  // the run's first vertex to its last
        if (!zero_length(forward)) {
          piece_edges.push_back(reversed(forward));
          coarse.push_back(forward);
        }
        add_piece(first);
      }
      if (coarse.size() <= 2) return;  // (two chords: one edge both ways, their terms cancel)
      loop.swap(coarse);
    }
  };
  std::vector<InsideEdge> c;
  auto chain_from = [&](uint32_t e0) {
    c.clear();
    for (uint32_t e = e0; e != kNone && !used[e]; e = next[e]) {
      used[e] = 1;
      c.push_back(unit[e]);
    }
  };
  for (size_t e = 0; e < n; ++e)  // open chains a0 -> ... -> an: closed by an -> a0; a0 -> an loose
    if (!has_prev[e] && !used[e]) {
      chain_from(uint32_t(e));
      const InsideEdge across = spanning(c.front(), c.back());
      if (!zero_length(across)) {
        c.push_back(reversed(across));
        t.loose.push_back(across);
      }
      decompose(c);
    }
  for (size_t e = 0; e < n; ++e)  // closed loops
    if (!used[e]) {
      chain_from(uint32_t(e));
      decompose(c);
    }
  if (pieces.empty()) return t;

  // Pieces along a Morton curve of their centres, in chunks of about 8, each chunk a binary tree, the
  // chunks the leaves of one binary tree above them (node 0 its root).
  V3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const Piece& p : pieces) {
    lo = {std::min(lo.x, p.c.x), std::min(lo.y, p.c.y), std::min(lo.z, p.c.z)};
    hi = {std::max(hi.x, p.c.x), std::max(hi.y, p.c.y), std::max(hi.z, p.c.z)};
  }
  const double span = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z, 1e-300});
  std::vector<std::pair<uint64_t, uint32_t>> order(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto q = [&](double x, double l) {
      return uint64_t(std::min(2097151.0, std::max(0.0, (x - l) / span * 2097151.0)));
    };
    const V3& pc = pieces[i].c;
    order[i] = {spread3(q(pc.x, lo.x)) << 2 | spread3(q(pc.y, lo.y)) << 1 | spread3(q(pc.z, lo.z)), uint32_t(i)};
  }
  tbb::parallel_sort(order.begin(), order.end());  // (pairs: no two alike)
  const size_t np = pieces.size();
  // The edges of the sorted pieces [0, i) (where piece i's edges go in t.edges).
  std::vector<size_t> edge_at(np + 1, 0);
  for (size_t i = 0; i < np; ++i) edge_at[i + 1] = edge_at[i] + pieces[order[i].second].count;
  t.edges.resize(edge_at[np]);
  auto node_of = [&](size_t b, size_t e) {  // the ball and sums of sorted pieces [b, e)
    InsideNode x{};
    V3 l{INFINITY, INFINITY, INFINITY}, h{-INFINITY, -INFINITY, -INFINITY}, m{0, 0, 0};
    double area = 0;
    for (size_t i = b; i < e; ++i) {
      const Piece& p = pieces[order[i].second];
      l = {std::min(l.x, p.c.x - p.r), std::min(l.y, p.c.y - p.r), std::min(l.z, p.c.z - p.r)};
      h = {std::max(h.x, p.c.x + p.r), std::max(h.y, p.c.y + p.r), std::max(h.z, p.c.z + p.r)};
      m = {m.x + p.m.x, m.y + p.m.y, m.z + p.m.z};
      area += p.area;
    }
    const V3 cc = e - b == 1 ? pieces[order[b].second].c : V3{0.5 * (l.x + h.x), 0.5 * (l.y + h.y), 0.5 * (l.z + h.z)};
    double r = 0;
    for (size_t i = b; i < e; ++i) {
      const Piece& p = pieces[order[i].second];
      r = std::max(r, norm(sub(p.c, cc)) + p.r);
    }
    r *= 1.0 + 1e-9;
    x.c[0] = cc.x, x.c[1] = cc.y, x.c[2] = cc.z;
    x.m[0] = m.x, x.m[1] = m.y, x.m[2] = m.z;
    x.r = r;
    x.ar2 = 2.0 * area * r;
    x.m2 = 2.0 * norm(m);
    return x;
  };
  // The nodes in preorder at known places, its halves built in parallel: the same nodes as one
  // recursion in order. Every node above the pieces has two children and every chunk at least one
  // piece (chunks <= np), so a subtree over k pieces, chunk or not, has 2k - 1 nodes.
  const size_t chunks = std::min<size_t>(1024, std::max<size_t>(1, (np + 7) / 8));
  auto nodes_of = [&](size_t qb, size_t qe) { return 2 * (qe * np / chunks - qb * np / chunks) - 1; };
  t.nodes.resize(2 * np - 1);
  t.chunks.resize(chunks + 1);
  constexpr size_t kSerial = 64;  // pieces under which a subtree is built by one thread
  auto emit = [&](auto&& self, size_t at, size_t b, size_t e) -> void {  // sorted pieces [b, e) at node `at`
    t.nodes[at] = node_of(b, e);
    t.nodes[at].skip = uint32_t(at + 2 * (e - b) - 1);
    if (e - b == 1) {
      const Piece& p = pieces[order[b].second];
      t.nodes[at].first = uint32_t(edge_at[b]);
      t.nodes[at].count = uint32_t(p.count);
      std::copy(piece_edges.begin() + std::ptrdiff_t(p.first), piece_edges.begin() + std::ptrdiff_t(p.first + p.count),
                t.edges.begin() + std::ptrdiff_t(edge_at[b]));
      return;
    }
    const size_t mid = b + (e - b) / 2, right = at + 1 + 2 * (mid - b) - 1;
    if (e - b < kSerial) {
      self(self, at + 1, b, mid);
      self(self, right, mid, e);
    } else {
      tbb::parallel_invoke([&] { self(self, at + 1, b, mid); }, [&] { self(self, right, mid, e); });
    }
  };
  auto upper = [&](auto&& self, size_t at, size_t qb, size_t qe) -> void {  // chunks [qb, qe) under node `at`
    if (qe - qb == 1) {
      t.chunks[qb] = uint32_t(at);
      emit(emit, at, qb * np / chunks, qe * np / chunks);
      return;
    }
    const size_t qm = qb + (qe - qb) / 2, right = at + 1 + nodes_of(qb, qm);
    t.nodes[at] = node_of(qb * np / chunks, qe * np / chunks);
    t.nodes[at].skip = uint32_t(at + nodes_of(qb, qe));
    tbb::parallel_invoke([&] { self(self, at + 1, qb, qm); }, [&] { self(self, right, qm, qe); });
  };
  upper(upper, 0, 0, chunks);
  t.chunks[chunks] = uint32_t(t.nodes.size());
  return t;
}

InsideTree inside_walk_trees(const std::vector<InsideEdge>& boundary, const InsideScale& s, size_t min_edges,
                             size_t max_edges) {
  const size_t n = boundary.size();
  if (n < min_edges || n > max_edges) return InsideTree{};
  InsideTree t = build_inside_tree(boundary, s);
  t.patience = t.nodes.empty() ? 0 : int(std::min<size_t>(16, std::max<size_t>(1, n / 1024)));
  return t;
}

}  // namespace voxtile
