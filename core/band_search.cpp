// The sdf band by nearest-triangle search (core/band_search.h).
#include "core/band_search.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "core/progress.h"
#include "core/vectorized.h"

namespace voxtile {

namespace {

void tri_of(const Mesh& mesh, const std::vector<Vec3f>& g, size_t t, Vec3f tri[3]) {
  for (int c = 0; c < 3; ++c) tri[c] = g[mesh.indices[3 * t + c]];
}

// A node of the binary tree as built (then held by its parent, BandNode).
struct BuiltNode {
  float lo[3], hi[3];
  float k2, k2e;
  int32_t right;          // an inner node's second child (its first follows it); -1 for a leaf
  uint32_t first, count;  // a leaf's triangles
};

// The binary tree's nodes in pre-order, subtrees built in parallel: a subtree's size depends on its
// triangles' count alone (halves down to leaves of 4), so each subtree's place is known before it is
// built, and the tree is the same whatever the threads do.
struct Builder {
  const std::vector<Vec3f>& tris;
  const std::vector<float>& k2;
  const std::vector<float>& k2e;
  std::vector<BuiltNode>& nodes;
  std::map<uint32_t, uint32_t> sizes;  // nodes of a subtree of `count` triangles (2 counts per level)

  uint32_t size_of(uint32_t count) {
    if (count <= 4) return 1;
    const auto it = sizes.find(count);
    if (it != sizes.end()) return it->second;
    const uint32_t n = 1 + size_of(count / 2) + size_of(count - count / 2);
    sizes[count] = n;
    return n;
  }
  // Fills `sizes` for every count the build meets, so that the parallel build only reads it.
  void prepare(uint32_t count) { nodes.resize(size_of(count)); }
  uint32_t size_known(uint32_t count) const { return count <= 4 ? 1 : sizes.at(count); }

  void build(uint32_t first, uint32_t count, uint32_t at) {
    BuiltNode n;
    if (count <= 4) {
      n.right = -1;
      n.first = first;
      n.count = count;
      for (int a = 0; a < 3; ++a) {
        n.lo[a] = INFINITY;
        n.hi[a] = -INFINITY;
      }
      n.k2 = n.k2e = 0.0f;
      for (uint32_t u = first; u < first + count; ++u) {
        float lo[3], hi[3];
        band_tri_bounds(&tris[3 * size_t(u)], lo, hi);
        for (int a = 0; a < 3; ++a) {
          n.lo[a] = std::min(n.lo[a], lo[a]);
          n.hi[a] = std::max(n.hi[a], hi[a]);
        }
        n.k2 = std::max(n.k2, k2[u]);
        n.k2e = std::max(n.k2e, k2e[u]);
      }
    } else {
      const uint32_t half = count / 2;
      const uint32_t left = at + 1, right = at + 1 + size_known(half);
      if (count >= 16384)
        tbb::parallel_invoke([&] { build(first, half, left); }, [&] { build(first + half, count - half, right); });
      else {
        build(first, half, left);
        build(first + half, count - half, right);
      }
      const BuiltNode& l = nodes[left];
      const BuiltNode& r = nodes[right];
      for (int a = 0; a < 3; ++a) {
        n.lo[a] = std::min(l.lo[a], r.lo[a]);
        n.hi[a] = std::max(l.hi[a], r.hi[a]);
      }
      n.k2 = std::max(l.k2, r.k2);
      n.k2e = std::max(l.k2e, r.k2e);
      n.right = int32_t(right);
      n.first = n.count = 0;
    }
    nodes[at] = n;
  }
};

}  // namespace

BandTreeView BandTree::view() const {
  BandTreeView v = top;
  v.nodes = nodes.data();
  v.tris = tris.data();
  v.loose = loose.data();
  v.num_loose = uint32_t(loose.size() / 3);
  return v;
}

BandTree build_band_tree(const Mesh& mesh, const std::vector<Vec3f>& g, const GridBox& box, const BandSetup& bs) {
  const size_t nt = mesh.num_triangles();
  const float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, hi[3] = {box.hi.x, box.hi.y, box.hi.z};
  struct Item {
    uint64_t key;
    uint32_t tri;
    bool operator<(const Item& o) const { return key != o.key ? key < o.key : tri < o.tri; }
  };
  std::vector<Item> items(nt);
  std::vector<uint8_t> is_loose(nt);
  std::vector<float> k2(nt), k2e(nt);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, nt, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t t = r.begin(); t < r.end(); ++t) {
      Vec3f tri[3];
      tri_of(mesh, g, t, tri);
      const BandBound w = band_bound(tri, bs);
      k2[t] = w.k2;
      k2e[t] = w.k2e;
      is_loose[t] = !(w.k2 < INFINITY && w.k2e < INFINITY);
      float l[3], h[3];
      band_tri_bounds(tri, l, h);
      uint64_t key = 0;
      for (int a = 0; a < 3; ++a) {
        const double ext = double(hi[a]) - double(lo[a]);
        const double c = ext > 0.0 ? ((0.5 * (double(l[a]) + double(h[a])) - double(lo[a])) / ext) : 0.0;
        key |= spread3(uint64_t(std::clamp(c, 0.0, 1.0) * 2097151.0)) << a;
      }
      items[t] = {is_loose[t] ? ~uint64_t(0) : key, uint32_t(t)};
    }
  });
  tbb::parallel_sort(items.begin(), items.end());
  BandTree tree;
  size_t kept = 0;
  while (kept < nt && !is_loose[items[kept].tri]) ++kept;
  tree.tris.resize(3 * kept);
  std::vector<float> tk2(kept), tk2e(kept);
  tbb::parallel_for(tbb::blocked_range<size_t>(0, kept, 4096), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t u = r.begin(); u < r.end(); ++u) {
      tri_of(mesh, g, items[u].tri, &tree.tris[3 * u]);
      tk2[u] = k2[items[u].tri];
      tk2e[u] = k2e[items[u].tri];
    }
  });
  for (size_t t = 0; t < nt; ++t)  // the loose ones in the mesh's order
    if (is_loose[t]) {
      Vec3f tri[3];
      tri_of(mesh, g, t, tri);
      tree.loose.insert(tree.loose.end(), tri, tri + 3);
    }
  if (kept) {
    std::vector<BuiltNode> built;
    Builder builder{tree.tris, tk2, tk2e, built, {}};
    builder.prepare(uint32_t(kept));
    builder.build(0, uint32_t(kept), 0);
    std::vector<uint32_t> inner(built.size());  // the inner nodes numbered in the built order
    uint32_t ninner = 0;
    for (size_t b = 0; b < built.size(); ++b)
      if (built[b].right >= 0) inner[b] = ninner++;
    auto ref = [&](size_t b) {
      return built[b].right < 0 ? BandRef{built[b].first, built[b].count} : BandRef{inner[b], 0};
    };
    tree.nodes.resize(ninner);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, built.size(), 16384), [&](const tbb::blocked_range<size_t>& rb) {
      for (size_t b = rb.begin(); b < rb.end(); ++b) {
        if (built[b].right < 0) continue;
        BandNode& n = tree.nodes[inner[b]];
        const size_t c[2] = {b + 1, size_t(built[b].right)};
        for (int h = 0; h < 2; ++h) {
          for (int a = 0; a < 3; ++a) {
            n.lo[h][a] = built[c[h]].lo[a];
            n.hi[h][a] = built[c[h]].hi[a];
          }
          n.k2[h] = built[c[h]].k2;
          n.k2e[h] = built[c[h]].k2e;
          n.child[h] = ref(c[h]);
        }
      }
    });
    BandTreeView& top = tree.top;
    top.empty = false;
    top.root = ref(0);
    for (int a = 0; a < 3; ++a) {
      top.root_lo[a] = built[0].lo[a];
      top.root_hi[a] = built[0].hi[a];
    }
    top.root_k2 = built[0].k2;
    top.root_k2e = built[0].k2e;
  }
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

double band_box_voxels(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const BandSetup& bs) {
  return tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, mesh.num_triangles(), 4096), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double sum) {
        for (size_t t = r.begin(); t < r.end(); ++t) {
          Vec3f tri[3];
          tri_of(mesh, g, t, tri);
          Int3 lo, hi;
          if (band_voxel_range(tri, bs, spec.dims, &lo, &hi))
            sum += double(hi.x - lo.x + 1) * double(hi.y - lo.y + 1) * double(hi.z - lo.z + 1);
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
  if (!rule.considers(band)) return false;
  const BandSetup bs = band_setup(spec, band);
  const double boxes = band_box_voxels(mesh, g, spec, bs);
  if (box_voxels) *box_voxels = boxes;
  return boxes > rule.ratio * band_search_voxels(box, spec, bs) + rule.per_triangle * double(mesh.num_triangles());
}

namespace {

// The CPU's lanes: 16 voxels, a leaf's triangle's distances taken for all of them at once
// (band_distance_lanes, vectorised) where its box test keeps any: band_min's value, since a voxel
// that band_min's band box test passes over is farther from the triangle than the width, and each
// lane's least distance is at most the width. (2 cores, the bunny's full field at 128^3: a walk per
// voxel 8.5 s, 16 lanes walking together 5.2 s, their tests vectorised 2.4 s, their distances too
// 1.7 s; vectorised only where 4 or 8 lanes keep the triangle 1.8-1.9 and 1.9-2.0 s.)
struct BandCpuLanes : BandLanes<kBandMinBlock> {
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
    band_distance_lanes(tri, i, j, k, bs.vs, d);
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
      // 4 x 4 columns walk together, a layer at a time, each voxel starting from the triangle
      // nearest the one below.
      for (int px = 0; px < 8; px += 4)
        for (int py = 0; py < 8; py += 4) {
          BandCpuLanes p;
          for (int l = 0; l < 16; ++l) {
            p.i[l] = bc.x * 8 + px + (l >> 2);
            p.j[l] = bc.y * 8 + py + (l & 3);
            p.active[l] = p.i[l] < spec.dims.x && p.j[l] < spec.dims.y;
            p.arg[l] = kBandNone;
          }
          for (int32_t k = k0; k < k1; ++k) {
            for (int l = 0; l < 16; ++l) {
              p.k[l] = k;
              p.best[l] = p.active[l] ? band_search_start(view, p.arg[l], p.i[l], p.j[l], k, bs) : bs.width;
            }
            walk(view, bs, p);
            for (int l = 0; l < 16; ++l) {
              const int off = brick_offset(px + (l >> 2), py + (l & 3), k - k0);
              if (p.active[l] && p.best[l] < bs.width) {
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
