// The sdf band by nearest-triangle search (core/band_search.h).
#include "core/band_search.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/progress.h"
#include "core/vectorized.h"

namespace voxtile {

namespace {

void tri_of(const Mesh& mesh, const std::vector<Vec3f>& g, size_t t, Vec3f tri[3]) {
  for (int c = 0; c < 3; ++c) tri[c] = g[mesh.indices[3 * t + c]];
}

// The shape's arrays for `kept` triangles (band_shape_node, on all cores; the GPU computes the same
// ones on the device).
struct BandTreeShape {
  std::vector<int32_t> right;          // an inner node's second child; -1 for a leaf
  std::vector<uint32_t> first, count;  // a node's triangles
  std::vector<uint32_t> inner;         // an inner node's index among the inner nodes (BandTree::nodes)
  std::vector<uint8_t> depth;
  uint32_t num_inner = 0, depths = 0;
};
BandTreeShape band_tree_shape(const BandShapeTable& t) {
  BandTreeShape sh;
  const size_t n = t.nodes();
  sh.depths = t.depths;
  sh.right.resize(n);
  sh.first.resize(n);
  sh.count.resize(n);
  sh.inner.resize(n);
  sh.depth.resize(n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 8192), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      uint32_t depth = 0;
      band_shape_node(t, uint32_t(b), &sh.first[b], &sh.count[b], &depth, &sh.right[b]);
      sh.depth[b] = uint8_t(depth);
    }
  });
  for (size_t b = 0; b < n; ++b) {
    sh.inner[b] = sh.num_inner;
    sh.num_inner += sh.right[b] >= 0;
  }
  return sh;
}

}  // namespace

BandTreeView BandTree::view() const {
  BandTreeView v = top;
  v.nodes = nodes.data();
  v.tris = tris.data();
  v.boxes = boxes.data();
  v.loose = loose.data();
  v.num_loose = uint32_t(loose.size() / 3);
  return v;
}

BandShapeTable band_shape_table(uint32_t kept) {
  BandShapeTable t;
  t.kept = kept;
  uint32_t d = 0;
  t.lo[0] = kept;
  while (t.lo[d] + 1 > 4) {  // (a count of lo[d] + 1 could split: the next depth is listed)
    t.lo[d + 1] = t.lo[d] / 2;
    ++d;
  }
  t.depths = d;
  for (int k = 0; k < 2; ++k) t.size[d][k] = 1;  // (every count of the last depth is at most 4)
  for (uint32_t e = d; e-- > 0;)
    for (uint32_t k = 0; k < 2; ++k) {
      const uint32_t c = t.lo[e] + k;
      t.size[e][k] = c <= 4 ? 1u : 1u + t.subtree(e + 1, c / 2) + t.subtree(e + 1, c - c / 2);
    }
  return t;
}

BandTree build_band_tree(const Mesh& mesh, const std::vector<Vec3f>& g, const GridBox& box, const BandSetup& bs,
                         float start) {
  const size_t nt = mesh.num_triangles();
  const float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, hi[3] = {box.hi.x, box.hi.y, box.hi.z};
  // Each triangle's margins and pieces (one for a loose triangle), at the piece length that fits.
  std::vector<float> k2(nt), k2e(nt);
  std::vector<uint64_t> first(nt + 1, 0);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      Vec3f tri[3];
      tri_of(mesh, g, t, tri);
      const BandBound w = band_bound(tri, bs);
      k2[t] = w.k2;
      k2e[t] = w.k2e;
    }
  });
  // Each triangle's pieces at a length (bound: band_piece_bound's, without clipping), their sum,
  // each one's count left in first[t + 1].
  auto pieces = [&](float piece, bool bound) {
    return tbb::parallel_reduce(
        tbb::blocked_range<size_t>(0, nt, 4096), uint64_t(0),
        [&](const tbb::blocked_range<size_t>& r, uint64_t sum) {
          for (size_t t = r.begin(); t < r.end(); ++t) {
            uint32_t n = 1;
            if (!band_loose(k2[t], k2e[t])) {
              Vec3f tri[3];
              tri_of(mesh, g, t, tri);
              float l[3], h[3];
              band_tri_bounds(tri, l, h);
              n = bound ? band_piece_bound(l, h, piece)
                        : band_pieces(tri, l, h, piece, false, [](const float*, const float*) {});
            }
            sum += (first[t + 1] = n);
          }
          return sum;
        },
        std::plus<uint64_t>());
  };
  BandTree tree;
  uint64_t refs = 0;
  tree.piece = band_piece_length(
      nt, [&](float piece) { return pieces(piece, false); }, [&](float piece) { return pieces(piece, true); }, &refs,
      start);
  for (size_t t = 0; t < nt; ++t) first[t + 1] += first[t];
  struct Item {
    uint64_t key;
    uint32_t ref;
    bool operator<(const Item& o) const { return key != o.key ? key < o.key : ref < o.ref; }
  };
  std::vector<Item> items(refs);
  std::vector<BandNodeBox> ref_box(refs);
  std::vector<uint32_t> ref_tri(refs);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      Vec3f tri[3];
      tri_of(mesh, g, t, tri);
      float l[3], h[3];
      band_tri_bounds(tri, l, h);
      uint64_t at = first[t];
      auto put = [&](const float* pl, const float* ph) {
        BandNodeBox& b = ref_box[at];
        for (int a = 0; a < 3; ++a) {
          b.lo[a] = pl[a];
          b.hi[a] = ph[a];
        }
        b.k2 = k2[t];
        b.k2e = k2e[t];
        ref_tri[at] = uint32_t(t);
        items[at] = {band_tree_key(pl, ph, lo, hi, k2[t], k2e[t]), uint32_t(at)};
        ++at;
      };
      if (band_loose(k2[t], k2e[t]))
        put(l, h);
      else
        band_pieces(tri, l, h, tree.piece, true, put);
    }
  });
  tbb::parallel_sort(items.begin(), items.end());
  size_t kept = 0;
  while (kept < refs && items[kept].key != ~uint64_t(0)) ++kept;
  tree.tris.resize(3 * kept);
  tree.boxes.resize(kept);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, kept, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t u = r.begin(); u < r.end(); ++u) {
      tri_of(mesh, g, ref_tri[items[u].ref], &tree.tris[3 * u]);
      tree.boxes[u] = ref_box[items[u].ref];
    }
  });
  for (size_t u = kept; u < refs; ++u) {  // the loose ones, in the mesh's order
    Vec3f tri[3];
    tri_of(mesh, g, ref_tri[items[u].ref], tri);
    tree.loose.insert(tree.loose.end(), tri, tri + 3);
  }
  tree.top.num_tris = uint32_t(kept);
  if (kept == 0) return tree;
  const BandTreeShape sh = band_tree_shape(band_shape_table(uint32_t(kept)));
  const size_t n = sh.right.size();
  std::vector<BandNodeBox> boxes(n);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b)
      if (sh.right[b] < 0) boxes[b] = band_leaf_box(tree.boxes.data(), sh.first[b], sh.count[b]);
  });
  for (uint32_t d = sh.depths; d-- > 0;)  // deepest first: children before parents
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 16384), [&](const tbb::blocked_range<size_t>& r) {
      for (size_t b = r.begin(); b < r.end(); ++b)
        if (sh.depth[b] == d && sh.right[b] >= 0) boxes[b] = band_join(boxes[b + 1], boxes[size_t(sh.right[b])]);
    });
  tree.nodes.resize(sh.num_inner);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 16384), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b)
      if (sh.right[b] >= 0)
        tree.nodes[sh.inner[b]] =
            band_node(sh.right.data(), sh.first.data(), sh.count.data(), sh.inner.data(), boxes.data(), b);
  });
  band_set_top(tree.top, sh.right.data(), sh.first.data(), sh.count.data(), sh.inner.data(), boxes[0]);
  return tree;
}

bool band_search_bricks(const GridBox& box, const GridSpec& spec, const BandSetup& bs, Int3* lo, Int3* hi) {
  const int32_t dims[3] = {spec.dims.x, spec.dims.y, spec.dims.z};
  const float reach[3] = {bs.reach.x, bs.reach.y, bs.reach.z};
  const float mn[3] = {box.lo.x, box.lo.y, box.lo.z}, mx[3] = {box.hi.x, box.hi.y, box.hi.z};
  int32_t l[3], h[3];
  for (int a = 0; a < 3; ++a) {
    if (!(mn[a] <= mx[a])) return false;  // no triangle
    // (band_box grows a triangle's bounds by reach x 1.001 + 1e-3: a voxel more covers it)
    const double r = std::isfinite(reach[a]) ? double(reach[a]) * 1.001 + 1.0 : INFINITY;
    const double f = std::floor(double(mn[a]) - r - 0.5), c = std::ceil(double(mx[a]) + r - 0.5);
    if (c < 0.0 || f > double(dims[a] - 1)) return false;
    l[a] = f < 0.0 ? 0 : int32_t(f);
    h[a] = c > double(dims[a] - 1) ? dims[a] - 1 : int32_t(c);
  }
  *lo = {l[0] >> 3, l[1] >> 3, l[2] >> 3};
  *hi = {h[0] >> 3, h[1] >> 3, h[2] >> 3};
  return true;
}

double band_box_voxels(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const BandSetup& bs,
                       double per_brick) {
  return tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, mesh.num_triangles(), 4096), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double sum) {
        for (size_t t = r.begin(); t < r.end(); ++t) {
          Vec3f tri[3];
          tri_of(mesh, g, t, tri);
          sum += band_box_work(tri, bs, spec.dims, per_brick);
        }
        return sum;
      },
      std::plus<double>());
}

double band_search_voxels(const GridBox& box, const GridSpec& spec, const BandSetup& bs) {
  Int3 lo, hi;
  if (!band_search_bricks(box, spec, bs, &lo, &hi)) return 0.0;
  return 512.0 * double(hi.x - lo.x + 1) * double(hi.y - lo.y + 1) * double(hi.z - lo.z + 1);
}

bool band_by_search(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box, int band,
                    const BandRule& rule, double* box_voxels) {
  if (band == kBandAll) return true;
  const BandSetup bs = band_setup(spec, band);
  const double boxes = band_box_voxels(mesh, g, spec, bs, rule.per_brick);
  if (box_voxels) *box_voxels = boxes;
  return rule.takes_search(boxes, band_search_voxels(box, spec, bs), mesh.num_triangles(),
                           band_compact_work(bs, rule.per_brick));
}

namespace {

// The CPU's lanes: 16 voxels a layer, a leaf's triangle's distances taken for all of them at once
// (band_distance_lanes, vectorised) where its box test keeps any: band_min's value, since a voxel
// that band_min's band box test passes over is farther from the triangle than the width, and each
// lane's least distance is at most the width. (2 cores, the bunny's full field at 128^3: a walk per
// voxel 8.5 s, 16 lanes walking together 5.2 s, their tests vectorised 2.4 s, their distances too
// 1.7 s; vectorised only where 4 or 8 lanes keep the triangle 1.8-1.9 and 1.9-2.0 s.)
// Layers of 4 x 4 columns walked at once (2 cores: the bunny's full field at 128^3 one / two / four
// layers 1.70-1.73 / 1.59 / 1.82-1.84 s; two also 2-7% faster on the dragon's at 128^3, a band of 16 on
// the bunny at 128^3 and of 12 on the dragon at 256^3).
constexpr int kCpuLayers = 2;
struct BandCpuLanes : BandLanes<kBandMinBlock * kCpuLayers> {
  void take(const Vec3f* tri, const float lo[3], const float hi[3], uint32_t u, const BandSetup& bs, float k2,
            float k2e) {
    int32_t keep[kN];  // (words and no early exit: the lanes' tests vectorise)
    int kept = 0;
    for (int l = 0; l < kN; ++l) {
      keep[l] = active[l] & !band_box_beyond(lo, hi, i[l], j[l], k[l], bs.vs, best[l], k2, k2e);
      kept += keep[l];
    }
    if (kept == 0) return;
    float d[kN];
    for (int c = 0; c < kN; c += kBandMinBlock) band_distance_lanes(tri, i + c, j + c, k + c, bs.vs, d + c);
    for (int l = 0; l < kN; ++l) {
      const bool lower = keep[l] & (d[l] < best[l]);
      best[l] = lower ? d[l] : best[l];
      arg[l] = lower ? u : arg[l];
    }
  }
};

// band_search_lanes of the CPU's lanes, compiled for x86-64-v4 where the CPU has it (the lanes' box
// distances and tests 16 at a time).
#ifdef VT_X86_64_V4
__attribute__((target("arch=x86-64-v4"), flatten)) void walk_v4(const BandTreeView& t, const BandSetup& bs,
                                                                BandCpuLanes& p) {
  band_search_lanes(t, bs, p);
}
#endif
void walk(const BandTreeView& t, const BandSetup& bs, BandCpuLanes& p) {
#ifdef VT_X86_64_V4
  if (cpu_has_x86_64_v4()) return walk_v4(t, bs, p);
#endif
  band_search_lanes(t, bs, p);
}

}  // namespace

SparseGrid band_search_cpu(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box,
                           int band) {
  const BandSetup bs = band_setup(spec, band);
  Int3 lo, hi;
  if (!band_search_bricks(box, spec, bs, &lo, &hi)) return band_grid(spec, {}, {}, [](size_t) { return 0; });
  const BandTree tree = build_band_tree(mesh, g, box, bs);
  const BandTreeView view = tree.view();
  const Int3 n{hi.x - lo.x + 1, hi.y - lo.y + 1, hi.z - lo.z + 1};
  const size_t nbricks = size_t(n.x) * size_t(n.y) * size_t(n.z);
  auto brick_at = [&](size_t b) {  // x-major, so ascending keys
    return Int3{lo.x + int32_t(b / (size_t(n.y) * size_t(n.z))), lo.y + int32_t((b / size_t(n.z)) % size_t(n.y)),
                lo.z + int32_t(b % size_t(n.z))};
  };
  std::vector<BrickMask> masks(nbricks);
  ValueArray<float> values(nbricks * kBrickVoxels);
  progress_total(nbricks);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nbricks, 1), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t b = r.begin(); b < r.end(); ++b) {
      const Int3 bc = brick_at(b);
      BrickMask mk{};
      float* val = &values[b * kBrickVoxels];
      std::fill(val, val + kBrickVoxels, 0.0f);
      const int32_t k0 = bc.z * 8, k1 = std::min(k0 + 8, spec.dims.z);
      // 4 x 4 columns walk together, kCpuLayers layers at a time, each voxel starting from the
      // triangle nearest the one kCpuLayers below.
      for (int px = 0; px < 8; px += 4)
        for (int py = 0; py < 8; py += 4) {
          BandCpuLanes p;
          constexpr int kL = BandCpuLanes::kN;
          for (int l = 0; l < kL; ++l) {
            p.i[l] = bc.x * 8 + px + ((l & 15) >> 2);
            p.j[l] = bc.y * 8 + py + (l & 3);
            p.arg[l] = kBandNone;
          }
          for (int32_t k = k0; k < k1; k += kCpuLayers) {
            for (int l = 0; l < kL; ++l) {
              p.k[l] = k + l / 16;
              p.active[l] = p.i[l] < spec.dims.x && p.j[l] < spec.dims.y && p.k[l] < k1;
              p.best[l] = p.active[l] ? band_search_start(view, p.arg[l], p.i[l], p.j[l], p.k[l], bs) : bs.width;
            }
            walk(view, bs, p);
            for (int l = 0; l < kL; ++l) {
              if (!p.active[l]) continue;
              const int off = brick_offset(px + ((l & 15) >> 2), py + (l & 3), p.k[l] - k0);
              if (p.best[l] < bs.width) {
                mk.set(off);
                val[off] = p.best[l];
              }
            }
          }
        }
      masks[b] = mk;
    }
    progress_advance(r.size());
  });
  return band_grid(spec, masks, values, [&](size_t b) {
    const Int3 bc = brick_at(b);
    return brick_key(bc.x, bc.y, bc.z);
  });
}

float band_background(const SparseGrid& band_grid, const GridSpec& spec, int band) {
  if (band != kBandAll) return band_setup(spec, band).width;
  const float largest = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, band_grid.fvalues.size(), 1 << 16), 0.0f,
      [&](const tbb::blocked_range<size_t>& r, float m) {
        for (size_t i = r.begin(); i < r.end(); ++i) m = std::max(m, std::fabs(band_grid.fvalues[i]));
        return m;
      },
      [](float a, float b) { return std::max(a, b); });
  if (largest > 0.0f) return largest;
  return float(std::min({spec.voxel_size.x, spec.voxel_size.y, spec.voxel_size.z}));
}

}  // namespace voxtile
