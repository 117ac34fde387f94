// The inside test's host half: the mesh as the test sees it (snapped triangles, boundary edges, the
// decision per column), and the CPU reference of the inside grids and of the narrow-band distance.
#include "core/inside.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>

#include "core/band_search.h"
#include "core/error.h"
#include "core/inside_grid.h"
#include "core/inside_tree.h"
#include "core/progress.h"
#include "core/targets.h"
#include "core/vectorized.h"
#include "core/voxelize.h"

namespace voxtile {

const char* inside_name(InsideMethod m) {
  return m == InsideMethod::kParity ? "parity" : m == InsideMethod::kWinding ? "winding" : "vote";
}

InsideMethod parse_inside(const std::string& text) {
  if (text == "parity") return InsideMethod::kParity;
  if (text == "winding") return InsideMethod::kWinding;
  if (text == "vote") return InsideMethod::kVote;
  fail(ErrorKind::kUsage, "unknown inside test '" + text + "' (expected parity, winding or vote)");
}

namespace {

struct PosKey {
  uint32_t x, y, z;
  uint32_t index;
  bool same(const PosKey& o) const { return x == o.x && y == o.y && z == o.z; }
  bool operator<(const PosKey& o) const {
    return x != o.x ? x < o.x : y != o.y ? y < o.y : z != o.z ? z < o.z : index < o.index;
  }
};

}  // namespace

InsideMesh prepare_inside(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, int axis, bool boundary,
                          bool triangles) {
  InsideMesh m;
  m.axis = axis;
  const int au = (axis + 1) % 3, av = (axis + 2) % 3;
  auto comp = [](const Vec3f& p, int a) { return a == 0 ? p.x : a == 1 ? p.y : p.z; };
  const int32_t d[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
  const double s[3] = {spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z};
  m.dims = {d[au], d[av], d[axis]};
  m.scale = {s[au], s[av], s[axis]};
  const size_t nt = mesh.num_triangles();
  if (triangles) {
    m.u.resize(3 * nt);
    m.v.resize(3 * nt);
    m.w.resize(3 * nt);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, 3 * nt, 1 << 14), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t c = r.begin(); c < r.end(); ++c) {
        const Vec3f& p = g[mesh.indices[c]];
        m.u[c] = inside_snap(comp(p, au));
        m.v[c] = inside_snap(comp(p, av));
        m.w[c] = comp(p, axis);
      }
    });
  }
  if (!boundary || nt == 0) return m;
  // Weld vertices by grid-space position, then count directed edges between welded vertices.
  std::vector<PosKey> keys(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    keys[i] = {inside_position_bits(g[i].x), inside_position_bits(g[i].y), inside_position_bits(g[i].z), uint32_t(i)};
  tbb::parallel_sort(keys.begin(), keys.end());
  std::vector<uint32_t> weld(g.size());
  uint32_t id = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0 && !keys[i].same(keys[i - 1])) ++id;
    weld[keys[i].index] = id;
  }
  struct DirEdge {
    uint64_t key;   // lo << 32 | hi (welded ids)
    int32_t sign;   // +1 when the triangle runs lo -> hi
    uint32_t from;  // a mesh vertex at lo
    uint32_t to;    // a mesh vertex at hi
    bool operator<(const DirEdge& o) const { return key < o.key; }
  };
  std::vector<DirEdge> edges;
  edges.reserve(3 * nt);
  for (size_t t = 0; t < nt; ++t)
    for (int c = 0; c < 3; ++c) {
      const uint32_t ia = mesh.indices[3 * t + c], ib = mesh.indices[3 * t + (c + 1) % 3];
      const uint32_t a = weld[ia], b = weld[ib];
      if (a == b) continue;
      if (a < b)
        edges.push_back({uint64_t(a) << 32 | b, 1, ia, ib});
      else
        edges.push_back({uint64_t(b) << 32 | a, -1, ib, ia});
    }
  tbb::parallel_sort(edges.begin(), edges.end());
  for (size_t i = 0; i < edges.size();) {
    size_t j = i;
    int32_t net = 0;
    uint32_t from = edges[i].from, to = edges[i].to;
    for (; j < edges.size() && edges[j].key == edges[i].key; ++j) net += edges[j].sign;
    if (net != 0) {
      const Vec3f& a = g[from];
      const Vec3f& b = g[to];
      m.boundary.push_back({inside_snap(comp(a, au)), inside_snap(comp(a, av)), inside_snap(comp(b, au)),
                            inside_snap(comp(b, av)), comp(a, axis), comp(b, axis), net});
    }
    i = j;
  }
  return m;
}

// ---- CPU reference -------------------------------------------------------------------------

namespace {

struct Crossing {
  uint64_t key;  // column (0..63) << 40 | first voxel above
  int32_t sign;
  bool operator<(const Crossing& o) const { return key < o.key; }
};

struct TileOut {
  std::vector<uint64_t> keys;
  std::vector<BrickMask> masks;
  std::vector<BrickRun> runs;  // full bricks of a column along z (axis 2: a tile is one brick column)
};

struct TileScratch {
  std::vector<Crossing> crossings;
  std::vector<BrickMask> column_bricks;  // by w >> 3
  std::vector<uint32_t> touched;
  std::vector<uint8_t> need;  // inside_grid_cpu's `only`: its bricks along the tile's column of bricks
  // An open column's cut of the piece trees: its far balls, and its near pieces' edges with the loose
  // edges (the near part at every voxel), field by field where the sums are vectorised.
  std::vector<uint32_t> far;
  std::vector<InsideEdge> near;
  InsideEdgeLanes near_lanes;
  InsideFarLanes far_lanes;
  std::vector<InsideEdge> point;  // a voxel's pieces opened by inside_tree_point_cut
  InsideEdgeLanes point_lanes;
};

// Sets voxels [k0, k1) of column (lu, lv) of the tile.
void set_span(TileScratch& s, int axis, int lu, int lv, int64_t k0, int64_t k1) {
  for (int64_t k = k0; k < k1;) {
    const uint32_t b = uint32_t(k >> 3);
    BrickMask& m = s.column_bricks[b];
    if (!m.any()) s.touched.push_back(b);
    const int64_t end = std::min<int64_t>(k1, (int64_t(b) + 1) * 8);
    if (axis == 2) {
      const int lo = int(k & 7), n = int(end - k);
      const uint64_t byte = ((uint64_t(1) << n) - 1) << lo;
      const int off = lu * 64 + lv * 8;
      m.w[off >> 6] |= byte << (off & 63);
    } else {
      for (int64_t q = k; q < end; ++q) {
        const int lw = int(q & 7);
        m.set(axis == 0 ? brick_offset(lw, lu, lv) : brick_offset(lv, lw, lu));
      }
    }
    k = end;
  }
}

}  // namespace

SparseGrid inside_grid_cpu(const InsideMesh& m, InsideMethod method, const InsideRange& range, const SparseGrid* only) {
  const int32_t u_lo = range.lo[(m.axis + 1) % 3], u_hi = range.hi[(m.axis + 1) % 3];
  const int32_t v_lo = range.lo[(m.axis + 2) % 3], v_hi = range.hi[(m.axis + 2) % 3];
  const int32_t w_lo = range.lo[m.axis], w_hi = range.hi[m.axis];
  const int axis = m.axis;
  const int32_t tiles_v = (m.dims.y + 7) / 8;
  const size_t nt = m.w.size() / 3;
  // Bin triangles into 8x8 column tiles by the columns their snapped bounds cover.
  std::vector<uint64_t> pairs;
  {
    tbb::enumerable_thread_specific<std::vector<uint64_t>> local;
    tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 4096), [&](const tbb::blocked_range<size_t>& r) {
      std::vector<uint64_t>& out = local.local();
      for (size_t t = r.begin(); t < r.end(); ++t) {
        const int64_t* u = &m.u[3 * t];
        const int64_t* v = &m.v[3 * t];
        int32_t u0, u1, v0, v1;
        inside_column_range(std::min({u[0], u[1], u[2]}), std::max({u[0], u[1], u[2]}), m.dims.x, &u0, &u1);
        inside_column_range(std::min({v[0], v[1], v[2]}), std::max({v[0], v[1], v[2]}), m.dims.y, &v0, &v1);
        if (u0 > u1 || v0 > v1) continue;
        for (int32_t tu = u0 >> 3; tu <= u1 >> 3; ++tu)
          for (int32_t tv = v0 >> 3; tv <= v1 >> 3; ++tv)
            out.push_back((uint64_t(tu) * uint64_t(tiles_v) + uint64_t(tv)) << 32 | t);
      }
    });
    for (auto& l : local) pairs.insert(pairs.end(), l.begin(), l.end());
    tbb::parallel_sort(pairs.begin(), pairs.end());
  }
  // Every tile of the mesh's extent across the column: a column with no crossing can still be
  // inside (through holes) when the boundary surrounds it.
  const int32_t tu0 = u_lo >> 3, tu1 = u_hi > u_lo ? (u_hi - 1) >> 3 : -1;
  const int32_t tv0 = v_lo >> 3, tv1 = v_hi > v_lo ? (v_hi - 1) >> 3 : -1;
  const size_t ntiles = tu1 < tu0 || tv1 < tv0 ? 0 : size_t(tu1 - tu0 + 1) * size_t(tv1 - tv0 + 1);
  std::vector<TileOut> out(ntiles);
  const uint32_t nbw = uint32_t((m.dims.z + 7) / 8);
  tbb::enumerable_thread_specific<TileScratch> scratch([&] {
    TileScratch s;
    s.column_bricks.assign(nbw, BrickMask{});
    return s;
  });
  const bool winding = method == InsideMethod::kWinding && !m.boundary.empty();
  // The boundary term's sums eight edges at a time where the CPU can (core/vectorized.h: the same bits).
  const bool vectorized = winding && cpu_has_x86_64_v4();
  const InsideEdgeLanes lanes =
      vectorized ? inside_edge_lanes(m.boundary.data(), m.boundary.size()) : InsideEdgeLanes{};
  const InsideTree trees = winding ? inside_walk_trees(m.boundary, m.scale, m.tree_min_edges) : InsideTree{};
  const InsideTreeView tree = inside_tree_whole(trees);
  progress_total(ntiles);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, ntiles, 1), [&](const tbb::blocked_range<size_t>& r) {
    TileScratch& s = scratch.local();
    // The key of brick bw along the column of bricks of tile (tu, tv).
    auto column_brick_key = [&](int32_t tu, int32_t tv, uint32_t bw) {
      return axis == 2   ? brick_key(tu, tv, int32_t(bw))
             : axis == 0 ? brick_key(int32_t(bw), tu, tv)
                         : brick_key(tv, int32_t(bw), tu);
    };
    for (size_t ti = r.begin(); ti < r.end(); ++ti) {
      const int32_t tu = tu0 + int32_t(ti / size_t(tv1 - tv0 + 1)), tv = tv0 + int32_t(ti % size_t(tv1 - tv0 + 1));
      const uint64_t tile = uint64_t(tu) * uint64_t(tiles_v) + uint64_t(tv);
      if (only) {  // `only`'s bricks along the tile's column of bricks (s.need); none: nothing to do
        bool any = false;
        s.need.assign(nbw, 0);
        for (uint32_t bw = 0; bw < nbw; ++bw) {
          s.need[bw] = std::binary_search(only->keys.begin(), only->keys.end(), column_brick_key(tu, tv, bw));
          any |= s.need[bw] != 0;
        }
        if (!any) continue;
      }
      const size_t p0 = size_t(std::lower_bound(pairs.begin(), pairs.end(), tile << 32) - pairs.begin());
      const size_t p1 = size_t(std::lower_bound(pairs.begin(), pairs.end(), (tile + 1) << 32) - pairs.begin());
      s.crossings.clear();
      if (p0 == p1 && !winding) continue;
      for (size_t p = p0; p < p1; ++p) {
        const size_t t = size_t(pairs[p] & 0xffffffffu);
        const int64_t* u = &m.u[3 * t];
        const int64_t* v = &m.v[3 * t];
        int32_t u0, u1, v0, v1;
        inside_column_range(std::min({u[0], u[1], u[2]}), std::max({u[0], u[1], u[2]}), m.dims.x, &u0, &u1);
        inside_column_range(std::min({v[0], v[1], v[2]}), std::max({v[0], v[1], v[2]}), m.dims.y, &v0, &v1);
        u0 = std::max(u0, tu * 8), u1 = std::min(u1, tu * 8 + 7);
        v0 = std::max(v0, tv * 8), v1 = std::min(v1, tv * 8 + 7);
        for (int32_t j = v0; j <= v1; ++j) {
          // The row's crossed columns (inside_row_span), not the whole box, where the box's row is wide
          // enough for the search to pay (the same crossings either way: on 2 cores the tubes' parity
          // solid at 256^3 took 360 ms with the search on rows of 4 columns or more, 410 with it on
          // every row, searched from its ends where it is narrow).
          int32_t i0 = u0, i1 = u1;
          if (u1 - u0 >= 3 && !inside_row_span(u, v, inside_column(j), u0, u1, &i0, &i1)) continue;
          for (int32_t i = i0; i <= i1; ++i) {
            double wc;
            const int sgn = inside_crossing(u, v, &m.w[3 * t], inside_column(i), inside_column(j), &wc);
            if (!sgn) continue;
            const int64_t k0 = inside_first_above(wc);
            if (k0 >= m.dims.z) continue;
            s.crossings.push_back({uint64_t((i - tu * 8) * 8 + (j - tv * 8)) << 40 | uint64_t(k0), sgn});
          }
        }
      }
      std::sort(s.crossings.begin(), s.crossings.end());
      const bool tile_decided = !winding || inside_tile_decided(m.boundary.data(), m.boundary.size(), tu, tv, m.scale);
      size_t c = 0;
      for (int col = 0; col < 64; ++col) {
        const int lu = col >> 3, lv = col & 7;
        const int32_t i = tu * 8 + lu, j = tv * 8 + lv;
        size_t end = c;
        while (end < s.crossings.size() && int(s.crossings[end].key >> 40) == col) ++end;
        if (i >= m.dims.x || j >= m.dims.y) {
          c = end;
          continue;
        }
        const int64_t pu = inside_column(i), pv = inside_column(j);
        // A column outside the inside range (a tile's columns beyond the mesh's extent) is decided by
        // its crossings (it has none) as on the GPU, whose undecided columns are those of the range:
        // its boundary term can round to w >= 0.5 next to an open edge on the bounds' face.
        const bool in_range = i >= u_lo && i < u_hi && j >= v_lo && j < v_hi;
        const bool decided =
            tile_decided || !in_range ||
            (vectorized ? inside_column_decided_vectorized(lanes, pu, pv, m.scale)
                        : inside_column_decided(m.boundary.data(), m.boundary.size(), pu, pv, m.scale));
        if (decided) {
          int64_t sum = 0;
          for (size_t q = c; q < end; ++q) {
            sum += s.crossings[q].sign;
            const int64_t k0 = int64_t(s.crossings[q].key & 0xffffffffffull);
            const int64_t k1 = q + 1 < end ? int64_t(s.crossings[q + 1].key & 0xffffffffffull) : m.dims.z;
            const bool in = method == InsideMethod::kWinding ? sum >= 1 : (sum & 1) != 0;
            if (in && k1 > k0) set_span(s, axis, lu, lv, k0, k1);
          }
        } else {
          // Span by span through the mesh's extent along the column: w = c + B / 4pi, B bounded over
          // ranges of voxels with the piece trees, summed over every edge where a voxel stays open.
          const InsideColumn col = inside_column_at(i, j, m.scale);
          auto exact = [&](int64_t k) {
            return vectorized ? inside_boundary_parts_vectorized(lanes, pu, pv, k, m.scale)
                              : inside_boundary_parts(m.boundary.data(), m.boundary.size(), pu, pv, k, m.scale);
          };
          int patience = trees.patience;
          // The column's cut of the trees (from the root: far groups of chunks are one ball), listed
          // once and summed eight terms at a time; a voxel its bounds leave open looks at the far balls
          // from itself (inside_tree_point, three levels) before its exact sum (2 cores, Sponza's sdf at
          // 256^3: 5.9 s before, 1.7 s; scripts/bench-results/winding-point-2026-11-29.md).
          if (patience > 0) {
            inside_cut_lists(tree, col, s.far, s.near);
            // (2 cores: Sponza's sdf at 256^3 1.63-1.82 -> 1.40-1.53 s, its solid at 200^3 1.56-1.65 ->
            // 0.97-0.99; 144k open tubes within 2%, 2,000 short ones +13%: winding-blocks-h200-2026-11-29.md)
            if (inside_cut_wider(
                    inside_listed_rest(trees.nodes.data(), s.far.data(), uint32_t(s.far.size()), 0, 1, col)))
              inside_cut_lists(tree, col, s.far, s.near, kInsideWideRadii);
            if (vectorized) {
              inside_edge_lanes(s.near_lanes, s.near.data(), s.near.size());
              inside_far_lanes(s.far_lanes, trees.nodes.data(), s.far.data(), s.far.size());
            }
          }
          auto tree_near = [&](int64_t k) {
            if (vectorized) return inside_boundary_parts_vectorized(s.near_lanes, pu, pv, k, m.scale);
            return inside_boundary_parts(s.near.data(), s.near.size(), pu, pv, k, m.scale);
          };
          auto tree_far = [&](int64_t a, int64_t b) {
            if (!vectorized)
              return inside_listed_far(trees.nodes.data(), s.far.data(), uint32_t(s.far.size()), 0, 1, col, a, b,
                                       m.scale);
            double wm, h;
            inside_range_middle(a, b, m.scale, &wm, &h);
            return inside_far_vectorized(s.far_lanes, col, wm, h);
          };
          auto tree_point = [&](int64_t k, int level) {
            if (level >= kInsidePointLevels) return InsideFar{0.0, INFINITY, 0.0};
            const double rest = inside_point_rest(level);
            if (!vectorized)
              return inside_tree_point(tree, s.far.data(), uint32_t(s.far.size()), 0, 1, col, k, m.scale, rest);
            s.point.clear();
            const InsideFar f = inside_tree_point_cut(tree, s.far.data(), uint32_t(s.far.size()), 0, 1, col, k, m.scale,
                                                      rest, [&](uint32_t e) { s.point.push_back(trees.edges[e]); });
            inside_edge_lanes(s.point_lanes, s.point.data(), s.point.size());
            return inside_point_far(inside_boundary_parts_vectorized(s.point_lanes, pu, pv, k, m.scale), f);
          };
          auto set = [&](int64_t k0, int64_t k1) { set_span(s, axis, lu, lv, k0, k1); };
          auto need = [&](int64_t bw) { return bw < int64_t(s.need.size()) && s.need[size_t(bw)] != 0; };
          // What the trees leave (and every column without them): the approximate sums first where
          // vectorised (inside_winding_exact_approx: the same voxels).
          auto rest = [&](int64_t sum, int64_t k0, int64_t k1) {
            if (!vectorized) return inside_winding_exact(exact, sum, k0, k1, set);
            inside_winding_exact_approx(
                [&](int64_t k) { return inside_boundary_parts_approx_vectorized(lanes, pu, pv, k, m.scale); }, exact,
                sum, k0, k1, set);
          };
          const int64_t k_lo = std::max<int64_t>(w_lo, 0), k_hi = std::min<int64_t>(w_hi, m.dims.z);
          // The far part over the whole walk, tried before each range's own (inside_winding_walk).
          const InsideFar coarse = patience > 0 && k_lo < k_hi
                                       ? inside_listed_far(trees.nodes.data(), s.far.data(), uint32_t(s.far.size()), 0,
                                                           1, col, k_lo, k_hi - 1, m.scale, true)
                                       : inside_no_far();
          inside_winding_column(
              [&](int64_t sum, int64_t k0, int64_t k1) {
                if (only)
                  inside_winding_span_in(need, trees.patience == 0, tree_near, tree_far, tree_point, exact, sum, k0, k1,
                                         set, patience, rest, coarse);
                else
                  inside_winding_span(tree_near, tree_far, tree_point, exact, sum, k0, k1, set, patience, rest, coarse);
              },
              c, end, k_lo, k_hi,
              [&](uint64_t q, int64_t* k0, int32_t* sign) {
                *k0 = int64_t(s.crossings[q].key & 0xffffffffffull);
                *sign = s.crossings[q].sign;
              });
        }
        c = end;
      }
      // Emit the tile's bricks (w ascending) and clear the scratch.
      std::sort(s.touched.begin(), s.touched.end());
      TileOut& o = out[ti];
      for (uint32_t bw : s.touched) {
        BrickMask& mk = s.column_bricks[bw];
        if (mk.any()) {
          const uint64_t key = column_brick_key(tu, tv, bw);
          if (axis == 2 && brick_full(mk)) {
            if (!o.runs.empty() && o.runs.back().key + o.runs.back().count == key)
              ++o.runs.back().count;
            else
              o.runs.push_back({key, 1});
          } else {
            o.keys.push_back(key);
            o.masks.push_back(mk);
          }
        }
        mk = BrickMask{};
      }
      s.touched.clear();
    }
    progress_advance(r.size());
  });
  // Collect and order by key.
  std::vector<std::pair<uint64_t, const BrickMask*>> all;
  for (const TileOut& o : out)
    for (size_t b = 0; b < o.keys.size(); ++b) all.emplace_back(o.keys[b], &o.masks[b]);
  tbb::parallel_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  SparseGrid g;
  g.keys.resize(all.size());
  g.masks.resize(all.size());
  for (size_t b = 0; b < all.size(); ++b) {
    g.keys[b] = all[b].first;
    g.masks[b] = *all[b].second;
  }
  for (const TileOut& o : out) g.runs.insert(g.runs.end(), o.runs.begin(), o.runs.end());
  tbb::parallel_sort(g.runs.begin(), g.runs.end(), [](const BrickRun& a, const BrickRun& b) { return a.key < b.key; });
  g.make_runs();  // the full bricks of the other axes
  return g;
}

SparseGrid combine_masks(const std::vector<const SparseGrid*>& grids, int at_least) {
  bool any_runs = false;
  for (const SparseGrid* g : grids) any_runs = any_runs || !g->runs.empty();
  if (any_runs && at_least >= 2) {
    // A vote over interiors: with the runs written out (the CPU vote only).
    std::vector<SparseGrid> copies(grids.size());
    std::vector<const SparseGrid*> ptrs;
    for (size_t g = 0; g < grids.size(); ++g) ptrs.push_back(&expanded_runs(*grids[g], copies[g]));
    return combine_masks(ptrs, at_least);
  }
  SparseGrid out;
  // The union of the runs (at_least 1): bricks they cover are full whatever the masks say.
  for (const SparseGrid* g : grids) out.runs.insert(out.runs.end(), g->runs.begin(), g->runs.end());
  if (any_runs) {
    std::sort(out.runs.begin(), out.runs.end(), [](const BrickRun& a, const BrickRun& b) { return a.key < b.key; });
    size_t n = 0;
    for (const BrickRun& r : out.runs) {
      if (n > 0 && r.key <= out.runs[n - 1].key + out.runs[n - 1].count) {
        BrickRun& last = out.runs[n - 1];
        last.count = std::max(last.key + last.count, r.key + r.count) - last.key;
      } else {
        out.runs[n++] = r;
      }
    }
    out.runs.resize(n);
  }
  // The bricks, merged in chunks of the key space on all cores (a large solid's union has millions).
  size_t total = 0, largest = 0;
  for (size_t g = 0; g < grids.size(); ++g) {
    total += grids[g]->keys.size();
    if (grids[g]->keys.size() > grids[largest]->keys.size()) largest = g;
  }
  const size_t chunks = std::max<size_t>(1, std::min<size_t>(256, total / 16384));
  std::vector<uint64_t> split(chunks + 1, UINT64_MAX);  // chunk c: keys in [split[c], split[c + 1])
  split[0] = 0;
  const BrickKeys& big = grids.empty() ? out.keys : grids[largest]->keys;
  for (size_t c = 1; c < chunks; ++c) split[c] = big[c * big.size() / chunks];
  struct Part {
    std::vector<uint64_t> keys;
    std::vector<BrickMask> masks;
  };
  std::vector<Part> parts(chunks);
  tbb::parallel_for(size_t(0), chunks, [&](size_t c) {
    const uint64_t lo = split[c], hi = split[c + 1];
    if (lo >= hi) return;
    std::vector<size_t> pos(grids.size()), end(grids.size());
    for (size_t g = 0; g < grids.size(); ++g) {
      const BrickKeys& k = grids[g]->keys;
      pos[g] = size_t(std::lower_bound(k.begin(), k.end(), lo) - k.begin());
      end[g] = hi == UINT64_MAX ? k.size() : size_t(std::lower_bound(k.begin(), k.end(), hi) - k.begin());
    }
    size_t rp = size_t(std::upper_bound(out.runs.begin(), out.runs.end(), lo,
                                        [](uint64_t k, const BrickRun& x) { return k < x.key; }) -
                       out.runs.begin());
    rp = rp > 0 ? rp - 1 : 0;
    Part& part = parts[c];
    while (true) {
      uint64_t key = UINT64_MAX;
      for (size_t g = 0; g < grids.size(); ++g)
        if (pos[g] < end[g]) key = std::min(key, grids[g]->keys[pos[g]]);
      if (key == UINT64_MAX) break;
      BrickMask in[3] = {};
      int n = 0;
      for (size_t g = 0; g < grids.size(); ++g)
        if (pos[g] < end[g] && grids[g]->keys[pos[g]] == key) in[n++] = grids[g]->masks[pos[g]++];
      while (rp < out.runs.size() && out.runs[rp].key + out.runs[rp].count <= key) ++rp;
      if (rp < out.runs.size() && out.runs[rp].key <= key) continue;  // inside a run
      BrickMask r{};
      for (int w = 0; w < 8; ++w) {
        if (at_least <= 1)
          r.w[w] = in[0].w[w] | in[1].w[w] | in[2].w[w];
        else if (at_least == 2)
          r.w[w] = (in[0].w[w] & in[1].w[w]) | (in[0].w[w] & in[2].w[w]) | (in[1].w[w] & in[2].w[w]);
        else
          r.w[w] = in[0].w[w] & in[1].w[w] & in[2].w[w];
      }
      if (r.any()) {
        part.keys.push_back(key);
        part.masks.push_back(r);
      }
    }
  });
  size_t kept = 0;
  for (const Part& part : parts) kept += part.keys.size();
  out.keys.reserve(kept);
  out.masks.reserve(kept);
  for (Part& part : parts) {
    out.keys.insert(out.keys.end(), part.keys.begin(), part.keys.end());
    out.masks.insert(out.masks.end(), part.masks.begin(), part.masks.end());
    part = Part();  // freed as it is copied
  }
  out.make_runs();
  return out;
}

GridBox mesh_grid_box(const Mesh& mesh, const GridSpec& spec) {
  const Bounds wb = mesh.bounds();
  return {spec.world_to_grid(wb.lo), spec.world_to_grid(wb.hi)};
}

InsideRange inside_range(const Mesh& mesh, const GridSpec& spec) {
  const GridBox box = mesh_grid_box(mesh, spec);
  const float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, hi[3] = {box.hi.x, box.hi.y, box.hi.z};
  InsideRange r;
  const int32_t d[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
  for (int a = 0; a < 3; ++a) {
    // Voxels whose centre lies in [lo, hi]: the only ones a winding number can reach 0.5 at.
    const double f = std::ceil(double(lo[a]) - 0.5), l = std::floor(double(hi[a]) - 0.5);
    r.lo[a] = int32_t(std::max(0.0, std::min(f, double(d[a]))));
    r.hi[a] = int32_t(std::max(0.0, std::min(l + 1.0, double(d[a]))));
  }
  return r;
}

SparseGrid inside_cpu(const Mesh& mesh, const GridSpec& spec, InsideMethod method, const SparseGrid* only) {
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  const InsideRange range = inside_range(mesh, spec);
  SparseGrid out;
  if (method == InsideMethod::kVote) {
    SparseGrid axes[3];
    for (int a = 0; a < 3; ++a)
      axes[a] = inside_grid_cpu(prepare_inside(mesh, g, spec, a, false), InsideMethod::kParity, range);
    out = combine_masks({&axes[0], &axes[1], &axes[2]}, 2);
  } else {
    const InsideMesh m = prepare_inside(mesh, g, spec, 2, method == InsideMethod::kWinding);
    out = inside_grid_cpu(m, method, range, only);
  }
  out.spec = spec;
  out.name = "inside";
  return out;
}

// ---- Narrow band ---------------------------------------------------------------------------

BandSetup band_setup(const GridSpec& spec, int band) {
  BandSetup b;
  const double h = std::min({spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z});
  b.width = band == kBandAll ? INFINITY : float(double(band) * h);
  b.reach = {float(double(b.width) / spec.voxel_size.x), float(double(b.width) / spec.voxel_size.y),
             float(double(b.width) / spec.voxel_size.z)};
  b.vs = {float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  return b;
}

SparseGrid band_distance_cpu(const Mesh& mesh, const GridSpec& spec, int band) {
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  const GridBox box = mesh_grid_box(mesh, spec);
  if (band_by_search(mesh, g, spec, box, band, kBandRuleCpu)) return band_search_cpu(mesh, g, spec, box, band);
  return band_pairs_cpu(mesh, g, spec, band);
}

SparseGrid band_pairs_cpu(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, int band) {
  const BandSetup bs = band_setup(spec, band);
  const size_t nt = mesh.num_triangles();
  struct Pair {
    uint64_t brick;  // brick_key
    uint32_t tri;
    bool operator<(const Pair& o) const { return brick != o.brick ? brick < o.brick : tri < o.tri; }
  };
  tbb::enumerable_thread_specific<std::vector<Pair>> local;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 4096), [&](const tbb::blocked_range<size_t>& r) {
    auto& out = local.local();
    for (size_t t = r.begin(); t < r.end(); ++t) {
      Vec3f tri[3];
      for (int c = 0; c < 3; ++c) tri[c] = g[mesh.indices[3 * t + c]];
      Int3 lo, hi;
      if (!band_voxel_range(tri, bs, spec.dims, &lo, &hi)) continue;
      for (int32_t bx = lo.x >> 3; bx <= hi.x >> 3; ++bx)
        for (int32_t by = lo.y >> 3; by <= hi.y >> 3; ++by)
          for (int32_t bz = lo.z >> 3; bz <= hi.z >> 3; ++bz) out.push_back({brick_key(bx, by, bz), uint32_t(t)});
    }
  });
  std::vector<Pair> pairs;
  for (auto& l : local) pairs.insert(pairs.end(), l.begin(), l.end());
  tbb::parallel_sort(pairs.begin(), pairs.end());
  std::vector<size_t> starts;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (i == 0 || pairs[i].brick != pairs[i - 1].brick) starts.push_back(i);
  starts.push_back(pairs.size());
  const size_t nbricks = starts.size() - 1;
  std::vector<BrickMask> masks(nbricks);
  ValueArray<float> values(nbricks * kBrickVoxels);
  progress_total(nbricks);
  // Each brick's minimum over its triangles, as band_min takes it voxel by voxel (the GPU's order),
  // but a triangle at a time: its band box's test holds on a sub-box of the brick (per axis), found
  // with 24 tests instead of 512, and only the sub-box's voxels get a distance. The same pairs and the
  // same minimum (it does not depend on the order), 4-6x faster where bricks hold many triangles.
  // The sub-box's voxels are listed and their distances taken 16 at a time without branches
  // (core/vectorized.h, vectorised; the same bits): on 2 cores the dragon's band at 512^3 859 -> 241-246
  // ms, the bunny's at 1024^3 1539 -> 546.
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nbricks, 1), [&](const tbb::blocked_range<size_t>& r) {
    float best[kBrickVoxels];
    uint16_t offsets[kBrickVoxels + kBandMinBlock];  // a triangle's sub-box, listed for band_min_voxels (padded)
    for (size_t b = r.begin(); b < r.end(); ++b) {
      const Int3 bc = brick_coord(pairs[starts[b]].brick);
      const int32_t base[3] = {bc.x * 8, bc.y * 8, bc.z * 8};
      const int32_t dims[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
      std::fill(best, best + kBrickVoxels, bs.width);
      for (size_t p = starts[b]; p < starts[b + 1]; ++p) {
        Vec3f tri[3];
        for (int c = 0; c < 3; ++c) tri[c] = g[mesh.indices[3 * size_t(pairs[p].tri) + c]];
        const BandBox x = band_box(tri, bs);
        int32_t lo[3], hi[3];  // the brick's voxels (within the grid) whose centres the box holds, per axis
        bool empty = false;
        for (int a = 0; a < 3 && !empty; ++a) {
          lo[a] = 8;
          hi[a] = -1;
          for (int32_t l = 0; l < 8 && base[a] + l < dims[a]; ++l)
            if (band_box_holds(x, a, base[a] + l)) {
              lo[a] = std::min(lo[a], l);
              hi[a] = l;
            }
          empty = lo[a] > hi[a];
        }
        if (empty) continue;
        int n = 0;
        for (int32_t li = lo[0]; li <= hi[0]; ++li)
          for (int32_t lj = lo[1]; lj <= hi[1]; ++lj)
            for (int32_t lk = lo[2]; lk <= hi[2]; ++lk) offsets[n++] = uint16_t((li << 6) | (lj << 3) | lk);
        for (const uint16_t last = offsets[n - 1]; n % kBandMinBlock != 0;) offsets[n++] = last;
        band_min_voxels(tri, base, offsets, n, bs.vs, best);
      }
      BrickMask mk{};
      float* val = &values[b * kBrickVoxels];
      for (int off = 0; off < kBrickVoxels; ++off) {
        if (best[off] < bs.width) {
          mk.set(off);
          val[off] = best[off];
        } else {
          val[off] = 0.0f;
        }
      }
      masks[b] = mk;
    }
    progress_advance(r.size());
  });
  return band_grid(spec, masks, values, [&](size_t b) { return pairs[starts[b]].brick; });
}

SparseGrid band_grid(const GridSpec& spec, const std::vector<BrickMask>& masks, const ValueArray<float>& values,
                     const std::function<uint64_t(size_t)>& key_of) {
  SparseGrid out;
  out.spec = spec;
  out.value_type = ValueType::kFloat32;
  out.name = "sdf";
  std::vector<size_t> kept;  // the non-empty bricks, copied out in parallel (a serial append was ~5% of the sdf)
  for (size_t b = 0; b < masks.size(); ++b)
    if (masks[b].any()) kept.push_back(b);
  out.keys.resize(kept.size());
  out.masks.resize(kept.size());
  for (size_t q = 0; q < kept.size(); ++q) out.masks[q] = masks[kept[q]];
  out.index_values();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, kept.size(), 256), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t q = r.begin(); q < r.end(); ++q) {
      const size_t b = kept[q];
      out.keys[q] = key_of(b);
      compact_brick_values(masks[b], 1, &values[b * kBrickVoxels], &out.fvalues[out.value_begin[q]]);
    }
  });
  return out;
}

void apply_sign(SparseGrid& band, const SparseGrid& inside) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, band.keys.size(), 256), [&](const tbb::blocked_range<size_t>& r) {
    size_t q =
        size_t(std::lower_bound(inside.keys.begin(), inside.keys.end(), band.keys[r.begin()]) - inside.keys.begin());
    size_t rq = size_t(std::upper_bound(inside.runs.begin(), inside.runs.end(), band.keys[r.begin()],
                                        [](uint64_t k, const BrickRun& x) { return k < x.key; }) -
                       inside.runs.begin());
    rq = rq > 0 ? rq - 1 : 0;
    const BrickMask all = full_brick_mask();
    for (size_t b = r.begin(); b < r.end(); ++b) {
      while (rq < inside.runs.size() && inside.runs[rq].key + inside.runs[rq].count <= band.keys[b]) ++rq;
      const bool in_run = rq < inside.runs.size() && inside.runs[rq].key <= band.keys[b];
      while (q < inside.keys.size() && inside.keys[q] < band.keys[b]) ++q;
      if (!in_run && (q == inside.keys.size() || inside.keys[q] != band.keys[b])) continue;
      const BrickMask& in = in_run ? all : inside.masks[q];
      float* v = band.fvalues.data() + band.value_begin[b];  // (the brick's active voxels in offset order)
      for (int w = 0; w < 8; ++w)
        for (uint64_t bits = band.masks[b].w[w]; bits; bits &= bits - 1, ++v)
          if ((in.w[w] >> __builtin_ctzll(bits)) & 1) *v = -*v;
    }
  });
}

}  // namespace voxtile
