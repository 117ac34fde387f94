// The shared overlap math against independent oracles: exact triangle/box intersection by
// clipping in double precision (conservative mode), and the written definition of the thin mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/overlap.h"
#include "core/tile_footprint.h"
#include "core/voxelize.h"

namespace voxtile {
namespace {

struct D3 {
  double v[3];
};

// Sutherland-Hodgman clip of a (possibly degenerate) polygon against x[axis] >= lo and <= hi for
// every axis. Closed: points on the boundary are kept. True when something is left.
bool clip_intersects(std::vector<D3> poly, const double lo[3], const double hi[3]) {
  for (int axis = 0; axis < 3; ++axis) {
    for (int side = 0; side < 2; ++side) {
      const double plane = side == 0 ? lo[axis] : hi[axis];
      const double s = side == 0 ? 1.0 : -1.0;
      std::vector<D3> out;
      const size_t n = poly.size();
      for (size_t i = 0; i < n; ++i) {
        const D3& p = poly[i];
        const D3& q = poly[(i + 1) % n];
        const double dp = s * (p.v[axis] - plane), dq = s * (q.v[axis] - plane);
        if (dp >= 0) out.push_back(p);
        if ((dp > 0 && dq < 0) || (dp < 0 && dq > 0)) {
          const double t = dp / (dp - dq);
          D3 r;
          for (int k = 0; k < 3; ++k) r.v[k] = p.v[k] + t * (q.v[k] - p.v[k]);
          r.v[axis] = plane;
          out.push_back(r);
        }
      }
      poly.swap(out);
      if (poly.empty()) return false;
    }
  }
  return true;
}

std::vector<D3> tri_d(const Vec3f t[3]) {
  return {{{t[0].x, t[0].y, t[0].z}}, {{t[1].x, t[1].y, t[1].z}}, {{t[2].x, t[2].y, t[2].z}}};
}

bool oracle_box(const Vec3f t[3], const int32_t ijk[3], double grow) {
  const double lo[3] = {ijk[0] - grow, ijk[1] - grow, ijk[2] - grow};
  const double hi[3] = {ijk[0] + 1 + grow, ijk[1] + 1 + grow, ijk[2] + 1 + grow};
  return clip_intersects(tri_d(t), lo, hi);
}

// Triangle generators, each stressing one kind of case.
struct Gen {
  std::mt19937 rng{12345};
  float uni(float a, float b) { return std::uniform_real_distribution<float>(a, b)(rng); }
  int uint(int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); }
  Vec3f pt(float a, float b) { return {uni(a, b), uni(a, b), uni(a, b)}; }
  Vec3f ipt(int a, int b) { return {float(uint(a, b)), float(uint(a, b)), float(uint(a, b))}; }

  void make(int kind, Vec3f t[3]) {
    switch (kind) {
      case 0:  // general position
        for (int i = 0; i < 3; ++i) t[i] = pt(0, 12);
        break;
      case 1: {  // tiny
        const Vec3f c = pt(1, 10);
        for (int i = 0; i < 3; ++i) t[i] = {c.x + uni(-1e-3f, 1e-3f), c.y + uni(-1e-3f, 1e-3f), c.z + uni(-1e-3f, 1e-3f)};
        break;
      }
      case 2:  // huge, mostly outside the clip region
        for (int i = 0; i < 3; ++i) t[i] = pt(-200, 200);
        break;
      case 3: {  // axis-aligned, lying exactly on a voxel face plane
        const int axis = uint(0, 2);
        const float plane = float(uint(1, 10));
        for (int i = 0; i < 3; ++i) {
          t[i] = pt(0, 12);
          (axis == 0 ? t[i].x : axis == 1 ? t[i].y : t[i].z) = plane;
        }
        break;
      }
      case 4:  // integer vertices: edges and vertices exactly on voxel faces, edges, corners
        for (int i = 0; i < 3; ++i) t[i] = ipt(0, 10);
        break;
      case 5: {  // degenerate: collinear (exactly), or a point
        t[0] = ipt(0, 10);
        t[1] = ipt(0, 10);
        if (uint(0, 3) == 0) t[1] = t[0];
        t[2] = {0.5f * (t[0].x + t[1].x), 0.5f * (t[0].y + t[1].y), 0.5f * (t[0].z + t[1].z)};
        break;
      }
      case 6: {  // long and thin
        const Vec3f a = pt(0, 12), b = pt(0, 12);
        t[0] = a;
        t[1] = b;
        t[2] = {a.x + uni(-0.01f, 0.01f), a.y + uni(-0.01f, 0.01f), a.z + uni(-0.01f, 0.01f)};
        break;
      }
      default:  // half-integer and quarter-integer vertices
        for (int i = 0; i < 3; ++i) t[i] = {uint(0, 40) * 0.25f, uint(0, 40) * 0.25f, uint(0, 40) * 0.25f};
    }
  }
};
constexpr int kKinds = 8;

double tolerance(const Vec3f t[3]) {
  double m = 1.0;
  for (int i = 0; i < 3; ++i) m = std::max({m, std::fabs(double(t[i].x)), std::fabs(double(t[i].y)), std::fabs(double(t[i].z))});
  return 2e-5 * m;
}

using VoxelSet = std::set<std::tuple<int, int, int>>;
const VoxelBox kClip{{-2, -2, -2}, {14, 14, 14}};

TEST(Overlap, ConservativeTestMatchesExactClippingOracle) {
  Gen gen;
  uint64_t tested = 0, near_misses = 0;
  for (int kind = 0; kind < kKinds; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind, t);
      const ConservativeSetup s = setup_conservative(setup_triangle(t[0], t[1], t[2]));
      const double eps = tolerance(t);
      int32_t ijk[3];
      for (ijk[0] = kClip.lo[0]; ijk[0] <= kClip.hi[0]; ++ijk[0])
        for (ijk[1] = kClip.lo[1]; ijk[1] <= kClip.hi[1]; ++ijk[1])
          for (ijk[2] = kClip.lo[2]; ijk[2] <= kClip.hi[2]; ++ijk[2]) {
            const bool grown = oracle_box(t, ijk, eps);
            if (!grown) {  // clearly apart: the test must say no
              ASSERT_FALSE(conservative_voxel(s, ijk)) << "kind " << kind << " voxel " << ijk[0] << "," << ijk[1] << "," << ijk[2];
              continue;
            }
            ++tested;
            const bool exact = oracle_box(t, ijk, 0.0);
            const bool got = conservative_voxel(s, ijk);
            if (got == exact) continue;
            // Disagreement is allowed only within eps of touching.
            ++near_misses;
            ASSERT_NE(oracle_box(t, ijk, eps), oracle_box(t, ijk, -eps))
                << "kind " << kind << " voxel " << ijk[0] << "," << ijk[1] << "," << ijk[2] << " got " << got;
          }
    }
  }
  EXPECT_GT(tested, 10000u);
  EXPECT_LT(near_misses, tested / 1000 + 1) << "rounding disagreements should be rare";
}

TEST(Overlap, TrianglesOnVoxelFacesTouchBothNeighbours) {
  // z = 5 exactly: closed voxels k = 4 and k = 5 both touch it.
  const Vec3f a{1.2f, 1.2f, 5.0f}, b{3.7f, 1.4f, 5.0f}, c{2.0f, 3.9f, 5.0f};
  const ConservativeSetup s = setup_conservative(setup_triangle(a, b, c));
  const int32_t below[3] = {2, 2, 4}, above[3] = {2, 2, 5}, far[3] = {2, 2, 6};
  EXPECT_TRUE(conservative_voxel(s, below));
  EXPECT_TRUE(conservative_voxel(s, above));
  EXPECT_FALSE(conservative_voxel(s, far));
  // Thin: half-open along the dominant axis, so only k = 5.
  const TriSetup t = setup_triangle(a, b, c);
  const DiamondEdges e = setup_diamond_edges(t, t.dom);
  EXPECT_FALSE(thin_voxel(t, e, below, 100));
  EXPECT_TRUE(thin_voxel(t, e, above, 100));
  // ...except on the grid's far face, which belongs to the last voxel.
  EXPECT_TRUE(thin_voxel(t, e, below, 5));
}

TEST(Overlap, EnumeratorsVisitExactlyTheVoxelsThePerVoxelTestsAccept) {
  Gen gen;
  for (int kind = 0; kind < kKinds; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind, t);
      const TriSetup ts = setup_triangle(t[0], t[1], t[2]);
      const ConservativeSetup s = setup_conservative(ts);
      const DiamondEdges dom = setup_diamond_edges(ts, ts.dom);
      VoxelSet brute_c, brute_t, enum_c, enum_t;
      int32_t ijk[3];
      for (ijk[0] = kClip.lo[0]; ijk[0] <= kClip.hi[0]; ++ijk[0])
        for (ijk[1] = kClip.lo[1]; ijk[1] <= kClip.hi[1]; ++ijk[1])
          for (ijk[2] = kClip.lo[2]; ijk[2] <= kClip.hi[2]; ++ijk[2]) {
            if (conservative_voxel(s, ijk)) brute_c.insert({ijk[0], ijk[1], ijk[2]});
            if (thin_voxel(ts, dom, ijk, 13)) brute_t.insert({ijk[0], ijk[1], ijk[2]});
          }
      size_t visits_c = 0, visits_t = 0;
      for_each_conservative_voxel(s, kClip, [&](int i, int j, int k) {
        ++visits_c;
        enum_c.insert({i, j, k});
      });
      for_each_thin_voxel(ts, dom, kClip, 13, [&](int i, int j, int k) {
        ++visits_t;
        enum_t.insert({i, j, k});
      });
      ASSERT_EQ(brute_c, enum_c) << "conservative, kind " << kind << " n " << n;
      ASSERT_EQ(brute_t, enum_t) << "thin, kind " << kind << " n " << n;
      ASSERT_EQ(visits_c, enum_c.size()) << "each voxel visited once";
      ASSERT_EQ(visits_t, enum_t.size()) << "each voxel visited once";
    }
  }
}

// Calls f(frame setup, conservative setup, tile, box) for triangle t (moved 30000 voxels from the
// origin when n % 3 == 2, in its dominant frame) and each tile of `tile` voxels over a 16^3 region
// around it whose box it meets (conservative_bounds).
template <class F>
void for_each_tile_box(const Vec3f (&t0)[3], int n, int32_t tile, F&& f) {
  const float shift = n % 3 == 2 ? 30000.0f : 0.0f;
  Vec3f t[3];
  for (int i = 0; i < 3; ++i) t[i] = {t0[i].x + shift, t0[i].y + shift, t0[i].z + shift};
  const TriSetup fr = in_dominant_frame(setup_triangle(t[0], t[1], t[2]));
  const ConservativeSetup s = setup_conservative(fr);
  const int32_t base = int32_t(shift) - 2;
  for (int32_t x0 = base; x0 < base + 16; x0 += tile)
    for (int32_t y0 = base; y0 < base + 16; y0 += tile)
      for (int32_t z0 = base; z0 < base + 16; z0 += tile) {
        const VoxelBox clip{{x0, y0, z0}, {x0 + tile - 1, y0 + tile - 1, z0 + tile - 1}};
        VoxelBox r;
        if (conservative_bounds(fr, clip, &r)) f(fr, s, clip, r);
      }
}

// The GPU's fine raster lists a triangle's rows within a tile from conservative_row_range, along
// the projection's axis with fewer of them, and takes rows along u with the spans along v
// (conservative_row_span_along_b). Checked here in the dominant frame, on tiles of 4^3 and 8^3
// voxels and on the same triangles moved 30000 voxels away (larger rounding, larger margin): the
// range holds every row whose span is not empty, along both axes, and the spans along v give exactly
// the pixels of the spans along u. On long thin triangles the ranges hold far fewer rows than the
// bounding boxes.
TEST(Overlap, RowRangesHoldEveryRowWithPixelsAlongBothAxes) {
  Gen gen;
  size_t range_rows = 0, box_rows = 0, thin_range_rows = 0, thin_box_rows = 0;
  for (int kind = 0; kind <= kKinds; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind == kKinds ? 6 : kind, t);
      for_each_tile_box(
          t, n, n % 2 == 0 ? 4 : 8,
          [&](const TriSetup& f, const ConservativeSetup& s, const VoxelBox&, const VoxelBox& r) {
            std::set<std::pair<int32_t, int32_t>> along_a, along_b;  // pixels (u, v)
            int32_t lo = 0, hi = 0;
            for (int32_t v = r.lo[1]; v <= r.hi[1]; ++v)
              if (conservative_row_span(s, r, v, &lo, &hi))
                for (int32_t u = lo; u <= hi; ++u) along_a.insert({u, v});
            for (int32_t u = r.lo[0]; u <= r.hi[0]; ++u)
              if (conservative_row_span_along_b(s, r, u, &lo, &hi))
                for (int32_t v = lo; v <= hi; ++v) along_b.insert({u, v});
            ASSERT_EQ(along_a, along_b) << "kind " << kind << " n " << n;
            for (int axis = 0; axis < 2; ++axis) {
              int32_t first = 0;
              const int32_t rows = conservative_row_range(f, r, 1 - axis, axis, &first);
              ASSERT_GE(rows, 0);
              for (const auto& p : along_a) {
                const int32_t row = axis == 1 ? p.second : p.first;
                ASSERT_TRUE(row >= first && row < first + rows)
                    << "row " << row << " outside [" << first << ", " << first + rows << "), axis " << axis << ", kind "
                    << kind << " n " << n;
              }
              ASSERT_LE(rows, r.hi[axis] - r.lo[axis] + 1);
              range_rows += size_t(rows);
              box_rows += size_t(r.hi[axis] - r.lo[axis] + 1);
              if (kind == 6) {
                thin_range_rows += size_t(rows);
                thin_box_rows += size_t(r.hi[axis] - r.lo[axis] + 1);
              }
            }
          });
    }
  }
  EXPECT_LT(range_rows, box_rows);
  EXPECT_LT(double(thin_range_rows), 0.8 * double(thin_box_rows)) << thin_range_rows << " of " << thin_box_rows;
}

// What slab_box keeps of one (tile, triangle) pair in `mode` (f in its dominant frame, clip the tile
// in that frame): the pixels of the pair's box and of the narrowed one, the columns with voxels, the
// columns of the rows' spans that lie in the narrowed box; `bad` names the first column with a voxel
// outside it, or a narrowed box that is not within the pair's.
struct SlabCounts {
  size_t box_pixels = 0, piece_pixels = 0, columns = 0, span_columns_in_piece = 0;
  std::string bad;
};
void count_slab_box(const TriSetup& f, VoxelMode mode, const VoxelBox& clip, int32_t dims_c, SlabCounts* n) {
  const bool thin = mode == VoxelMode::kThin;
  VoxelBox r;
  if (!(thin ? thin_bounds(f, clip, &r) : conservative_bounds(f, clip, &r))) return;
  const ConservativeSetup s = setup_conservative(f);
  const DiamondEdges e = setup_diamond_edges(f, 2);
  VoxelBox piece = r;
  const bool in_slab = slab_box(f, mode, &piece);
  auto pixels = [](const VoxelBox& x) { return size_t(x.hi[0] - x.lo[0] + 1) * size_t(x.hi[1] - x.lo[1] + 1); };
  n->box_pixels += pixels(r);
  if (in_slab) n->piece_pixels += pixels(piece);
  if (in_slab &&
      !(piece.lo[0] >= r.lo[0] && piece.hi[0] <= r.hi[0] && piece.lo[1] >= r.lo[1] && piece.hi[1] <= r.hi[1] &&
        piece.lo[2] == r.lo[2] && piece.hi[2] == r.hi[2]) &&
      n->bad.empty())
    n->bad = "a narrowed box not within the pair's";
  for (int32_t v = r.lo[1]; v <= r.hi[1]; ++v) {
    int32_t lo = 0, hi = -1;
    if (!(thin ? thin_row_span(f, e, r, v, &lo, &hi) : conservative_row_span(s, r, v, &lo, &hi))) continue;
    for (int32_t u = lo; u <= hi; ++u) {
      int32_t wlo = 0, whi = 0;
      const bool voxels =
          thin ? thin_column_voxel(f, r, u, v, dims_c, &wlo) : conservative_column_run(s, r, u, v, &wlo, &whi);
      const bool in = in_slab && u >= piece.lo[0] && u <= piece.hi[0] && v >= piece.lo[1] && v <= piece.hi[1];
      n->columns += voxels;
      n->span_columns_in_piece += in;
      if (voxels && !in && n->bad.empty())
        n->bad = std::string(mode_name(mode)) + " column (" + std::to_string(u) + ", " + std::to_string(v) +
                 ") holds a voxel outside the slab's box";
    }
  }
}

// slab_box drops only pixels with no voxel in the pair's depth range: every column in which
// conservative_column_run (conservative) or thin_column_voxel (thin) finds a voxel lies in the
// narrowed box (the fine raster lists rows and their spans there), and it does narrow boxes where a
// tile cuts an oblique triangle's depth range. Tiles of 2, 4 and 8 voxels, also 30000 voxels from the
// origin; long thin triangles, edges almost along an axis, triangles exactly on voxel faces,
// degenerate ones; thin voxels sometimes under the far-face rule.
TEST(Overlap, SlabBoxesDropOnlyPixelsWithNoVoxelInTheTile) {
  Gen gen;
  SlabCounts cons, thin;
  for (int kind = 0; kind <= kKinds + 1; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind >= kKinds ? 6 - 6 * (kind - kKinds) : kind, t);
      if (kind == kKinds + 1) {  // an edge almost along an axis
        const float d = 1e-5f * float(n % 5), len = t[1].x - t[0].x + 3.0f;
        const int axis = (n / 3) % 3;
        t[1] = {t[0].x + (axis == 0 ? len : d), t[0].y + (axis == 1 ? len : d), t[0].z + (axis == 2 ? len : 0.0f)};
      }
      for_each_tile_box(t, n, 2 << (n % 3),
                        [&](const TriSetup& f, const ConservativeSetup&, const VoxelBox& clip, const VoxelBox&) {
                          count_slab_box(f, VoxelMode::kConservative, clip, 0, &cons);
                          count_slab_box(f, VoxelMode::kThin, clip, n % 2 ? clip.hi[2] + 1 : 1 << 20, &thin);
                        });
      ASSERT_EQ(cons.bad, "") << "kind " << kind << " n " << n;
      ASSERT_EQ(thin.bad, "") << "kind " << kind << " n " << n;
    }
  }
  for (const SlabCounts* c : {&cons, &thin}) {
    EXPECT_GT(c->columns, 0u);
    EXPECT_LT(double(c->piece_pixels), 0.9 * double(c->box_pixels)) << c->piece_pixels << " of " << c->box_pixels;
  }
}

// The slab boxes on slivers thousands of voxels long whose float normal (a cross product of almost
// parallel edges) tilts the plane the tests use by many voxels from the far vertices: the boxes are
// taken on the triangle lifted onto that plane, so every column with a voxel stays in them, in both
// modes (each 32^3 tile of the coarse footprint; the GPU test on the first sliver failed in thin mode
// when the boxes used the vertices' own depths).
TEST(Overlap, SlabBoxesHoldEveryColumnOfSliversWithTiltedFloatNormals) {
  const Int3 dims{8192, 8192, 8192}, tiles = grid_tiles(dims);
  const Vec3f slivers[2][3] = {{{0.5f, 0.5f, 0.5f}, {8191.5f, 8100.25f, 8000.75f}, {8191.5f, 8101.0f, 8001.5f}},
                               {{0.5f, 0.5f, 0.5f}, {8191.5f, 8000.25f, 200.75f}, {8191.5f, 8001.0f, 201.5f}}};
  for (const auto& v : slivers) {
    const TriSetup t = setup_triangle(v[0], v[1], v[2]);
    const TriSetup f = in_dominant_frame(t);
    const int32_t dims_c = component(in_dominant_frame(dims, t.dom), 2);
    for (VoxelMode mode : {VoxelMode::kConservative, VoxelMode::kThin}) {
      SlabCounts n;
      for_each_tile(t, mode, dims, tiles, [&](uint64_t tile) {
        const Int3 tc = tile_coords(tiles, tile);
        const VoxelBox clip = in_dominant_frame(
            VoxelBox{{tc.x * kTileDim, tc.y * kTileDim, tc.z * kTileDim},
                     {tc.x * kTileDim + kTileDim - 1, tc.y * kTileDim + kTileDim - 1, tc.z * kTileDim + kTileDim - 1}},
            t.dom);
        count_slab_box(f, mode, clip, dims_c, &n);
      });
      ASSERT_EQ(n.bad, "");
      EXPECT_GT(n.columns, 8000u) << mode_name(mode);
      EXPECT_LT(double(n.span_columns_in_piece), 2.0 * double(n.columns)) << mode_name(mode);  // the boxes do narrow
    }
  }
}

// Runs along each of the three axes of the dominant frame (for_each_conservative_line_voxel:
// conservative_line_span, _run; frame axis k is grid axis frame_axis(s, k)) visit exactly the voxels
// the per-voxel test accepts, whichever axis conservative_line_axis would pick: the tests are
// monotone along every axis, and each narrowing step walks from its estimate to the exact end.
// Long thin triangles and triangles almost parallel to an axis make estimates poor (tiny divisors).
TEST(Overlap, RunsAlongEveryAxisVisitExactlyTheAcceptedVoxels) {
  Gen gen;
  int picked[3] = {0, 0, 0};
  for (int kind = 0; kind <= kKinds; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind == kKinds ? 6 : kind, t);
      if (kind == kKinds) t[2].y = t[0].y + 1e-6f * float(n % 7);  // almost parallel to the x and z axes
      const ConservativeSetup s = setup_conservative(setup_triangle(t[0], t[1], t[2]));
      const VoxelBox& clip = kClip;
      VoxelSet brute;
      int32_t c[3];
      for (c[0] = clip.lo[0]; c[0] <= clip.hi[0]; ++c[0])
        for (c[1] = clip.lo[1]; c[1] <= clip.hi[1]; ++c[1])
          for (c[2] = clip.lo[2]; c[2] <= clip.hi[2]; ++c[2])
            if (conservative_voxel(s, c)) brute.insert({c[0], c[1], c[2]});
      ++picked[conservative_line_axis(s)];
      VoxelBox r;
      const bool any = conservative_bounds(s.t, clip, &r);
      auto along = [&](int z) {
        VoxelSet got;
        size_t visits = 0;
        if (any)
          for_each_conservative_line_voxel(s, r, z, [&](int32_t i, int32_t j, int32_t k) {
            got.insert({i, j, k});
            ++visits;
          });
        EXPECT_EQ(visits, got.size()) << "axis " << z << ", kind " << kind << " n " << n;
        return got;
      };
      for (int z = 0; z < 3; ++z) ASSERT_EQ(brute, along(z)) << "axis " << z << ", kind " << kind << " n " << n;
    }
  }
  // The rule picks every axis somewhere in these triangles (not always the same one).
  EXPECT_GT(picked[0], 0);
  EXPECT_GT(picked[1], 0);
  EXPECT_GT(picked[2], 0);
}

// The GPU's fine raster sets triangles up in their dominant frame (in_dominant_frame: the axes
// permuted cyclically so that the dominant one is the third) and relies on every setup value and test
// being the same bits there. Checked here on the CPU: the frame's setup from permuted vertices equals
// the permuted setup, and both enumerators visit the same voxels in the frame (with the clip box
// permuted, and the dominant axis forced to 2 even where |n| components tie) as in the grid's axes.
TEST(Overlap, DominantFrameGivesTheSameBitsAndVoxels) {
  Gen gen;
  const VoxelBox clip{{-2, 0, 1}, {14, 11, 13}};  // not symmetric, so that its permutation matters
  auto same = [](const Vec3f& p, const Vec3f& q) {
    return std::memcmp(&p, &q, sizeof(Vec3f)) == 0;
  };
  std::vector<std::array<Vec3f, 3>> tris;
  for (int kind = 0; kind < kKinds; ++kind)
    for (int n = 0; n < 200; ++n) {
      std::array<Vec3f, 3> t;
      gen.make(kind, t.data());
      tris.push_back(t);
    }
  // Ties between |n| components: normals (1, 0, -1), (1, 1, 0), (1, 1, 1) and mirror images.
  tris.push_back({Vec3f{1.5f, 2.0f, 1.5f}, Vec3f{1.5f, 9.0f, 1.5f}, Vec3f{8.5f, 2.0f, 8.5f}});
  tris.push_back({Vec3f{2.0f, 3.0f, 1.0f}, Vec3f{9.0f, -4.0f, 1.0f}, Vec3f{2.0f, 3.0f, 9.0f}});
  tris.push_back({Vec3f{9.0f, 0.5f, 0.5f}, Vec3f{0.5f, 9.0f, 0.5f}, Vec3f{0.5f, 0.5f, 9.0f}});
  tris.push_back({Vec3f{0.5f, 0.5f, 9.0f}, Vec3f{0.5f, 9.0f, 0.5f}, Vec3f{9.0f, 0.5f, 0.5f}});
  for (size_t n = 0; n < tris.size(); ++n) {
    const Vec3f* t = tris[n].data();
    const TriSetup ts = setup_triangle(t[0], t[1], t[2]);
    const int dom = ts.dom, a = vt_axis_a(dom), b = vt_axis_b(dom);
    const TriSetup moved = in_dominant_frame(ts);
    TriSetup f = setup_triangle(in_dominant_frame(t[0], dom), in_dominant_frame(t[1], dom), in_dominant_frame(t[2], dom));
    f.dom = 2;
    ASSERT_TRUE(same(f.n, moved.n) && same(f.lo, moved.lo) && same(f.hi, moved.hi)) << "triangle " << n;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(same(from_dominant_frame(f.v[i], dom), t[i])) << "triangle " << n;
    const VoxelBox fclip = in_dominant_frame(clip, dom);
    auto back = [&](VoxelSet& set) {  // frame voxel (u, v, w) -> grid voxel, by hand
      return [&set, dom, a, b](int u, int v, int w) {
        int ijk[3];
        ijk[a] = u;
        ijk[b] = v;
        ijk[dom] = w;
        set.insert({ijk[0], ijk[1], ijk[2]});
      };
    };
    for (const Int3 p : {Int3{1, 2, 3}, Int3{-4, 7, 0}}) {  // from_dominant_frame inverts in_dominant_frame
      const Int3 q = from_dominant_frame(in_dominant_frame(p, dom), dom);
      ASSERT_TRUE(q.x == p.x && q.y == p.y && q.z == p.z) << "dom " << dom;
      const Int3 g = from_dominant_frame(Int3{p.x, p.y, p.z}, dom);  // (u, v, w) lands on axes a, b, dom
      const int32_t gi[3] = {g.x, g.y, g.z};
      ASSERT_TRUE(gi[a] == p.x && gi[b] == p.y && gi[dom] == p.z) << "dom " << dom;
    }
    auto direct = [](VoxelSet& set) { return [&set](int i, int j, int k) { set.insert({i, j, k}); }; };
    VoxelSet grid_c, frame_c, grid_t, frame_t;
    for_each_conservative_voxel(setup_conservative(ts), clip, direct(grid_c));
    for_each_conservative_voxel(setup_conservative(f), fclip, back(frame_c));
    const int32_t dims_c = 13;  // the far face of a grid of 13 voxels along the dominant axis
    for_each_thin_voxel(ts, setup_diamond_edges(ts, dom), clip, dims_c, direct(grid_t));
    for_each_thin_voxel(f, setup_diamond_edges(f, 2), fclip, dims_c, back(frame_t));
    ASSERT_EQ(grid_c, frame_c) << "conservative, triangle " << n;
    ASSERT_EQ(grid_t, frame_t) << "thin, triangle " << n;
  }
}

// The thin mode's definition, evaluated independently in double: column (u,v) of the dominant
// projection is set iff the projected triangle meets the closed diamond around the column centre,
// and its voxel along the dominant axis is floor(depth of the plane at the centre).
bool diamond_meets(const Vec3f t[3], int dom, int u, int v, double r) {
  const int a = vt_axis_a(dom), b = vt_axis_b(dom);
  // Rotate by 45 degrees: the diamond becomes an axis-aligned square; clip as a 3D polygon with
  // the third coordinate free.
  std::vector<D3> poly;
  for (int i = 0; i < 3; ++i) {
    const double x = double(component(t[i], a)) - (u + 0.5), y = double(component(t[i], b)) - (v + 0.5);
    poly.push_back({{x + y, x - y, 0.0}});
  }
  const double lo[3] = {-r, -r, -1}, hi[3] = {r, r, 1};
  return clip_intersects(poly, lo, hi);
}

TEST(Overlap, ThinTestMatchesItsDefinition) {
  Gen gen;
  uint64_t tested = 0, near_misses = 0;
  for (int kind = 0; kind < kKinds; ++kind) {
    for (int n = 0; n < 300; ++n) {
      Vec3f t[3];
      gen.make(kind, t);
      const TriSetup ts = setup_triangle(t[0], t[1], t[2]);
      if (is_flat(ts)) continue;
      const DiamondEdges dom = setup_diamond_edges(ts, ts.dom);
      const int c = ts.dom, a = vt_axis_a(c), b = vt_axis_b(c);
      const double eps = tolerance(t);
      // Plane in double from the same float vertices.
      double e1[3], e2[3], nn[3];
      for (int k = 0; k < 3; ++k) {
        e1[k] = double(component(t[1], k)) - component(t[0], k);
        e2[k] = double(component(t[2], k)) - component(t[0], k);
      }
      nn[0] = e1[1] * e2[2] - e1[2] * e2[1];
      nn[1] = e1[2] * e2[0] - e1[0] * e2[2];
      nn[2] = e1[0] * e2[1] - e1[1] * e2[0];
      for (int u = kClip.lo[a]; u <= kClip.hi[a]; ++u)
        for (int v = kClip.lo[b]; v <= kClip.hi[b]; ++v) {
          const bool in_outer = diamond_meets(t, c, u, v, 0.5 + eps);
          const bool in_exact = diamond_meets(t, c, u, v, 0.5);
          const bool in_inner = diamond_meets(t, c, u, v, 0.5 - eps);
          const double depth = double(component(t[0], c)) -
                               (nn[a] * (u + 0.5 - component(t[0], a)) + nn[b] * (v + 0.5 - component(t[0], b))) / nn[c];
          for (int w = kClip.lo[c]; w <= kClip.hi[c]; ++w) {
            int32_t ijk[3];
            ijk[a] = u;
            ijk[b] = v;
            ijk[c] = w;
            const bool got = thin_voxel(ts, dom, ijk, 1000);
            const bool depth_exact = std::floor(depth) == w;
            const bool depth_near = std::fabs(depth - std::round(depth)) <= eps * 8 &&
                                    (std::floor(depth + eps * 8) == w || std::floor(depth - eps * 8) == w);
            const bool want = in_exact && depth_exact;
            if (!in_outer) {
              ASSERT_FALSE(got);
              continue;
            }
            ++tested;
            if (got == want) continue;
            ++near_misses;
            ASSERT_TRUE(in_outer != in_inner || depth_near)
                << "kind " << kind << " column " << u << "," << v << " w " << w << " depth " << depth;
          }
        }
    }
  }
  EXPECT_GT(tested, 10000u);
  EXPECT_LT(near_misses, tested / 1000 + 1);
}

TEST(Overlap, PointTriangleDistanceMatchesDenseSampling) {
  Gen gen;
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-3, 15);
  for (int kind = 0; kind < kKinds; ++kind) {
    for (int n = 0; n < 40; ++n) {
      Vec3f t[3];
      gen.make(kind, t);
      if (kind == 2) continue;  // huge triangles: sampling too coarse
      const Vec3f p{u(rng), u(rng), u(rng)};
      const Vec3f w[3] = {sub(t[0], p), sub(t[1], p), sub(t[2], p)};
      const float d = origin_triangle_distance(w[0], w[1], w[2]);
      // Independent estimate: the nearest of 201^2 barycentric samples, in double.
      const int steps = 200;
      double best = 1e300, longest = 0;
      for (int a = 0; a < 3; ++a) {
        const int b2 = (a + 1) % 3;
        const double dx = double(t[a].x) - t[b2].x, dy = double(t[a].y) - t[b2].y, dz = double(t[a].z) - t[b2].z;
        longest = std::max(longest, std::sqrt(dx * dx + dy * dy + dz * dz));
      }
      for (int i = 0; i <= steps; ++i)
        for (int j = 0; i + j <= steps; ++j) {
          const double bu = double(i) / steps, bv = double(j) / steps, bw = 1.0 - bu - bv;
          const double x = bw * w[0].x + bu * w[1].x + bv * w[2].x, y = bw * w[0].y + bu * w[1].y + bv * w[2].y,
                       z = bw * w[0].z + bu * w[1].z + bv * w[2].z;
          best = std::min(best, std::sqrt(x * x + y * y + z * z));
        }
      EXPECT_LE(d, best + 1e-4) << "kind " << kind;                      // never above a real point
      EXPECT_GE(d, best - longest / steps - 1e-4) << "kind " << kind;    // within sample spacing
    }
  }
}

TEST(Overlap, DominantAxisPrefersLowerAxisOnTies) {
  const TriSetup t = setup_triangle({0, 0, 0}, {1, 0, 1}, {0, 1, 1});  // n = (-1, -1, 1)
  EXPECT_EQ(t.dom, 0);
  const TriSetup z = setup_triangle({0, 0, 0}, {1, 0, 0}, {0, 1, 0});
  EXPECT_EQ(z.dom, 2);
}

TEST(Overlap, FlatTrianglesGiveTheirSegmentInConservativeModeAndNothingInThinMode) {
  const Vec3f a{0.5f, 0.5f, 0.5f}, b{4.5f, 4.5f, 4.5f}, m{2.5f, 2.5f, 2.5f};
  const TriSetup t = setup_triangle(a, b, m);
  ASSERT_TRUE(is_flat(t));
  VoxelSet got;
  for_each_conservative_voxel(setup_conservative(t), kClip, [&](int i, int j, int k) { got.insert({i, j, k}); });
  // The diagonal segment passes through voxel corners: it touches (i,i,i) and, at each corner
  // (q,q,q), all eight voxels around it.
  for (int i = 0; i <= 4; ++i) EXPECT_TRUE(got.count({i, i, i}));
  EXPECT_TRUE(got.count({1, 0, 0}));
  EXPECT_FALSE(got.count({3, 0, 0}));
  EXPECT_FALSE(got.count({0, 4, 4}));
  size_t thin = 0;
  for_each_thin_voxel(t, setup_diamond_edges(t, t.dom), kClip, 13, [&](int, int, int) { ++thin; });
  EXPECT_EQ(thin, 0u);
}

}  // namespace
}  // namespace voxtile
