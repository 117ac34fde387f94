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
// triangles go through band_min itself (its band box test, then the distance). Triangles for which no
// margin holds (their angle's sine at vertex 0 under 2^-16:
// band_bound) are not in the tree; every voxel takes them. The minimum does not depend on the order
// of the distances, so the walk's order, its start (a neighbour's nearest triangle) and the device
// leave the bits alone.
#pragma once

#include <cstdint>
#include <vector>

#include "core/grid_spec.h"
#include "core/hd.h"
#include "core/inside.h"
#include "core/inside_grid.h"
#include "core/mesh.h"
#include "core/vec.h"

namespace voxtile {

// A child of an inner node: its box and margins (the largest of its triangles' band_bound k2, k2e),
// and either an inner node's index or a leaf's triangles.
struct BandRef {
  uint32_t index;  // an inner node (count 0), or a leaf's first triangle in the tree's order
  uint32_t count;  // a leaf's triangles (1 to 4); 0 for an inner node
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
  const Vec3f* tris = nullptr;   // 3 vertices per triangle (grid space), in the tree's order
  const Vec3f* loose = nullptr;  // 3 per triangle: those no margin holds for, taken at every voxel
  uint32_t num_loose = 0;
};

// The tree's deepest path is under this many nodes (a balanced split down to leaves of 4 triangles:
// 2^40 triangles), and a walk's stack holds at most one entry per level.
constexpr int kBandTreeStack = 40;
constexpr uint32_t kBandNone = 0xffffffffu;

// band_min over every triangle of the tree and the loose ones for voxel (i, j, k), from `best` (the
// width, or a triangle's band_min there); *arg becomes the tree-order index of the triangle that
// lowered it last (unchanged when none did). A child is walked unless band_beyond (band_box_culled's
// test, with the child's box and margins) passes over it at the least distance so far, nearer box
// first; each box's distance is taken once, and tested again when its turn comes (the least
// distance may have fallen since).
VT_HD inline float band_search(const BandTreeView& t, int32_t i, int32_t j, int32_t k, const BandSetup& bs, float best,
                               uint32_t* arg) {
  for (uint32_t q = 0; q < t.num_loose; ++q) best = band_min(&t.loose[3 * q], i, j, k, bs, best);
  if (t.empty) return best;
  struct Entry {
    BandRef ref;
    float d2, k2, k2e;
  };
  Entry stack[kBandTreeStack];
  int sp = 0;
  stack[sp++] = {t.root, band_box_d2(t.root_lo, t.root_hi, i, j, k, bs.vs), t.root_k2, t.root_k2e};
  while (sp > 0) {
    const Entry e = stack[--sp];
    if (band_beyond(e.d2, best, e.k2, e.k2e)) continue;
    BandRef r = e.ref;
    float rk2 = e.k2, rk2e = e.k2e;
    for (;;) {
      if (r.count) {
        for (uint32_t u = r.index; u < r.index + r.count; ++u) {
          float lo[3], hi[3];  // (the leaf's margins hold for each of its triangles)
          band_tri_bounds(&t.tris[3 * u], lo, hi);
          if (band_box_beyond(lo, hi, i, j, k, bs.vs, best, rk2, rk2e)) continue;
          const float d = band_min(&t.tris[3 * u], lo, hi, i, j, k, bs, best);
          if (d < best) {
            best = d;
            *arg = u;
          }
        }
        break;
      }
      const BandNode& nd = t.nodes[r.index];
      const float d0 = band_box_d2(nd.lo[0], nd.hi[0], i, j, k, bs.vs);
      const float d1 = band_box_d2(nd.lo[1], nd.hi[1], i, j, k, bs.vs);
      const int n = d0 <= d1 ? 0 : 1, f = 1 - n;  // nearer, farther
      const float dn = n == 0 ? d0 : d1, df = n == 0 ? d1 : d0;
      const bool open_n = !band_beyond(dn, best, nd.k2[n], nd.k2e[n]);
      if (!band_beyond(df, best, nd.k2[f], nd.k2e[f])) stack[sp++] = {nd.child[f], df, nd.k2[f], nd.k2e[f]};
      if (!open_n) break;
      r = nd.child[n];
      rk2 = nd.k2[n];
      rk2e = nd.k2e[n];
    }
  }
  return best;
}

// The voxels of a brick column (i, j, k0..k1) by band_search, each starting from the triangle that
// was nearest the one before: value[k - k0].
VT_HD inline void band_search_column(const BandTreeView& t, int32_t i, int32_t j, int32_t k0, int32_t k1,
                                     const BandSetup& bs, float* value) {
  uint32_t arg = kBandNone;
  for (int32_t k = k0; k < k1; ++k) {
    const float start = arg == kBandNone ? bs.width : band_min(&t.tris[3 * arg], i, j, k, bs, bs.width);
    value[k - k0] = band_search(t, i, j, k, bs, start, &arg);
  }
}

struct BandTree {
  std::vector<BandNode> nodes;  // the inner nodes, the root's first
  BandTreeView top;             // the root's box and reference (pointers unset)
  std::vector<Vec3f> tris, loose;
  BandTreeView view() const;
};
// The tree of the mesh's grid-space triangles (g = to_grid_space(mesh, spec), box = mesh_grid_box):
// triangles in the Morton order of their bounds' centres (ties by index), halved down to leaves of
// up to 4.
BandTree build_band_tree(const Mesh& mesh, const std::vector<Vec3f>& g, const GridBox& box, const BandSetup& bs);

// The bricks the search walks: those of the grid within the mesh's box grown by the band's reach
// (all of them for kBandAll), as [lo, hi] brick coordinates; false when none.
bool band_search_bricks(const GridBox& box, const GridSpec& spec, const BandSetup& bs, Int3* lo, Int3* hi);

// The voxels of the triangles' band boxes (band_voxel_range: the distances the pairs take), and the
// voxels the search walks (band_search_bricks).
double band_box_voxels(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const BandSetup& bs);
double band_search_voxels(const GridBox& box, const GridSpec& spec, const BandSetup& bs);

// When a band of `band` voxels is taken by the search rather than by the pairs: always for kBandAll,
// never under `min_band` (no pass over the triangles to choose), else where the triangles' band boxes
// hold more than `ratio` times the voxels the search walks. Either way gives the same bits; the
// ratios where the pairs' work per band-box voxel and the search's per walked voxel (and its tree)
// meet were measured on the dragon and the bunny, bands of 8 to 32 voxels at 128^3 to 512^3
// (scripts/bench-results/band-search-h200-2026-11-29.md): about 600 on the CPU (2 cores; its pairs
// take 16 distances at a time, vectorised, the search one at a time) and about 800 on the GPU, where
// the pairs' memory also grows with the width cubed.
struct BandRule {
  int min_band;
  double ratio;
  bool considers(int band) const { return band == kBandAll || band >= min_band; }
};
constexpr BandRule kBandRuleCpu{8, 600}, kBandRuleGpu{16, 800};
// Whether `rule` takes the search for this band; *box_voxels gets band_box_voxels where it was
// counted (a width the rule considers).
bool band_by_search(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box, int band,
                    const BandRule& rule, double* box_voxels = nullptr);

// The band of the sdf target by the search, on the CPU's cores (as band_distance_cpu).
SparseGrid band_search_cpu(const Mesh& mesh, const std::vector<Vec3f>& g, const GridSpec& spec, const GridBox& box,
                           int band);

// The level set's background for a band of `band` voxels: its width, or for kBandAll the largest
// distance in the grid (every voxel of the grid is active), the smallest voxel size if it has none.
float band_background(const SparseGrid& band_grid, const GridSpec& spec, int band);

}  // namespace voxtile
