// Solid and sdf targets (core/inside.h): the inside tests against brute-force oracles written here
// in double precision (ray parity, the generalized winding number as a sum of triangle solid
// angles, point-triangle distance), on closed, open, overlapping and inverted meshes; exact fills
// of aligned boxes; the level-set output; and the GPU against the CPU bit for bit.
#include <gtest/gtest.h>
#include <openvdb/openvdb.h>
#include <openvdb/tools/MeshToVolume.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "core/band_search.h"
#include "core/inside_grid.h"
#include "core/inside_tree.h"
#include "core/meshgen.h"
#include "core/vectorized.h"
#include "core/voxelizer.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"
#include "io/vdb.h"
#include "io/writers.h"
#include "kernels/api.h"
#include "kernels/testing.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

struct D3 {
  double x, y, z;
};
D3 operator-(D3 a, D3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
double dot(D3 a, D3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
D3 crs(D3 a, D3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double len(D3 a) { return std::sqrt(dot(a, a)); }
D3 vtx(const Mesh& m, size_t t, int c) {
  const Vec3f p = m.vertex(t, c);
  return {p.x, p.y, p.z};
}

// Oracle: the generalized winding number, sum of the triangles' signed solid angles / 4 pi.
double gwn(const Mesh& m, D3 p) {
  double sum = 0;
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const D3 a = vtx(m, t, 0) - p, b = vtx(m, t, 1) - p, c = vtx(m, t, 2) - p;
    const double la = len(a), lb = len(b), lc = len(c);
    const double num = dot(a, crs(b, c));
    const double den = la * lb * lc + dot(a, b) * lc + dot(a, c) * lb + dot(b, c) * la;
    sum += 2 * std::atan2(num, den);
  }
  return sum / (4 * M_PI);
}

// Oracle: parity of the crossings of a ray from p along `dir` (Moller-Trumbore in double).
bool ray_parity(const Mesh& m, D3 p, D3 dir) {
  int n = 0;
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const D3 a = vtx(m, t, 0), e1 = vtx(m, t, 1) - a, e2 = vtx(m, t, 2) - a;
    const D3 h = crs(dir, e2);
    const double det = dot(e1, h);
    if (std::fabs(det) < 1e-300) continue;
    const D3 s = p - a;
    const double u = dot(s, h) / det;
    if (u < 0 || u > 1) continue;
    const D3 q = crs(s, e1);
    const double v = dot(dir, q) / det;
    if (v < 0 || u + v > 1) continue;
    if (dot(e2, q) / det > 0) ++n;
  }
  return n & 1;
}

// Oracle: distance from p to triangle t (closest point by region tests, Ericson 5.1.5).
double tri_distance(const Mesh& m, size_t t, D3 p) {
  const D3 a = vtx(m, t, 0), b = vtx(m, t, 1), c = vtx(m, t, 2);
  const D3 ab = b - a, ac = c - a, ap = p - a;
  auto at = [&](double v, double w) {
    return D3{a.x + ab.x * v + ac.x * w, a.y + ab.y * v + ac.y * w, a.z + ab.z * v + ac.z * w};
  };
  const double d1 = dot(ab, ap), d2 = dot(ac, ap);
  if (d1 <= 0 && d2 <= 0) return len(p - a);
  const D3 bp = p - b;
  const double d3 = dot(ab, bp), d4 = dot(ac, bp);
  if (d3 >= 0 && d4 <= d3) return len(p - b);
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) return len(p - at(d1 / (d1 - d3), 0));
  const D3 cp = p - c;
  const double d5 = dot(ab, cp), d6 = dot(ac, cp);
  if (d6 >= 0 && d5 <= d6) return len(p - c);
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) return len(p - at(0, d2 / (d2 - d6)));
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    const double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return len(p - D3{b.x + (c.x - b.x) * w, b.y + (c.y - b.y) * w, b.z + (c.z - b.z) * w});
  }
  const double denom = 1 / (va + vb + vc);
  return len(p - at(vb * denom, vc * denom));
}

bool grid_has(const SparseGrid& g, int32_t i, int32_t j, int32_t k) {
  const uint64_t key = brick_key(i >> 3, j >> 3, k >> 3);
  for (const BrickRun& r : g.runs)
    if (key >= r.key && key < r.key + r.count) return true;
  const auto it = std::lower_bound(g.keys.begin(), g.keys.end(), key);
  return it != g.keys.end() && *it == key &&
         g.masks[size_t(it - g.keys.begin())].test(brick_offset(i & 7, j & 7, k & 7));
}
// band_min over every triangle of the mesh (g: its grid-space vertices) at voxel (i, j, k), from the width.
float brute_band_min(const Mesh& mesh, const std::vector<Vec3f>& g, int32_t i, int32_t j, int32_t k,
                     const BandSetup& bs) {
  float best = bs.width;
  for (size_t t = 0; t < mesh.num_triangles(); ++t) {
    const Vec3f tri[3] = {g[mesh.indices[3 * t]], g[mesh.indices[3 * t + 1]], g[mesh.indices[3 * t + 2]]};
    best = band_min(tri, i, j, k, bs, best);
  }
  return best;
}
float grid_value(const SparseGrid& g, int32_t i, int32_t j, int32_t k) {
  const uint64_t key = brick_key(i >> 3, j >> 3, k >> 3);
  const size_t b = size_t(std::lower_bound(g.keys.begin(), g.keys.end(), key) - g.keys.begin());
  return float(g.value(b, brick_offset(i & 7, j & 7, k & 7)));
}

Mesh append(const Mesh& a, const Mesh& b) {
  Mesh m = a;
  const uint32_t base = uint32_t(m.positions.size());
  m.positions.insert(m.positions.end(), b.positions.begin(), b.positions.end());
  for (uint32_t i : b.indices) m.indices.push_back(base + i);
  return m;
}
Mesh flipped(const Mesh& a) {
  Mesh m = a;
  for (size_t t = 0; t < m.num_triangles(); ++t) std::swap(m.indices[3 * t + 1], m.indices[3 * t + 2]);
  return m;
}
// Every `every`-th triangle removed (holes; the mesh is open).
Mesh holed(const Mesh& a, size_t every) {
  Mesh m = a;
  m.indices.clear();
  for (size_t t = 0; t < a.num_triangles(); ++t)
    if (t % every != 3) m.indices.insert(m.indices.end(), a.indices.begin() + 3 * t, a.indices.begin() + 3 * t + 3);
  return m;
}
Mesh rotated(const Mesh& a, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n;
  double q[4] = {n(rng), n(rng), n(rng), n(rng)};
  const double l = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (double& x : q) x /= l;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  const double r[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
                          {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
                          {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
  Mesh m = a;
  for (Vec3f& p : m.positions) {
    const double px = p.x, py = p.y, pz = p.z;
    p = {float(r[0][0] * px + r[0][1] * py + r[0][2] * pz), float(r[1][0] * px + r[1][1] * py + r[1][2] * pz),
         float(r[2][0] * px + r[2][1] * py + r[2][2] * pz)};
  }
  return m;
}

GridSpec grid_for(const Mesh& m, int res, int pad = 1) {
  Bounds b;
  for (const Vec3f& p : m.positions) b.extend({p.x, p.y, p.z});
  GridOptions o;
  o.resolution = res;
  o.pad = pad;
  return make_grid_spec(b, o);
}

struct Case {
  std::string name;
  Mesh mesh;
  bool closed;
};
std::vector<Case> cases() {
  const Mesh sphere = make_uv_sphere(0.1f, -0.2f, 0.3f, 1.0f, 9, 13);
  const Mesh box = make_box_mesh(-0.7f, -0.4f, -0.9f, 0.8f, 0.6f, 0.5f);
  std::vector<Case> c;
  c.push_back({"sphere", sphere, true});
  c.push_back({"rotated box", rotated(box, 7), true});
  c.push_back({"overlapping parts", append(sphere, rotated(box, 3)), true});
  c.push_back({"inverted sphere", flipped(sphere), true});
  c.push_back({"sphere with holes", holed(sphere, 9), false});
  c.push_back({"box without its top", holed(box, 100), false});
  c.push_back({"two open parts", append(holed(rotated(sphere, 5), 7), holed(rotated(box, 11), 5)), false});
  return c;
}

// Every voxel centre of the grid against an oracle (voxels where the oracle is within `margin`
// of its threshold are skipped and counted).
template <class Oracle>
void expect_inside(const Mesh& mesh, const GridSpec& spec, InsideMethod method, Oracle&& oracle,
                   const std::string& what) {
  const SparseGrid g = inside_cpu(mesh, spec, method);
  g.validate();
  size_t checked = 0, inside = 0;
  for (int32_t i = 0; i < spec.dims.x; ++i)
    for (int32_t j = 0; j < spec.dims.y; ++j)
      for (int32_t k = 0; k < spec.dims.z; ++k) {
        const Vec3d c = spec.voxel_center(i, j, k);
        // Centres within 1e-3 voxel of the surface are undecidable by design (1/1024-voxel snapping).
        double d = 1e300;
        for (size_t t = 0; t < mesh.num_triangles(); ++t) d = std::min(d, tri_distance(mesh, t, D3{c.x, c.y, c.z}));
        if (d < 1e-3 * spec.voxel_size.x) continue;
        int expect = oracle(D3{c.x, c.y, c.z});
        if (expect < 0) continue;  // undecidable here
        ++checked;
        inside += expect;
        ASSERT_EQ(grid_has(g, i, j, k), expect == 1)
            << what << " voxel " << i << "," << j << "," << k << " distance " << d / spec.voxel_size.x;
      }
  EXPECT_GT(checked, spec.num_voxels() * 9 / 10) << what;
  (void)inside;
}

TEST(Inside, WindingNumberEqualsTheBruteForceSumOfSolidAnglesOnEveryKindOfMesh) {
  for (const Case& c : cases())
    for (int res : {10, 17}) {
      const GridSpec spec = grid_for(c.mesh, res);
      expect_inside(
          c.mesh, spec, InsideMethod::kWinding,
          [&](D3 p) {
            const double w = gwn(c.mesh, p);
            return std::fabs(w - 0.5) < 1e-7 ? -1 : (w >= 0.5 ? 1 : 0);
          },
          c.name + " winding r" + std::to_string(res));
    }
}

// A span whose bounds decide it whole costs the near parts at its two ends and one far part: its
// last voxel is decided with the range (its bounds hold at both ends), not looked at again alone.
TEST(Inside, TheWindingWalkDecidesAWholeSpanFromItsEnds) {
  for (const int64_t len : {1, 2, 3, 17, 1000})
    for (const double b : {-3.0, 9.0}) {  // outside, inside (c = 0: inside from B = 2 pi)
      int near_calls = 0, far_calls = 0;
      std::vector<int> got(size_t(len), 0);
      inside_winding_walk(
          [&](int64_t) {
            ++near_calls;
            return InsideParts{b > 0 ? b : 0.0, b > 0 ? 0.0 : b};
          },
          [&](int64_t, int64_t) {
            ++far_calls;
            return InsideFar{0.0, 0.1, 0.0};
          },
          [&](int64_t) {
            ADD_FAILURE() << "an exact sum";
            return InsideParts{0.0, 0.0};
          },
          0, 0, len,
          [&](int64_t a, int64_t e) {
            for (int64_t k = a; k < e; ++k) got[size_t(k)]++;
          });
      EXPECT_EQ(near_calls, len == 1 ? 1 : 2) << len;
      EXPECT_EQ(far_calls, 1) << len;
      for (int64_t k = 0; k < len; ++k) ASSERT_EQ(got[size_t(k)], b > 0 ? 1 : 0) << len << " voxel " << k;
    }
}

TEST(Inside, TheWindingWalkDecidesEveryVoxelAsItsOwnSumWould) {
  // Near parts that rise (pos) and fall (neg) as along a column, a far part that wanders with a known
  // bound on its change, and B = pos + neg + far crossing the threshold back and forth: the walk must
  // set exactly the voxels whose own sum is >= the threshold, each once, whatever the bounds leave open.
  const double kPi = 3.14159265358979323846;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> step(0.0, 0.08), unit(-1.0, 1.0);
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t k0 = int64_t(rng() % 40), len = 1 + int64_t(rng() % (trial < 200 ? 40 : 3000));
    const int64_t c = int64_t(rng() % 3) - 1;
    const double threshold = 4 * kPi * (0.5 - double(c));
    std::vector<InsideParts> parts(size_t(k0 + len));
    // The far part: a rising minus a rising sequence (as far terms of both signs), each step <= lip,
    // so that the exact parts (near and far together) rise and fall too.
    std::vector<double> far(size_t(k0 + len)), far_pos(far.size()), far_neg(far.size());
    double pos = threshold + 1.0, neg = -1.0 - step(rng), fp = std::fabs(unit(rng)), fn = std::fabs(unit(rng));
    const double lip = 0.05 * std::fabs(unit(rng));  // |far(k + 1) - far(k)| <= lip
    for (size_t k = 0; k < parts.size(); ++k) {
      if (rng() % 2) pos += step(rng);
      if (rng() % 2) neg -= step(rng);
      fp += lip * std::fabs(unit(rng)) * (rng() % 2);
      fn += lip * std::fabs(unit(rng)) * (rng() % 2);
      parts[k] = {pos, neg};
      far[k] = fp - fn;
      far_pos[k] = fp;
      far_neg[k] = -fn;
    }
    const double rest = trial % 3 == 0 ? 0.0 : 0.02 * std::fabs(unit(rng));  // a rest about each far value
    auto near_at = [&](int64_t k) { return parts[size_t(k)]; };
    auto far_over = [&](int64_t a, int64_t b) {
      const int64_t m = a + (b - a) / 2;  // any point of the range, with the change to the ends
      return InsideFar{far[size_t(m)], lip * double(std::max(m - a, b - m)) + rest, std::fabs(far[size_t(m)])};
    };
    auto exact_parts = [&](int64_t k) {
      return InsideParts{parts[size_t(k)].pos + far_pos[size_t(k)], parts[size_t(k)].neg + far_neg[size_t(k)]};
    };
    int exact_calls = 0;
    std::vector<int> got(parts.size(), 0);
    inside_winding_walk(
        near_at, far_over,
        [&](int64_t k) {
          ++exact_calls;
          return exact_parts(k);
        },
        c, k0, k0 + len,
        [&](int64_t a, int64_t b) {
          ASSERT_TRUE(k0 <= a && a < b && b <= k0 + len);
          for (int64_t k = a; k < b; ++k) got[size_t(k)]++;
        });
    for (int64_t k = 0; k < k0 + len; ++k) {
      const double b = parts[size_t(k)].pos + far[size_t(k)] + parts[size_t(k)].neg;
      const bool in = k >= k0 && double(c) + b / (4 * kPi) >= 0.5;
      ASSERT_EQ(got[size_t(k)], in ? 1 : 0) << "trial " << trial << " voxel " << k;
    }
    // With a coarse far part over the whole walk (the far values' range, a wider one every other
    // trial): the same voxels, and no more far parts taken.
    {
      double lo = far[size_t(k0)], hi = lo;
      for (int64_t k = k0; k < k0 + len; ++k) {
        lo = std::min(lo, far[size_t(k)]);
        hi = std::max(hi, far[size_t(k)]);
      }
      const double widen = trial % 2 ? 0.0 : 3.0;
      const InsideFar coarse{0.5 * (lo + hi), 0.5 * (hi - lo) + rest + widen, std::max(std::fabs(lo), std::fabs(hi))};
      std::vector<int> got2(parts.size(), 0);
      int far_calls = 0, far_calls2 = 0;
      for (const bool with : {false, true})
        inside_winding_walk(
            near_at,
            [&](int64_t a, int64_t b) {
              ++(with ? far_calls2 : far_calls);
              return far_over(a, b);
            },
            inside_no_point, exact_parts, c, k0, k0 + len,
            [&](int64_t a, int64_t b) {
              if (with)
                for (int64_t k = a; k < b; ++k) got2[size_t(k)]++;
            },
            nullptr, with ? coarse : inside_no_far());
      ASSERT_EQ(got2, got) << "trial " << trial;
      ASSERT_LE(far_calls2, far_calls) << "trial " << trial;
    }
    // With a point's bounds (here the far value itself at level 0, a wider rest at level 1, none
    // after) the same answer, with exact sums only where the point leaves a voxel open.
    std::vector<int> got3(parts.size(), 0);
    int exact_calls3 = 0, point_calls = 0;
    inside_winding_walk(
        near_at, far_over,
        [&](int64_t k, int level) {
          ++point_calls;
          const double r = level == 0 ? 0.5 : level == 1 ? 1e-3 : INFINITY;
          return InsideFar{far[size_t(k)] + (level == 0 ? 0.4 : -1e-4), r, std::fabs(far[size_t(k)])};
        },
        [&](int64_t k) {
          ++exact_calls3;
          return exact_parts(k);
        },
        c, k0, k0 + len,
        [&](int64_t a, int64_t b) {
          for (int64_t k = a; k < b; ++k) got3[size_t(k)]++;
        });
    ASSERT_EQ(got, got3) << "trial " << trial;
    ASSERT_LE(exact_calls3, exact_calls) << "trial " << trial;
    if (exact_calls > 0) {
      ASSERT_GT(point_calls, 0) << "trial " << trial;
    }
    // With a patience, the walk stops after that many exact sums; the rest with every edge exactly
    // (no far part) completes the same answer.
    int patience = 1 + trial % 3;
    std::vector<int> got2(parts.size(), 0);
    auto set2 = [&](int64_t a, int64_t b) {
      for (int64_t k = a; k < b; ++k) got2[size_t(k)]++;
    };
    const int64_t stop = inside_winding_walk(near_at, far_over, exact_parts, c, k0, k0 + len, set2, &patience);
    ASSERT_TRUE(stop >= k0 && stop <= k0 + len);
    if (stop < k0 + len) {
      ASSERT_EQ(patience, 0);
    }
    for (int64_t k = stop; k < k0 + len; ++k) ASSERT_EQ(got2[size_t(k)], 0) << "trial " << trial << " voxel " << k;
    inside_winding_walk(
        exact_parts,
        [](int64_t, int64_t) {
          return InsideFar{0.0, 0.0, 0.0};
        },
        exact_parts, c, stop, k0 + len, set2);
    ASSERT_EQ(got, got2) << "trial " << trial;
    if (rest == 0.0 && lip == 0.0) {
      EXPECT_LE(exact_calls, 2) << trial;  // (only voxels at the threshold)
    }
  }
  // One crossing in a long span: about log2(length) evaluations, not one per voxel.
  for (int64_t len : {2, 3, 100, 4096, 65536}) {
    int evals = 0;
    int64_t first = -1, want = -1;
    auto parts = [&](int64_t k) { return InsideParts{4 * kPi * double(k) / double(len), -kPi}; };
    for (int64_t k = len - 1; k >= 0 && parts(k).pos + parts(k).neg >= 2 * kPi; --k) want = k;  // about 3 len / 4
    inside_winding_walk(
        [&](int64_t k) {
          ++evals;
          return parts(k);
        },
        [&](int64_t, int64_t) {
          return InsideFar{0.0, 0.0, 0.0};
        },
        [&](int64_t k) { return parts(k); }, 0, 0, len, [&](int64_t a, int64_t) { first = first < 0 ? a : first; });
    EXPECT_EQ(first, want) << len;
    EXPECT_LE(evals, int(std::log2(double(len))) + 4) << len;
  }
}

// Meshes whose boundaries take every path through build_inside_tree: many small loops (open tubes),
// one long loop (a sheet: pieces of pieces), holes meeting at vertices (chains that end), edges of
// multiplicity 2 (loose), a triangle soup, and the test cases' open meshes.
Mesh sheet(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> h(-0.05f, 0.05f);
  Mesh m;
  for (int y = 0; y <= n; ++y)
    for (int x = 0; x <= n; ++x)
      m.positions.push_back(
          {float(x) / float(n) - 0.5f, float(y) / float(n) - 0.5f, 0.3f * float(x * x) / float(n * n) + h(rng)});
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const uint32_t a = uint32_t(y * (n + 1) + x), b = a + 1, c = a + uint32_t(n + 1), d = c + 1;
      m.indices.insert(m.indices.end(), {a, b, d, a, d, c});
    }
  return m;
}
// `count` separate triangles, each within `spread` of a random point of [-1, 1]^3 (seed `seed`).
Mesh random_soup(uint32_t count, float spread, uint64_t seed) {
  Mesh soup;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (uint32_t t = 0; t < count; ++t) {
    const Vec3f a{u(rng), u(rng), u(rng)};
    for (int k = 0; k < 3; ++k)
      soup.positions.push_back({a.x + spread * u(rng), a.y + spread * u(rng), a.z + spread * u(rng)});
    soup.indices.insert(soup.indices.end(), {3 * t, 3 * t + 1, 3 * t + 2});
  }
  return soup;
}

std::vector<Case> boundary_cases() {
  std::vector<Case> c;
  c.push_back({"open tubes", make_tubes(60, 6, 6, 3, 0.06, 0.4), false});
  c.push_back({"sheet", rotated(sheet(40, 1), 2), false});
  Mesh bowtie = sheet(6, 4);  // every other triangle of a row gone: holes meeting at vertices
  bowtie.indices.erase(bowtie.indices.begin() + 3 * 12, bowtie.indices.begin() + 3 * 13);
  bowtie.indices.erase(bowtie.indices.begin() + 3 * 14, bowtie.indices.begin() + 3 * 16);
  bowtie.indices.erase(bowtie.indices.begin() + 3 * 17, bowtie.indices.begin() + 3 * 18);
  c.push_back({"holes meeting at vertices", bowtie, false});
  const Mesh strip = sheet(5, 5);
  c.push_back({"a doubled sheet", append(strip, strip), false});
  c.push_back({"triangle soup", random_soup(150, 0.2f, 6), false});
  for (Case& x : cases())
    if (!x.closed) c.push_back(std::move(x));
  return c;
}

TEST(Inside, TheWindingWalkOnPieceTreesGivesTheGridOfExactSums) {
  // The walk on the trees (with any patience) and the walk with every edge summed exactly decide
  // every voxel alike.
  for (const Case& c : boundary_cases()) {
    uint64_t active = 0;
    for (int res : {24, 61}) {
      const GridSpec spec = grid_for(c.mesh, res);
      const std::vector<Vec3f> g = to_grid_space(c.mesh, spec);
      InsideMesh m = prepare_inside(c.mesh, g, spec, 2, true);
      const InsideRange range = inside_range(c.mesh, spec);
      m.tree_min_edges = SIZE_MAX;
      const SparseGrid exact = inside_grid_cpu(m, InsideMethod::kWinding, range);
      m.tree_min_edges = 0;
      const SparseGrid trees = inside_grid_cpu(m, InsideMethod::kWinding, range);
      active += exact.active_voxels();
      ASSERT_EQ(exact.keys, trees.keys) << c.name << " r" << res;
      ASSERT_EQ(exact.checksum(), trees.checksum()) << c.name << " r" << res;
    }
    EXPECT_GT(active, 0u) << c.name;
  }
}

TEST(Inside, PieceTreesBoundTheBoundaryTermOnEveryKindOfBoundary) {
  // The pieces' exact terms plus the loose edges are the boundary's B; and over any range of any
  // column the near parts at its ends with the far part's bounds hold B at every voxel of the range.
  std::mt19937 rng(9);
  for (const Case& c : boundary_cases())
    for (int res : {24, 61}) {
      const GridSpec spec = grid_for(c.mesh, res);
      const std::vector<Vec3f> g = to_grid_space(c.mesh, spec);
      const InsideMesh m = prepare_inside(c.mesh, g, spec, 2, true, false);
      ASSERT_FALSE(m.boundary.empty()) << c.name;
      const InsideTree tree = build_inside_tree(m.boundary, m.scale);
      // One tree: node 0 its root; the chunks its subtrees, in order, holding every piece (none where
      // every edge is loose: the doubled sheet's).
      ASSERT_EQ(tree.nodes.empty(), c.name == "a doubled sheet") << c.name;
      ASSERT_EQ(tree.chunks.empty(), tree.nodes.empty()) << c.name;
      if (!tree.nodes.empty()) {
        ASSERT_EQ(tree.nodes[0].skip, tree.nodes.size()) << c.name;
        ASSERT_EQ(tree.chunks.back(), tree.nodes.size()) << c.name;
      }
      size_t chunk_edges = 0;
      for (size_t q = 0; q + 1 < tree.chunks.size(); ++q) {
        ASSERT_LE(tree.nodes[tree.chunks[q]].skip, tree.chunks[q + 1]) << c.name;
        for (uint32_t x = tree.chunks[q]; x < tree.nodes[tree.chunks[q]].skip; ++x) chunk_edges += tree.nodes[x].count;
      }
      ASSERT_EQ(chunk_edges, tree.edges.size()) << c.name;
      // The cut from the chunks (the GPU's lanes) and from the root (the CPU), each at every voxel.
      const InsideTreeView views[2] = {inside_tree_view(tree), inside_tree_whole(tree)};
      const InsideTreeView& view = views[res == 24 ? 0 : 1];
      size_t far_ranges = 0, far_points = 0;
      double max_rest = 0.0;  // the rests summed over a column's cut at 3 radii, the most
      for (int trial = 0; trial < 60; ++trial) {
        const int32_t i = int32_t(rng() % uint32_t(m.dims.x)), j = int32_t(rng() % uint32_t(m.dims.y));
        const InsideColumn col = inside_column_at(i, j, m.scale);
        // Every piece's and loose edge's exact term summed: B.
        const int64_t k = int64_t(rng() % uint32_t(m.dims.z));
        double all = 0, mag = 0;
        for (const InsideEdge& e : tree.edges) {
          const double o = inside_edge_solid_angle(e, col.pu, col.pv, double(k) + 0.5, m.scale);
          all += o;
          mag += std::fabs(o);
        }
        for (const InsideEdge& e : tree.loose)
          all += inside_edge_solid_angle(e, col.pu, col.pv, double(k) + 0.5, m.scale);
        const InsideParts x = inside_boundary_parts(m.boundary.data(), m.boundary.size(), col.pu, col.pv, k, m.scale);
        ASSERT_NEAR(all, x.pos + x.neg, 1e-9 * (1 + mag)) << c.name << " r" << res;
        // A range and its bounds, from the cut at 3 radii and at kInsideWideRadii (the walk takes the
        // wider one where the far balls' rests add up to more than kInsideWideRest).
        // (short ranges, and every third one to the column's end: the far change's cap)
        const int64_t a = int64_t(rng() % uint32_t(m.dims.z)),
                      b = trial % 3 == 2 ? m.dims.z - 1 : std::min<int64_t>(m.dims.z - 1, a + int64_t(rng() % 12));
        for (const double radii : {kInsideFarRadii, kInsideWideRadii}) {
          std::vector<uint32_t> far;  // the column's cut, as the walk takes it
          std::vector<InsideEdge> near;
          inside_cut_lists(view, col, far, near, radii);
          const double rest = inside_listed_rest(tree.nodes.data(), far.data(), uint32_t(far.size()), 0, 1, col);
          if (radii == kInsideFarRadii) max_rest = std::max(max_rest, rest);
          auto near_at = [&](int64_t q) {
            return inside_boundary_parts(near.data(), near.size(), col.pu, col.pv, q, m.scale);
          };
          const InsideParts na = near_at(a), nb = near_at(b);
          const InsideFar f =
              inside_listed_far(tree.nodes.data(), far.data(), uint32_t(far.size()), 0, 1, col, a, b, m.scale);
          far_ranges += f.mag > 0;
          const InsideFar fc = inside_listed_far(tree.nodes.data(), far.data(), uint32_t(far.size()), 0, 1, col, 0,
                                                 m.dims.z - 1, m.scale, true);
          for (int64_t q = a; q <= b; ++q) {
            const InsideParts e =
                inside_boundary_parts(m.boundary.data(), m.boundary.size(), col.pu, col.pv, q, m.scale);
            const double bq = e.pos + e.neg, tol = 1e-9 * (1 + (e.pos - e.neg));
            ASSERT_GE(bq, na.pos + nb.neg + f.d - f.r - tol)
                << c.name << " r" << res << " column " << i << "," << j << " voxel " << q;
            ASSERT_LE(bq, nb.pos + na.neg + f.d + f.r + tol)
                << c.name << " r" << res << " column " << i << "," << j << " voxel " << q;
            // The far balls' dipole terms at the voxel miss their edges' exact terms by at most the
            // rests summed along the column (inside_listed_rest).
            const InsideParts nq = near_at(q);
            const InsideFar fq =
                inside_listed_far(tree.nodes.data(), far.data(), uint32_t(far.size()), 0, 1, col, q, q, m.scale);
            ASSERT_LE(fq.r, rest * (1 + 1e-12)) << c.name << " r" << res << " column " << i << "," << j;
            ASSERT_LE(std::fabs(bq - (nq.pos + nq.neg + fq.d)), rest + tol)
                << c.name << " r" << res << " column " << i << "," << j << " voxel " << q << " radii " << radii;
            // The far part over the whole column (the walk's coarse one) holds at the voxel too.
            ASSERT_LE(std::fabs(bq - (nq.pos + nq.neg + fc.d)), fc.r + tol)
                << c.name << " r" << res << " column " << i << "," << j << " voxel " << q << " radii " << radii;
            // The column's far balls seen from the voxel alone (inside_tree_point), at every level.
            for (int level = 0; level < kInsidePointLevels; ++level) {
              const InsideFar p = inside_tree_point(view, far.data(), uint32_t(far.size()), 0, 1, col, q, m.scale,
                                                    inside_point_rest(level));
              far_points += p.r > 0;
              ASSERT_GE(bq, nq.pos + nq.neg + p.d - p.r - tol)
                  << c.name << " r" << res << " column " << i << "," << j << " voxel " << q << " level " << level;
              ASSERT_LE(bq, nq.pos + nq.neg + p.d + p.r + tol)
                  << c.name << " r" << res << " column " << i << "," << j << " voxel " << q << " level " << level;
            }
          }
        }
      }
      // (the walk's wider cut is taken on the open tubes' columns: TheWindingWalkOnPieceTrees... covers it)
      if (c.name == "open tubes") {
        EXPECT_GT(max_rest, kInsideWideRest) << c.name << " r" << res;
      }
      if (c.name == "open tubes" || c.name == "sheet") {
        EXPECT_GT(far_ranges, 0u) << c.name;
        EXPECT_GT(far_points, 0u) << c.name;
      }
    }
}

TEST(Inside, ParityAndVoteEqualRayParityOnClosedMeshes) {
  for (const Case& c : cases()) {
    if (!c.closed) continue;
    const GridSpec spec = grid_for(c.mesh, 15);
    const D3 dirs[3] = {{0.0123, -0.0311, -1}, {-1, 0.0231, 0.0173}, {0.0217, -1, -0.0119}};
    expect_inside(
        c.mesh, spec, InsideMethod::kParity, [&](D3 p) { return int(ray_parity(c.mesh, p, dirs[0])); },
        c.name + " parity");
    expect_inside(
        c.mesh, spec, InsideMethod::kVote,
        [&](D3 p) {
          const int n =
              ray_parity(c.mesh, p, dirs[0]) + ray_parity(c.mesh, p, dirs[1]) + ray_parity(c.mesh, p, dirs[2]);
          return int(n >= 2);
        },
        c.name + " vote");
  }
}

TEST(Inside, OpenMeshesLeakUnderParityButNotUnderWinding) {
  // A box without its top: parity fills the columns above the bottom face to the grid's top,
  // winding fills the box only (and nothing above it).
  const Mesh box = make_box_mesh(0, 0, 0, 1, 1, 1);
  Mesh open_box = box;
  open_box.indices.clear();
  for (size_t t = 0; t < box.num_triangles(); ++t)
    if (!(box.vertex(t, 0).z == 1 && box.vertex(t, 1).z == 1 && box.vertex(t, 2).z == 1))
      open_box.indices.insert(open_box.indices.end(), box.indices.begin() + 3 * t, box.indices.begin() + 3 * t + 3);
  ASSERT_EQ(open_box.num_triangles(), 10u);
  const GridSpec spec = grid_for(open_box, 12, 3);
  const SparseGrid parity = inside_cpu(open_box, spec, InsideMethod::kParity);
  const SparseGrid winding = inside_cpu(open_box, spec, InsideMethod::kWinding);
  const int32_t top = spec.dims.z - 1, mid = spec.dims.x / 2;
  EXPECT_TRUE(grid_has(parity, mid, mid, top));
  EXPECT_FALSE(grid_has(winding, mid, mid, top));
  EXPECT_TRUE(grid_has(winding, mid, mid, mid));
}

// An open box (no face at y = top) from y = 1 to top, x and z from 1 to 7, in unit voxels of the
// grid [0, 8]^3, whose rim lies on the bounds' top face just under a row of voxel centres (1/4096 of
// a voxel: the same column once snapped); `flip` turns its faces inside out.
Mesh rim_on_bounds_box(bool flip) {
  const float top = 5.5f - 1.0f / 4096.0f;
  const Mesh box = make_box_mesh(1, 1, 1, 7, top, 7);
  Mesh open = box;
  open.indices.clear();
  for (size_t t = 0; t < box.num_triangles(); ++t) {
    if (box.vertex(t, 0).y == top && box.vertex(t, 1).y == top && box.vertex(t, 2).y == top) continue;
    const uint32_t* tri = &box.indices[3 * t];
    const uint32_t order[3] = {tri[0], flip ? tri[2] : tri[1], flip ? tri[1] : tri[2]};
    open.indices.insert(open.indices.end(), order, order + 3);
  }
  return open;
}
GridSpec unit_grid_8(const Mesh& m) {
  GridOptions go;
  go.voxel_size = Vec3d{1, 1, 1};
  go.bbox = Bounds{{0, 0, 0}, {8, 8, 8}};
  return make_grid_spec(m.bounds(), go);
}

// The winding test sets no voxel outside the inside range (inside_range: centres within the mesh's
// bounds), as on the GPU, which evaluates only the range's columns: the row of centres just above
// rim_on_bounds_box's rim stays empty in either orientation. (Those columns lie in the range's last
// 8x8 tile; the CPU once evaluated them, and its boundary term rounded to w >= 0.5 there, here on 36
// voxels, on Sponza's columns at 64^3 and 128^3.)
TEST(Inside, WindingSetsNothingOutsideTheInsideRange) {
  for (int flip = 0; flip < 2; ++flip) {
    const Mesh open = rim_on_bounds_box(flip);
    ASSERT_EQ(open.num_triangles(), 10u);
    const GridSpec spec = unit_grid_8(open);
    const InsideRange range = inside_range(open, spec);
    ASSERT_EQ(range.hi[1], 5);  // the row of centres y = 5.5 is outside
    SparseGrid winding = inside_cpu(open, spec, InsideMethod::kWinding);
    winding.expand_runs();
    size_t outside = 0, in = 0;
    winding.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
      const bool r = i >= range.lo[0] && i < range.hi[0] && j >= range.lo[1] && j < range.hi[1] && k >= range.lo[2] &&
                     k < range.hi[2];
      ++(r ? in : outside);
    });
    EXPECT_EQ(outside, 0u) << "flip " << flip;
    if (!flip) {
      EXPECT_GT(in, 100u);  // (the box's inside; inverted, it has none)
    }
  }
}

TEST(Inside, ACubeAtEightCubedIsEightByEightByEight) {
  Mesh cube = make_box_mesh(0, 0, 0, 1, 1, 1);
  CpuVoxelizer cpu;
  cpu.set_mesh(cube);
  GridOptions o;
  o.resolution = 8;
  Bounds b;
  b.extend({0, 0, 0});
  b.extend({1, 1, 1});
  const GridSpec spec = make_grid_spec(b, o);
  for (InsideMethod m : {InsideMethod::kParity, InsideMethod::kWinding, InsideMethod::kVote}) {
    VoxelizeOptions vo;
    vo.inside = m;
    for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
      vo.mode = mode;
      const SparseGrid g = cpu.voxelize(spec, vo, {make_target_spec(Target::kSolid)})[0];
      EXPECT_EQ(g.active_voxels(), 512u) << inside_name(m) << " " << mode_name(mode);
      EXPECT_EQ(inside_cpu(cube, spec, m).active_voxels(), 512u) << inside_name(m);
    }
  }
}

// A solid's interior is held as runs of full bricks (OpenVDB tiles in .vdb), the same voxels as
// its bricks written out, on every inside method; memory follows the surface, not the volume.
TEST(Inside, InteriorsAreRunsOfFullBricksAndTilesInVdb) {
  GridSpec spec;
  spec.dims = {70, 64, 61};
  const Mesh box = make_box_mesh(3, 2, 5, 66, 60, 58);  // faces on voxel boundaries
  const auto in_box = [](int32_t i, int32_t j, int32_t k) {
    return i >= 3 && i < 66 && j >= 2 && j < 60 && k >= 5 && k < 58;
  };
  test::TempDir dir;
  for (InsideMethod m : {InsideMethod::kParity, InsideMethod::kWinding, InsideMethod::kVote}) {
    SparseGrid g = inside_cpu(box, spec, m);
    g.validate();
    ASSERT_FALSE(g.runs.empty()) << inside_name(m);
    for (const BrickMask& mk : g.masks) ASSERT_FALSE(brick_full(mk)) << inside_name(m);
    EXPECT_EQ(g.active_voxels(), uint64_t(63 * 58 * 53)) << inside_name(m);
    // Bricks 1..7 along x (voxels 8..63), 1..6 along y (8..55), 1..6 along z (8..55): all full.
    EXPECT_EQ(g.run_bricks(), uint64_t(7 * 6 * 6)) << inside_name(m);
    SparseGrid bricks = g;
    bricks.expand_runs();
    bricks.validate();
    EXPECT_TRUE(bricks.runs.empty());
    EXPECT_EQ(bricks.checksum(), g.checksum()) << inside_name(m);
    EXPECT_EQ(bricks.active_voxels(), g.active_voxels());
    for (int32_t i = 0; i < spec.dims.x; ++i)
      for (int32_t j = 0; j < spec.dims.y; ++j)
        for (int32_t k = 0; k < spec.dims.z; ++k) {
          ASSERT_EQ(grid_has(g, i, j, k), in_box(i, j, k)) << inside_name(m) << " " << i << "," << j << "," << k;
          ASSERT_EQ(grid_has(bricks, i, j, k), in_box(i, j, k)) << inside_name(m);
        }
    SparseGrid again = bricks;
    again.make_runs();
    EXPECT_EQ(again.keys, g.keys);
    ASSERT_EQ(again.runs.size(), g.runs.size());
    for (size_t r = 0; r < g.runs.size(); ++r) {
      EXPECT_EQ(again.runs[r].key, g.runs[r].key);
      EXPECT_EQ(again.runs[r].count, g.runs[r].count);
    }
    // .vdb: the runs as active tiles, read back as the same runs; the dense formats take the voxels.
    g.name = "solid";
    const std::string vdb = dir.file("solid.vdb");
    write_grid(g, vdb, OutputFormat::kVdb, WriteOptions{});
    openvdb::initialize();
    openvdb::io::File f(vdb);
    f.open();
    const auto mask = openvdb::gridPtrCast<openvdb::MaskGrid>(f.readGrid("solid"));
    f.close();
    ASSERT_TRUE(mask);
    EXPECT_EQ(mask->activeVoxelCount(), openvdb::Index64(g.active_voxels()));
    EXPECT_EQ(mask->tree().activeTileCount(), openvdb::Index64(g.run_bricks()));
    EXPECT_EQ(mask->tree().leafCount(), openvdb::Index32(g.keys.size()));
    const SparseGrid back = read_vdb(vdb, "solid");
    back.validate();
    EXPECT_EQ(back.checksum(), g.checksum());
    EXPECT_EQ(back.keys, g.keys);
    EXPECT_EQ(back.runs.size(), g.runs.size());
    const std::string npy = dir.file("solid.npy");
    write_grid(g, npy, OutputFormat::kNpy, WriteOptions{});
    EXPECT_EQ(read_grid_file(npy).grids.at(0).checksum(), g.checksum());
  }
}

// Runs and masks: the canonical form, checksums, unions and signs whatever holds the full bricks.
TEST(SparseGridRuns, CanonicalFormChecksumUnionAndSign) {
  std::mt19937_64 rng(7);
  GridSpec spec;
  spec.dims = {40, 48, 200};
  SparseGrid a, b;
  a.spec = b.spec = spec;
  const BrickMask all = full_brick_mask();
  for (int32_t bx = 0; bx < 5; ++bx)
    for (int32_t by = 0; by < 6; ++by)
      for (int32_t bz = 0; bz < 25; ++bz) {
        const uint64_t r = rng();
        if (r % 3 == 0) continue;
        BrickMask m{};
        if (r % 3 == 1) {
          m = all;
        } else {
          for (uint64_t& w : m.w) w = rng();
          m.w[0] |= 1;
        }
        (r & 64 ? a : b).keys.push_back(brick_key(bx, by, bz));
        (r & 64 ? a : b).masks.push_back(m);
      }
  const uint64_t sum_a = a.checksum(), voxels_a = a.active_voxels();
  SparseGrid ra = a;
  ra.make_runs();
  ra.validate();
  EXPECT_FALSE(ra.runs.empty());
  EXPECT_EQ(ra.checksum(), sum_a);
  EXPECT_EQ(ra.active_voxels(), voxels_a);
  SparseGrid back = ra;
  back.expand_runs();
  EXPECT_EQ(back.keys, a.keys);
  EXPECT_EQ(back.checksum(), sum_a);
  // A different grid has a different checksum in either form.
  SparseGrid rb = b;
  rb.make_runs();
  EXPECT_NE(rb.checksum(), sum_a);
  // Union: the same voxels as the union of the written-out bricks.
  SparseGrid u1 = combine_masks({&a, &b}, 1);
  u1.spec = spec;
  SparseGrid u2 = combine_masks({&ra, &rb}, 1);
  u2.spec = spec;
  u2.validate();
  EXPECT_EQ(u1.checksum(), u2.checksum());
  EXPECT_EQ(u1.active_voxels(), u2.active_voxels());
  // A union large enough to be merged in chunks on several cores, against a plain map.
  {
    GridSpec wide;
    wide.dims = {512, 512, 512};
    SparseGrid g[3];
    std::map<uint64_t, BrickMask> expect;
    for (int n = 0; n < 3; ++n) {
      g[n].spec = wide;
      std::vector<uint64_t> keys;
      for (int i = 0; i < 40000; ++i) keys.push_back(brick_key(int32_t(rng() % 64), int32_t(rng() % 64), int32_t(rng() % 64)));
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (uint64_t k : keys) {
        BrickMask m = (rng() % 4 == 0) ? all : BrickMask{};
        if (!brick_full(m))
          for (int w = 0; w < 8; ++w) m.w[w] = rng() & rng();
        m.w[3] |= 2;
        g[n].keys.push_back(k);
        g[n].masks.push_back(m);
        for (int w = 0; w < 8; ++w) expect[k].w[w] |= m.w[w];
      }
      g[n].make_runs();
    }
    SparseGrid want;
    want.spec = wide;
    for (const auto& [k, m] : expect) {
      want.keys.push_back(k);
      want.masks.push_back(m);
    }
    SparseGrid got = combine_masks({&g[0], &g[1], &g[2]}, 1);
    got.spec = wide;
    got.validate();
    EXPECT_EQ(got.checksum(), want.checksum());
    EXPECT_EQ(got.active_voxels(), want.active_voxels());
  }
  // A brick inside a run breaks the invariants.
  SparseGrid bad = ra;
  bad.keys.insert(bad.keys.begin(), bad.runs[0].key);
  bad.masks.insert(bad.masks.begin(), all);
  std::sort(bad.keys.begin(), bad.keys.end());
  EXPECT_THROW(bad.validate(), Error);
  // The sign of a band follows the runs as it follows the masks.
  SparseGrid band;
  band.spec = spec;
  band.value_type = ValueType::kFloat32;
  for (int32_t bz = 0; bz < 25; ++bz) {
    band.keys.push_back(brick_key(2, 3, bz));
    band.masks.push_back(all);
  }
  band.index_values();
  std::fill(band.fvalues.begin(), band.fvalues.end(), 1.0f);
  SparseGrid s1 = band, s2 = band;
  apply_sign(s1, a);
  apply_sign(s2, ra);
  EXPECT_EQ(s1.fvalues, s2.fvalues);
}

// Writing out an interior larger than half the machine's memory is refused before anything is
// allocated or written; .vdb keeps such a grid as tiles.
TEST(SparseGridRuns, HugeInteriorsAreRefusedOutsideVdb) {
  const uint64_t memory = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGE_SIZE));
  SparseGrid g;
  g.spec.dims = {65536, 65536, 65536};
  g.name = "solid";
  const uint64_t columns = memory / 2 / (72 * 8192) + 1;
  for (uint64_t c = 0; c < columns; ++c) g.runs.push_back({brick_key(int32_t(c / 8192), int32_t(c % 8192), 0), 8192});
  g.validate();
  test::TempDir dir;
  try {
    write_grid(g, dir.file("huge.ply"), OutputFormat::kPly, WriteOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResource);
    EXPECT_NE(std::string(e.what()).find(".vdb"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(test::file_exists(dir.file("huge.ply")));
}

// A value grid holds its active voxels' values alone: indexed from the masks (value_begin,
// value_index), expanded to bricks of 512 (brick_values, expand_brick_values from
// all 512 values), compacted from them (compact_brick_values), and built from voxels in any order
// (SparseGridBuilder) to the same values and checksum; for 1 and 3 channels, empty to full bricks.
TEST(SparseGridValues, ActiveValuesAreIndexedByTheMasks) {
  std::mt19937 rng(7);
  for (ValueType type : {ValueType::kInt32, ValueType::kVec3f}) {
    const int channels = value_channels(type);
    const size_t n = 3000;
    SparseGrid g;
    g.spec.dims = {8 * 50, 8 * 60, 8};
    g.value_type = type;
    for (size_t b = 0; b < n; ++b) {
      g.keys.push_back(brick_key(int32_t(b / 60), int32_t(b % 60), 0));
      BrickMask m{};
      const int kind = int(b % 5);  // one voxel, sparse, half, dense, full
      for (int off = 0; off < kBrickVoxels; ++off) {
        const bool on = kind == 4 || (kind == 1 && rng() % 17 == 0) || (kind == 2 && rng() % 2) ||
                        (kind == 3 && rng() % 8 != 0) || (kind == 0 && off == int(b % 512));
        if (on) m.set(off);
      }
      if (!m.any()) m.set(3);
      g.masks.push_back(m);
    }
    g.index_values();
    ASSERT_EQ(g.value_begin.size(), n + 1);
    std::vector<uint32_t> want(n * kBrickVoxels * channels, 0), garbage(want.size());
    std::vector<uint32_t> bits;
    SparseGridBuilder builder(g.spec, type, "v", "test");
    std::vector<std::pair<Int3, std::vector<uint32_t>>> voxels;
    for (size_t b = 0; b < n; ++b)
      for (int off = 0; off < kBrickVoxels; ++off) {
        for (int c = 0; c < channels; ++c) garbage[(b * kBrickVoxels + off) * channels + c] = uint32_t(rng());
        if (!g.masks[b].test(off)) continue;
        ASSERT_EQ(g.value_index(b, off), bits.size() / size_t(channels)) << b << " " << off;
        std::vector<uint32_t> v(static_cast<size_t>(channels), 0u);
        for (int c = 0; c < channels; ++c) {
          v[c] = uint32_t(rng() % 1000) + 1;
          want[(b * kBrickVoxels + off) * channels + c] = garbage[(b * kBrickVoxels + off) * channels + c] = v[c];
          bits.push_back(v[c]);
        }
        const Int3 bc = brick_coord(g.keys[b]);
        voxels.push_back({{bc.x * 8 + (off >> 6), bc.y * 8 + (off >> 3 & 7), bc.z * 8 + (off & 7)}, v});
      }
    ASSERT_EQ(g.value_begin[n] * uint64_t(channels), bits.size());
    if (type == ValueType::kInt32)
      std::memcpy(g.ivalues.data(), bits.data(), bits.size() * 4);
    else
      std::memcpy(g.fvalues.data(), bits.data(), bits.size() * 4);
    EXPECT_NO_THROW(g.validate());
    // Expanded: brick by brick, and a .vdb leaf stored with all 512 values.
    std::vector<uint32_t> brick(size_t(kBrickVoxels) * channels);
    for (size_t b = 0; b < n; ++b) {
      std::fill(brick.begin(), brick.end(), 0xdeadbeefu);
      g.brick_values(b, brick.data());
      ASSERT_TRUE(std::equal(brick.begin(), brick.end(), want.begin() + std::ptrdiff_t(b * brick.size()))) << b;
      std::vector<uint32_t> kept(brick.size());  // (a .vdb leaf stored whole: its active values kept)
      compact_brick_values(g.masks[b], channels, garbage.data() + b * brick.size(), kept.data());
      expand_brick_values(g.masks[b], channels, kept.data(), brick.data());
      ASSERT_TRUE(std::equal(brick.begin(), brick.end(), want.begin() + std::ptrdiff_t(b * brick.size()))) << b;
      const int off = int(rng() % 512);
      for (int c = 0; c < channels; ++c) {
        const uint32_t w = want[(b * kBrickVoxels + off) * channels + c];
        float f;
        std::memcpy(&f, &w, 4);
        ASSERT_EQ(g.value(b, off, c), !g.masks[b].test(off) ? 0.0 : type == ValueType::kInt32 ? double(w) : double(f));
      }
    }
    // Compacted from bricks whose inactive voxels hold anything.
    SparseGrid h = g;
    h.index_values();
    char* hv = type == ValueType::kInt32 ? reinterpret_cast<char*>(h.ivalues.data())
                                         : reinterpret_cast<char*>(h.fvalues.data());
    for (size_t b = 0; b < n; ++b)
      ASSERT_EQ(compact_brick_values(g.masks[b], channels, garbage.data() + b * brick.size(),
                                     hv + 4 * h.value_index(b, 0) * size_t(channels)),
                size_t(g.masks[b].count()) * size_t(channels));
    ASSERT_EQ(bits.size() * 4, (h.ivalues.size() + h.fvalues.size()) * 4);
    EXPECT_EQ(std::memcmp(hv, bits.data(), bits.size() * 4), 0);
    // Built from the voxels in random order.
    std::shuffle(voxels.begin(), voxels.end(), rng);
    for (const auto& [p, v] : voxels) builder.add(p.x, p.y, p.z, v.data());
    const SparseGrid built = builder.build();
    EXPECT_EQ(built.keys, g.keys);
    EXPECT_EQ(built.value_begin, g.value_begin);
    EXPECT_EQ(built.ivalues, g.ivalues);
    ASSERT_EQ(built.fvalues.size(), g.fvalues.size());
    if (!g.fvalues.empty()) {
      EXPECT_EQ(std::memcmp(built.fvalues.data(), g.fvalues.data(), g.fvalues.size() * 4), 0);
    }
    EXPECT_EQ(built.checksum(), g.checksum());
    // A value changed changes the checksum.
    if (type == ValueType::kInt32)
      h.ivalues[h.ivalues.size() / 2] += 1;
    else
      h.fvalues[h.fvalues.size() / 2] += 1.0f;
    EXPECT_NE(h.checksum(), g.checksum());
  }
}

// A 1024^3 solid of a box: the interior is 2M full bricks held in ~16k runs, and the union with
// the surface raster keeps that form.
TEST(Inside, ALargeSolidIsHeldByItsSurface) {
  CpuVoxelizer cpu;
  const Mesh box = make_box_mesh(0.25f, 0.25f, 0.25f, 1000.25f, 1000.25f, 1000.25f);
  cpu.set_mesh(box);
  GridSpec spec;
  spec.dims = {1024, 1024, 1024};
  VoxelizeOptions vo;
  vo.inside = InsideMethod::kParity;
  const SparseGrid g = cpu.voxelize(spec, vo, {make_target_spec(Target::kSolid)})[0];
  g.validate();
  // Centres 0.5 .. 999.5 inside; the surface voxels add the layer at 1000.
  EXPECT_EQ(g.active_voxels(), uint64_t(1001) * 1001 * 1001);
  EXPECT_LT(g.keys.size(), size_t(6 * 126 * 126 + 1000));  // the six faces' bricks
  EXPECT_EQ(g.run_bricks(), uint64_t(125) * 125 * 125);
  EXPECT_EQ(g.runs.size(), size_t(125 * 125));
}

TEST(Inside, AGridAlignedBoxFillsExactly) {
  // Faces on voxel boundaries: exactly the voxels whose centres lie in the box.
  GridSpec spec;
  spec.dims = {12, 11, 10};
  for (InsideMethod m : {InsideMethod::kParity, InsideMethod::kWinding, InsideMethod::kVote}) {
    const SparseGrid g = inside_cpu(make_box_mesh(2, 3, 1, 9, 7, 8), spec, m);
    EXPECT_EQ(g.active_voxels(), uint64_t(7 * 4 * 7)) << inside_name(m);
    for (int32_t i = 0; i < 12; ++i)
      for (int32_t j = 0; j < 11; ++j)
        for (int32_t k = 0; k < 10; ++k)
          ASSERT_EQ(grid_has(g, i, j, k), i >= 2 && i < 9 && j >= 3 && j < 7 && k >= 1 && k < 8) << inside_name(m);
  }
}

TEST(Inside, RotatedClosedMeshesKeepTheirVolumeWithinTheSurfaceBand) {
  const Mesh sphere = make_uv_sphere(0, 0, 0, 1, 24, 48);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Mesh m = rotated(sphere, seed);
    const GridSpec spec = grid_for(m, 40);
    CpuVoxelizer cpu;
    cpu.set_mesh(m);
    VoxelizeOptions vo;
    const auto grids = cpu.voxelize(spec, vo, {make_target_spec(Target::kSolid), make_target_spec(Target::kBinary)});
    const SparseGrid inside = inside_cpu(m, spec, InsideMethod::kWinding);
    const double voxel = spec.voxel_size.x * spec.voxel_size.y * spec.voxel_size.z;
    // The polygon's volume (exact, divergence theorem) against the voxel count of the inside test.
    double volume = 0;
    for (size_t t = 0; t < m.num_triangles(); ++t) volume += dot(vtx(m, t, 0), crs(vtx(m, t, 1), vtx(m, t, 2))) / 6;
    const double counted = double(inside.active_voxels()) * voxel;
    const double band = double(grids[1].active_voxels()) * voxel;
    EXPECT_LT(std::fabs(counted - volume), band) << seed;
    // The solid is the surface plus the inside.
    SparseGrid both = combine_masks({&grids[1], &inside}, 1);
    both.spec = spec;
    EXPECT_EQ(grids[0].checksum(), both.checksum());
  }
}

TEST(Inside, SdfIsTheBruteForceDistanceSignedByTheWindingNumber) {
  for (const Case& c : cases()) {
    const GridSpec spec = grid_for(c.mesh, 14, 4);
    CpuVoxelizer cpu;
    cpu.set_mesh(c.mesh);
    VoxelizeOptions vo;
    vo.band = 2;
    const SparseGrid sdf = cpu.voxelize(spec, vo, {make_target_spec(Target::kSdf)})[0];
    sdf.validate();
    ASSERT_TRUE(sdf.level_set);
    const double width = 2 * spec.voxel_size.x;
    EXPECT_FLOAT_EQ(sdf.background, float(width));
    size_t active = 0;
    for (int32_t i = 0; i < spec.dims.x; ++i)
      for (int32_t j = 0; j < spec.dims.y; ++j)
        for (int32_t k = 0; k < spec.dims.z; ++k) {
          const Vec3d cc = spec.voxel_center(i, j, k);
          const D3 p{cc.x, cc.y, cc.z};
          double d = 1e300;
          for (size_t t = 0; t < c.mesh.num_triangles(); ++t) d = std::min(d, tri_distance(c.mesh, t, p));
          if (std::fabs(d - width) < 1e-5 * width) continue;
          ASSERT_EQ(grid_has(sdf, i, j, k), d < width) << c.name << " " << i << "," << j << "," << k << " d=" << d;
          if (d >= width) continue;
          ++active;
          const float v = grid_value(sdf, i, j, k);
          EXPECT_NEAR(std::fabs(v), d, 1e-5 * spec.voxel_size.x + 2e-6 * d) << c.name;
          const double w = gwn(c.mesh, p);
          if (std::fabs(w - 0.5) > 1e-7 && d > 1e-3 * spec.voxel_size.x) {
            ASSERT_EQ(v < 0, w >= 0.5) << c.name << " w=" << w << " at " << i << "," << j << "," << k << " d "
                                       << d / spec.voxel_size.x;
          }
        }
    EXPECT_GT(active, 100u) << c.name;
  }
}

// Voxel sizes of the band's tests: cubes, small, anisotropic, tiny.
const Vec3f kBandVoxelSizes[] = {{1.0f, 1.0f, 1.0f}, {0.37f, 0.37f, 0.37f}, {0.5f, 2.0f, 0.25f}, {3e-4f, 3e-4f, 3e-4f}};

// The CPU band's vectorised distances (core/vectorized.h) are voxel_distance's bits: triangles of
// every shape (ordinary, slivers, needles, collinear, one point, tiny, far from the origin) against
// voxels around them, one at a time and through band_min_voxels' padded lists; and a changed
// operation is caught (the test can fail).
TEST(Inside, BandDistancesVectorisedAreVoxelDistanceBits) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  size_t checked = 0;
  for (int t = 0; t < 6000; ++t) {
    const int kind = t % 6;
    const float scale = kind == 4 ? 1e-3f : 6.0f;
    const Vec3f centre{4.0f + 3.0f * u(rng), 4.0f + 3.0f * u(rng), 4.0f + 3.0f * u(rng)};
    const float far = t % 7 == 0 ? 30000.0f : 0.0f;  // (coordinates of large grids)
    Vec3f tri[3];
    for (Vec3f& v : tri)
      v = {centre.x + far + scale * u(rng), centre.y + scale * u(rng), centre.z + far + scale * u(rng)};
    if (kind == 1) tri[2] = {tri[0].x + 1e-4f * u(rng), tri[0].y + 1e-4f * u(rng), tri[0].z};  // sliver
    if (kind == 2) tri[2] = {0.5f * (tri[0].x + tri[1].x), 0.5f * (tri[0].y + tri[1].y), 0.5f * (tri[0].z + tri[1].z)};
    if (kind == 3) tri[1] = tri[2] = tri[0];  // one point
    if (kind == 5) tri[2] = tri[1];           // one edge
    const Vec3f vs = kBandVoxelSizes[t % 4];
    const int32_t base[3] = {int32_t(std::floor(centre.x + far)) - 4, int32_t(std::floor(centre.y)) - 4,
                             int32_t(std::floor(centre.z + far)) - 4};
    float best[kBrickVoxels], want[kBrickVoxels];
    uint16_t offsets[kBrickVoxels + kBandMinBlock];
    int n = 0;
    for (int o = 0; o < kBrickVoxels; ++o) {
      best[o] = want[o] = t % 3 == 0 ? 1e30f : 0.8f;
      if ((o * 7 + t) % 5 != 0) offsets[n++] = uint16_t(o);  // most of the brick, not all of it
    }
    for (const uint16_t last = offsets[n - 1]; n % kBandMinBlock != 0;) offsets[n++] = last;
    band_min_voxels(tri, base, offsets, n, vs, best);
    for (int q = 0; q < n; ++q) {
      const int o = offsets[q];
      const int32_t i = base[0] + (o >> 6), j = base[1] + ((o >> 3) & 7), k = base[2] + (o & 7);
      const float d = voxel_distance(tri, i, j, k, vs);
      ASSERT_EQ(float_bits(voxel_distance_select(tri, i, j, k, vs)), float_bits(d)) << "triangle " << t;
      want[o] = d < want[o] ? d : want[o];
      ++checked;
    }
    for (int o = 0; o < kBrickVoxels; ++o) ASSERT_EQ(float_bits(best[o]), float_bits(want[o])) << "triangle " << t;
  }
  EXPECT_GT(checked, 2000000u);
  // A different rounding is seen: the distance with its vertices' order rotated differs somewhere.
  size_t differ = 0;
  for (int t = 0; t < 2000 && differ == 0; ++t) {
    const Vec3f tri[3] = {{u(rng) * 5, u(rng) * 5, u(rng) * 5},
                          {u(rng) * 5, u(rng) * 5, u(rng) * 5},
                          {u(rng) * 5, u(rng) * 5, u(rng) * 5}};
    const Vec3f rot[3] = {tri[1], tri[2], tri[0]};
    for (int k = -6; k < 6; ++k)
      differ += float_bits(voxel_distance_select(rot, 0, 1, k, kBandVoxelSizes[0])) !=
                float_bits(voxel_distance(tri, 0, 1, k, kBandVoxelSizes[0]));
  }
  EXPECT_GT(differ, 0u);
}

// A row's crossed columns (inside_row_span) are exactly the columns inside_crossing crosses in the
// row: random snapped triangles (large, long and thin, with edges along a row or a column, vertices
// on column centres, degenerate), rows through and around them, ranges cut on either side.
TEST(Inside, RowSpansAreTheCrossedColumns) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> coord(-40 * 1024, 40 * 1024);
  size_t rows = 0, crossed = 0;
  for (int t = 0; t < 20000; ++t) {
    int64_t u[3], v[3];
    const float w[3] = {0.5f, 1.5f, -2.0f};
    for (int q = 0; q < 3; ++q) u[q] = coord(rng), v[q] = coord(rng);
    const int kind = t % 6;
    if (kind == 1) u[2] = u[0] + (u[1] - u[0]) / 2 + coord(rng) / 4096, v[2] = v[0] + (v[1] - v[0]) / 2;  // thin
    if (kind == 2) v[1] = v[0];                                                                           // a row edge
    if (kind == 3) u[2] = u[1];  // a column edge
    if (kind == 4)
      for (int q = 0; q < 3; ++q) u[q] = inside_column(int32_t(u[q] >> 10)), v[q] = inside_column(int32_t(v[q] >> 10));
    if (kind == 5) u[2] = u[1], v[2] = v[1];  // degenerate
    const int64_t umin = std::min({u[0], u[1], u[2]}), umax = std::max({u[0], u[1], u[2]});
    const int32_t b0 = int32_t(umin >> 10) - 2 + int32_t(rng() % 3), b1 = int32_t(umax >> 10) + 2 - int32_t(rng() % 3);
    const int32_t vlo = int32_t(std::min({v[0], v[1], v[2]}) >> 10) - 1,
                  vhi = int32_t(std::max({v[0], v[1], v[2]}) >> 10) + 1;
    for (int32_t j = vlo; j <= vhi; j += 1 + int32_t(rng() % 3)) {
      const int64_t pv = inside_column(j);
      int32_t want_lo = 1, want_hi = 0;
      for (int32_t i = b0; i <= b1; ++i) {
        double wc;
        if (inside_crossing(u, v, w, inside_column(i), pv, &wc) == 0) continue;
        if (want_lo > want_hi) want_lo = i;
        ASSERT_EQ(want_hi, i - 1 < want_lo ? want_hi : i - 1) << "not one run: triangle " << t;
        want_hi = i;
      }
      int32_t lo = 0, hi = -1;
      const bool any = inside_row_span(u, v, pv, b0, b1, &lo, &hi);
      ASSERT_EQ(any, want_lo <= want_hi) << "triangle " << t << " row " << j;
      if (any) {
        ASSERT_EQ(lo, want_lo) << "triangle " << t << " row " << j;
        ASSERT_EQ(hi, want_hi) << "triangle " << t << " row " << j;
        crossed += size_t(hi - lo + 1);
      }
      ++rows;
    }
  }
  EXPECT_GT(rows, 200000u);
  EXPECT_GT(crossed, 1000000u);
}

// The band of `band` voxels of size vs, as band_setup makes it for a grid.
BandSetup band_of(const Vec3f& vs, int band) {
  BandSetup bs;
  bs.vs = vs;
  bs.width = float(band) * std::min({vs.x, vs.y, vs.z});
  bs.reach = {bs.width / vs.x, bs.width / vs.y, bs.width / vs.z};
  return bs;
}
// A point at fraction m along the edge from a to b, moved by up to w along each axis (the third vertex
// of a long thin triangle).
template <class Rand>
Vec3f near_edge(const Vec3f& a, const Vec3f& b, float m, float w, Rand&& u) {
  const float dx = w * u(), dy = w * u(), dz = w * u();
  return {a.x + m * (b.x - a.x) + dx, a.y + m * (b.y - a.y) + dy, a.z + m * (b.z - a.z) + dz};
}

// The band's bound (band_cull) skips only voxels whose float distance is at least the width (and,
// at limit_at(T), at least T, for T from 1e-4 of the width to the width; so does the box's bound,
// band_box_culled), and whole bricks only where it skips all their voxels: triangles of every shape (ordinary, long and
// thin, slivers at the limit of the bound's use, needles, degenerate, tiny, far from the origin,
// huge), anisotropic voxels, every voxel of the bricks around them; and it does skip most of a
// long thin triangle's band box (the test can fail both ways).
TEST(Inside, BandBoundSkipsOnlyVoxelsBeyondTheWidth) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  size_t checked = 0, skipped = 0, bricks_skipped = 0, skipped_below = 0, skipped_box = 0;
  for (int t = 0; t < 3000; ++t) {
    const int kind = t % 8;
    const float scale = kind == 4 ? 1e-3f : (kind == 7 ? 400.0f : (kind == 0 && t % 16 == 8 ? 1.5f : 12.0f));
    const Vec3f centre{12.0f + 3.0f * u(rng), 12.0f + 3.0f * u(rng), 12.0f + 3.0f * u(rng)};
    const float far = t % 7 == 0 ? 30000.0f : 0.0f;
    Vec3f tri[3];
    for (Vec3f& v : tri)
      v = {centre.x + far + scale * u(rng), centre.y + scale * u(rng), centre.z + far + scale * u(rng)};
    const float w = std::pow(10.0f, -5.0f * (u(rng) + 1.0f) / 2.0f);  // 1e-5 .. 1
    if (kind == 1 || kind == 6)  // long and thin: the third vertex near the first edge's middle
      tri[2] = near_edge(tri[0], tri[1], kind == 1 ? 0.5f : 0.999f, w, [&] { return u(rng); });
    if (kind == 2) tri[2] = {0.5f * (tri[0].x + tri[1].x), 0.5f * (tri[0].y + tri[1].y), 0.5f * (tri[0].z + tri[1].z)};
    if (kind == 3) tri[1] = tri[2] = tri[0];
    if (kind == 5) tri[2] = tri[1];
    const Vec3f vs = kBandVoxelSizes[t % 4];
    const BandSetup bs = band_of(vs, 1 + t % 3);
    // Bricks around the triangle (a long one: along it, as its band's pairs are).
    for (int q = 0; q < 6; ++q) {
      const float f = float(q) / 5.0f;
      const Vec3f at{tri[0].x + f * (tri[1].x - tri[0].x) + 6.0f * u(rng),
                     tri[0].y + f * (tri[1].y - tri[0].y) + 6.0f * u(rng),
                     tri[0].z + f * (tri[1].z - tri[0].z) + 6.0f * u(rng)};
      const int32_t base[3] = {int32_t(std::floor(at.x)) - 4, int32_t(std::floor(at.y)) - 4,
                               int32_t(std::floor(at.z)) - 4};
      const BandCull c = band_cull(band_bound(tri, bs), tri, Int3{base[0], base[1], base[2]});
      float lo[3], hi[3];
      band_tri_bounds(tri, lo, hi);
      // and at a distance below the width (a voxel's least distance so far), 1e-4 to 1 of it
      const float below = bs.width * std::pow(10.0f, -2.0f * (u(rng) + 1.0f));
      const float lim_below = c.w.limit_at(below);
      bool all = true;
      for (int x = 0; x < 8; ++x)
        for (int y = 0; y < 8; ++y)
          for (int z = 0; z < 8; ++z) {
            const float d = voxel_distance(tri, base[0] + x, base[1] + y, base[2] + z, vs);
            const bool cut = band_culled(c, x, y, z);
            ASSERT_TRUE(!cut || d >= bs.width) << "triangle " << t << " voxel " << x << y << z << " d " << d;
            all = all && d >= bs.width;
            skipped += cut;
            ++checked;
            const bool cut_below = band_culled(c, x, y, z, lim_below);
            ASSERT_TRUE(!cut_below || d >= below)
                << "triangle " << t << " voxel " << x << y << z << " d " << d << " at " << below;
            skipped_below += cut_below && !cut;
            for (const float at : {bs.width, below}) {  // the box's bound, for triangles of every size
              const bool cut_box = band_box_culled(c.w, lo, hi, base[0] + x, base[1] + y, base[2] + z, vs, at);
              ASSERT_TRUE(!cut_box || d >= at)
                  << "triangle " << t << " voxel " << x << y << z << " d " << d << " at " << at;
              skipped_box += cut_box;
            }
          }
      if (band_brick_culled(c)) {
        ASSERT_TRUE(all) << "triangle " << t;
        ++bricks_skipped;
      }
    }
  }
  EXPECT_GT(checked, 9000000u);
  EXPECT_GT(skipped, checked / 4);
  EXPECT_GT(bricks_skipped, 400u);
  EXPECT_GT(skipped_below, checked / 20);
  EXPECT_GT(skipped_box, checked / 4);
  // A long thin triangle across a 64^3 box: most of the voxels of its band box are skipped.
  const Vec3f thin[3] = {{1.0f, 2.0f, 3.0f}, {60.0f, 61.0f, 58.0f}, {1.5f, 2.0f, 3.2f}};
  const BandSetup bs = band_of({1.0f, 1.0f, 1.0f}, 3);
  size_t in_box = 0, cut = 0;
  for (int32_t bx = 0; bx < 8; ++bx)
    for (int32_t by = 0; by < 8; ++by)
      for (int32_t bz = 0; bz < 8; ++bz) {
        const int32_t base[3] = {bx * 8, by * 8, bz * 8};
        const BandCull c = band_cull(band_bound(thin, bs), thin, Int3{base[0], base[1], base[2]});
        for (int v = 0; v < kBrickVoxels; ++v) {
          ++in_box;
          cut += band_culled(c, v >> 6, (v >> 3) & 7, v & 7);
        }
      }
  EXPECT_GT(cut, in_box * 95 / 100);
}

// The range of a row of bricks that band_rows and band_row_range give holds every brick of the row that
// band_brick_culled keeps, along each axis, for triangles of the kinds above (long and thin, needles,
// tiny, huge, far from the origin, anisotropic voxels), and is tight: at most two bricks beyond the kept
// ones at each end of a row, and most rows of a long thin triangle's box empty.
TEST(Inside, BandBrickRowRangeHoldsTheKeptBricks) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  size_t rows = 0, empty = 0, kept = 0, in_ranges = 0, box = 0;
  for (int t = 0; t < 1200; ++t) {
    const int kind = t % 6;
    const float scale = kind == 4 ? 1.0f : (kind == 5 ? 300.0f : 120.0f);
    const float far = t % 7 == 0 ? 30000.0f : 0.0f;
    const Vec3f centre{far + 40.0f * u(rng), 40.0f * u(rng), far + 40.0f * u(rng)};
    Vec3f tri[3];
    for (Vec3f& v : tri) v = {centre.x + scale * u(rng), centre.y + scale * u(rng), centre.z + scale * u(rng)};
    const float w = std::pow(10.0f, -5.0f * (u(rng) + 1.0f) / 2.0f);  // 1e-5 .. 1
    if (kind == 1 || kind == 2)                                       // long and thin
      tri[2] = near_edge(tri[0], tri[1], kind == 1 ? 0.5f : 0.999f, w, [&] { return u(rng); });
    if (kind == 3) {  // in an axis plane, a long side along an axis (CAD caps and sides)
      tri[1] = {tri[0].x + scale, tri[0].y, tri[0].z};
      tri[2] = {tri[0].x + 0.3f * scale, tri[0].y + w * scale, tri[0].z};
    }
    const Vec3f vs = kBandVoxelSizes[t % 4];
    const BandSetup bs = band_of(vs, 1 + t % 3);
    const BandBound bound = band_bound(tri, bs);
    if (!bound.skips()) continue;
    // The band box's bricks, at most 48 along each axis (a piece of a huge triangle's box).
    const BandBox x = band_box(tri, bs);
    int32_t lo[3], n[3];
    for (int a = 0; a < 3; ++a) {
      const int32_t v0 = int32_t(std::ceil(x.lo[a] - 0.5f)), v1 = int32_t(std::floor(x.hi[a] - 0.5f));
      lo[a] = v0 >> 3;
      n[a] = std::min((v1 >> 3) - lo[a] + 1, 48);
    }
    box += size_t(n[0]) * size_t(n[1]) * size_t(n[2]);
    for (int axis = 0; axis < 3; ++axis) {
      const BandRows r = band_rows(bound, tri, Int3{lo[0], lo[1], lo[2]}, Int3{n[0], n[1], n[2]}, axis);
      const int a1 = r.a1, a2 = r.a2;
      ASSERT_EQ(r.axis, axis);
      ASSERT_EQ(r.n, n[axis]);
      for (int32_t i = 0; i < n[a1]; ++i)
        for (int32_t j = 0; j < n[a2]; ++j) {
          int32_t k[3] = {lo[0], lo[1], lo[2]};
          k[a1] += i;
          k[a2] += j;
          int32_t m0 = 0, m1 = -1;
          band_row_range(r, i, j, &m0, &m1);
          ASSERT_GE(m0, 0);
          ASSERT_LE(m1, n[axis] - 1);
          int32_t first = n[axis], last = -1;
          for (int32_t m = 0; m < n[axis]; ++m) {
            int32_t q[3] = {k[0], k[1], k[2]};
            q[axis] += m;
            if (band_brick_culled(band_cull(bound, tri, Int3{q[0] * 8, q[1] * 8, q[2] * 8}))) continue;
            ASSERT_TRUE(m >= m0 && m <= m1)
                << "triangle " << t << " axis " << axis << " brick " << m << " range " << m0 << ".." << m1;
            first = std::min(first, m);
            last = std::max(last, m);
            ++kept;
          }
          ++rows;
          if (last < 0) {
            empty += m1 < m0;
          } else {
            EXPECT_LE(first - m0, 2) << "triangle " << t;
            EXPECT_LE(m1 - last, 2) << "triangle " << t;
          }
          in_ranges += size_t(std::max(0, m1 - m0 + 1));
        }
    }
  }
  EXPECT_GT(kept, 100000u);
  EXPECT_GT(empty, rows / 2);
  EXPECT_LT(in_ranges, kept * 3);
  EXPECT_LT(in_ranges * 10, box * 3);  // under a tenth of the rows' bricks (box: each axis's rows)
}

// The winding number's boundary term evaluated eight edges at a time (core/vectorized.h) gives
// inside_boundary_parts' bits and inside_column_decided's answers: random boundaries (1 to 300 edges,
// multiplicities -2 to 2, edges through the column, on its line, of zero length, far away) at columns
// and depths around them; and a changed order of the sums is caught (the test can fail). Only on
// CPUs with AVX-512 (elsewhere the scalar code runs).
TEST(Inside, WindingBoundaryVectorisedIsTheScalarSum) {
  if (!cpu_has_x86_64_v4()) GTEST_SKIP() << "no AVX-512 with 64-bit lanes on this CPU";
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> cell(0, 40), pick(0, 9), mult(-2, 2);
  std::uniform_real_distribution<float> depth(-5.0f, 45.0f);
  const InsideScale scales[] = {{1.0, 1.0, 1.0}, {0.01, 0.02, 0.005}, {3.0, 1.0, 0.5}};
  size_t parts = 0, decided = 0, open = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int ne = 1 + (trial * 37) % 300;
    std::vector<InsideEdge> edges(static_cast<size_t>(ne));
    for (InsideEdge& e : edges) {
      // snapped coordinates: whole columns (the column's own line), or anywhere
      auto coord = [&] {
        return pick(rng) < 3 ? inside_column(cell(rng)) : int64_t(cell(rng)) * 1024 + cell(rng) * 25;
      };
      e.au = coord();
      e.av = coord();
      e.bu = pick(rng) == 0 ? e.au : coord();
      e.bv = pick(rng) == 0 ? e.av : coord();
      e.aw = depth(rng);
      e.bw = pick(rng) == 0 ? e.aw : depth(rng);
      e.mult = mult(rng);
      if (e.mult == 0) e.mult = 1;
    }
    const InsideScale& sc = scales[trial % 3];
    const InsideEdgeLanes lanes = inside_edge_lanes(edges.data(), edges.size());
    for (int q = 0; q < 20; ++q) {
      const int64_t pu = inside_column(cell(rng)), pv = q % 4 == 0 ? edges[0].av : inside_column(cell(rng));
      const bool want = inside_column_decided(edges.data(), edges.size(), pu, pv, sc);
      ASSERT_EQ(inside_column_decided_vectorized(lanes, pu, pv, sc), want) << trial;
      ++(want ? decided : open);
      for (int64_t k = -3; k < 44; k += 7) {
        const InsideParts a = inside_boundary_parts(edges.data(), edges.size(), pu, pv, k, sc);
        const InsideParts b = inside_boundary_parts_vectorized(lanes, pu, pv, k, sc);
        ASSERT_EQ(std::memcmp(&a.pos, &b.pos, sizeof(double)), 0) << trial << " " << a.pos << " " << b.pos;
        ASSERT_EQ(std::memcmp(&a.neg, &b.neg, sizeof(double)), 0) << trial << " " << a.neg << " " << b.neg;
        ++parts;
      }
    }
  }
  EXPECT_GT(decided, 50u);
  EXPECT_GT(open, 100u);
  EXPECT_GT(parts, 50000u);
  // Summed in another order (the edges reversed), the bits differ somewhere.
  size_t differ = 0;
  for (int trial = 0; trial < 50 && differ == 0; ++trial) {
    std::vector<InsideEdge> edges(200);
    for (InsideEdge& e : edges)
      e = {int64_t(cell(rng)) * 999,
           int64_t(cell(rng)) * 777,
           int64_t(cell(rng)) * 555,
           int64_t(cell(rng)) * 333,
           depth(rng),
           depth(rng),
           1};
    std::vector<InsideEdge> reversed(edges.rbegin(), edges.rend());
    const InsideEdgeLanes lanes = inside_edge_lanes(reversed.data(), reversed.size());
    for (int64_t k = 0; k < 40; ++k) {
      const InsideParts a = inside_boundary_parts(edges.data(), edges.size(), 20480, 20480, k, scales[0]);
      const InsideParts b = inside_boundary_parts_vectorized(lanes, 20480, 20480, k, scales[0]);
      differ += std::memcmp(&a.pos, &b.pos, sizeof(double)) != 0 || std::memcmp(&a.neg, &b.neg, sizeof(double)) != 0;
    }
  }
  EXPECT_GT(differ, 0u);
}

// A far ball's dipole term over a range of a column moves from its value at the range's middle by at
// most inside_far_add's bound: the slope bound, or over a column's whole walk (`whole`, the walk's
// coarse far part) the lesser of it and |term| + |m| / rho^2. Checked against the term sampled along
// the range and at its extremes (the roots of its derivative), in long double, for dipoles of every
// direction at every distance and ranges from a hundredth of the distance to a hundred times it.
TEST(Inside, FarDipoleMoveBoundHoldsOverLongRanges) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(-1.0, 1.0), e(-2.0, 2.0);
  size_t capped = 0;
  double tightest = 0.0;  // the largest move / bound among the capped ranges
  for (int trial = 0; trial < 20000; ++trial) {
    InsideNode n{};
    const double scale = std::pow(10.0, e(rng));
    for (int a = 0; a < 3; ++a) {
      n.c[a] = u(rng) * scale;
      n.m[a] = u(rng) * std::pow(10.0, e(rng));
    }
    if (trial % 4 == 0) n.m[0] = n.m[1] = 0.0;  // along the column
    if (trial % 4 == 1) n.m[2] = 0.0;           // across it
    n.m2 = 2.0 * std::sqrt(n.m[0] * n.m[0] + n.m[1] * n.m[1] + n.m[2] * n.m[2]);
    const InsideColumn col{0, 0, n.c[0] + u(rng) * scale, n.c[1] + u(rng) * scale};
    const double du = n.c[0] - col.px, dv = n.c[1] - col.py, dist = std::sqrt(du * du + dv * dv);
    if (!(dist > 1e-3 * scale)) continue;
    const double wm = n.c[2] + u(rng) * 3.0 * scale, h = dist * std::pow(10.0, e(rng));
    InsideFar slope{0.0, 0.0, 0.0}, whole{0.0, 0.0, 0.0};
    inside_far_add(n, col, wm, h, slope);
    inside_far_add(n, col, wm, h, whole, true);
    ASSERT_LE(whole.r, slope.r);
    ASSERT_EQ(whole.d, slope.d);
    // The term along the column: t(z) = (A + B z) / (D + z^2)^1.5, z = c_w - w; its extremes where
    // 2 B z^2 + 3 A z - B D = 0.
    using L = long double;
    const L A = L(n.m[0]) * L(du) + L(n.m[1]) * L(dv), B = n.m[2], D = L(du) * L(du) + L(dv) * L(dv);
    auto t = [&](L z) { return (A + B * z) / std::pow(D + z * z, L(1.5)); };
    const L z0 = L(n.c[2]) - (L(wm) + L(h)), z1 = L(n.c[2]) - (L(wm) - L(h)), tm = t(L(n.c[2]) - L(wm));
    std::vector<L> zs;
    for (int s = 0; s <= 64; ++s) zs.push_back(z0 + (z1 - z0) * L(s) / 64);
    if (B != 0) {
      const L root = std::sqrt(9 * A * A + 8 * B * B * D);
      for (const L z : {(-3 * A + root) / (4 * B), (-3 * A - root) / (4 * B)})
        if (z > z0 && z < z1) zs.push_back(z);
    } else if (0 > z0 && 0 < z1) {
      zs.push_back(0);
    }
    double most = 0.0;
    for (const L z : zs) most = std::max(most, double(std::fabs(t(z) - tm)));
    ASSERT_LE(most, whole.r * (1 + 1e-9) + 1e-300) << "trial " << trial;
    if (whole.r < slope.r) {
      ++capped;
      tightest = std::max(tightest, most / whole.r);
    }
  }
  EXPECT_GT(capped, 5000u);  // long ranges take the cap
  EXPECT_GT(tightest, 0.5);  // and it is not loose everywhere
}

// Random boundary edges for the term tests: 300 sets of 64 edges, a third across the whole snapped
// range (+-2^29), the rest near the origin, some vertical in u or v, multiplicities -3 to 3; voxel
// sizes from 1e-20 to 1e20; 12 columns each, anywhere, through an edge's end, on its line and beside
// its end (`on`: that edge).
struct RandomEdgeSet {
  std::vector<InsideEdge> edges;
  std::vector<InsideEdgeX> xs;
  InsideScale sc;
  struct Column {
    int64_t pu, pv;
    size_t on;
  };
  std::vector<Column> columns;
};
std::vector<RandomEdgeSet> random_edge_sets(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t kMax = int64_t(1) << 29;
  std::uniform_int_distribution<int64_t> anywhere(-kMax, kMax), near(-5000, 5000);
  std::uniform_int_distribution<int> pick(0, 9), mult(-3, 3);
  std::uniform_real_distribution<float> depth(-1e4f, 1e4f);
  const InsideScale scales[] = {{1.0, 1.0, 1.0},      {0.01, 0.02, 0.005},
                                {3.0, 1.0, 0.5},      {1e-20, 3e-20, 2e-20},
                                {1e20, 1e20, 0.5e20}, {double(0.1f), double(0.3f), double(0.7f)}};
  std::vector<RandomEdgeSet> sets(300);
  for (size_t trial = 0; trial < sets.size(); ++trial) {
    RandomEdgeSet& set = sets[trial];
    const bool wide = trial % 3 == 0;
    auto coord = [&] { return wide ? anywhere(rng) : near(rng); };
    set.edges.resize(64);
    for (InsideEdge& e : set.edges) {
      e = {coord(), coord(), coord(), coord(), depth(rng), depth(rng), mult(rng)};
      if (pick(rng) == 0) e.bu = e.au;
      if (pick(rng) == 0) e.bv = e.av;
      if (e.mult == 0) e.mult = 1;
    }
    for (const InsideEdge& e : set.edges) set.xs.push_back(inside_edge_x(e));
    set.sc = scales[trial % 6];
    for (size_t q = 0; q < 12; ++q) {
      const InsideEdge& on = set.edges[q % set.edges.size()];
      int64_t pu = coord(), pv = coord();
      if (q % 4 == 1) pu = on.au, pv = on.av;                                              // through an end
      if (q % 4 == 2) pu = on.au + 2 * (on.bu - on.au), pv = on.av + 2 * (on.bv - on.av);  // on its line
      if (q % 4 == 3) pu = on.au + 1, pv = on.av;                                          // beside an end
      set.columns.push_back({pu, pv, q % set.edges.size()});
    }
  }
  return sets;
}
// The depths a column is looked at: far below and above, between, at an edge's end and just above it.
std::vector<double> random_edge_depths(const InsideEdge& on) {
  return {-2e4, -10.5, 0.5, 100.5, double(on.aw), double(on.aw) + 1e-3, 3e4};
}

// The exact sums' edges as doubles (InsideEdgeX, the inner loop of the GPU's kernel without trees)
// give each term's bits and each lane's sums as the integer edges do, on the random edge sets.
TEST(Inside, WindingTermsFromDoubleEdgesAreTheIntegerEdgesBits) {
  size_t terms = 0, ties = 0, nonzero = 0, trial = 0;
  for (const RandomEdgeSet& set : random_edge_sets(11)) {
    const std::vector<InsideEdge>& edges = set.edges;
    const std::vector<InsideEdgeX>& xs = set.xs;
    const InsideScale& sc = set.sc;
    for (const RandomEdgeSet::Column& col : set.columns) {
      const int64_t pu = col.pu, pv = col.pv;
      for (double pw : random_edge_depths(edges[col.on])) {
        for (size_t e = 0; e < edges.size(); ++e) {
          const double a = inside_edge_solid_angle(edges[e], pu, pv, pw, sc);
          const double b = inside_edge_solid_angle(xs[e], pu, pv, pw, sc);
          ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << trial << " " << e << ": " << a << " " << b;
          ties += inside_edge(edges[e].au, edges[e].av, edges[e].bu, edges[e].bv, pu, pv) == 0;
          nonzero += a != 0.0;
          ++terms;
        }
      }
      for (int lane = 0; lane < kInsideLanes; lane += 7) {
        const InsideParts a = inside_lane_parts(edges.data(), edges.size(), lane, pu, pv, 3, sc);
        const InsideParts b = inside_lane_parts(xs.data(), xs.size(), lane, pu, pv, 3, sc);
        ASSERT_EQ(std::memcmp(&a.pos, &b.pos, sizeof(double)), 0) << trial;
        ASSERT_EQ(std::memcmp(&a.neg, &b.neg, sizeof(double)), 0) << trial;
      }
    }
    ++trial;
  }
  EXPECT_GT(ties, 500u);
  EXPECT_GT(nonzero, terms / 2);
}

// The approximate terms of the GPU's exact sums (inside_edge_solid_angle_approx: the atan2 in float)
// are within the bound derived at kInsideApproxRel, 4.5 * 2^-24 of the exact term's magnitude: the
// polynomial at a sample of every float in [0, 1] (and at the worst two of the exhaustive check)
// within P = 1.46 units of 2^-24 of atan, and every term of the random edge sets within the bound
// (the tie rule's bits equal); each lane's parts within kInsideApproxRel of their magnitude, and the
// CPU's vectorised sums the lanes' bits.
TEST(Inside, ApproximateTermsAreWithinTheirBound) {
  const double e24 = std::ldexp(1.0, -24);
  double worst_poly = 0.0;
  auto poly_error = [&](uint32_t bits) {
    float r;
    std::memcpy(&r, &bits, sizeof r);
    const long double at = std::atan(static_cast<long double>(r));
    const double rel = double(std::fabs(static_cast<long double>(inside_atan_unit(r)) - at) / at) / e24;
    worst_poly = std::max(worst_poly, rel);
  };
  for (uint32_t bits = 1; bits <= 0x3f800000u; bits += 251) poly_error(bits);
  poly_error(0x3f800000u);
  for (const float r : {0.756948173f, 0.751513004f}) {  // the exhaustive check's worst
    uint32_t bits;
    std::memcpy(&bits, &r, sizeof bits);
    poly_error(bits);
  }
  EXPECT_LE(worst_poly, 1.46);
  EXPECT_GT(worst_poly, 1.4);  // (the sample reached the worst)

  const double bound = 4.5 * e24 * (1.0 + 1e-6) + 1e-14;
  double worst = 0.0;
  size_t terms = 0, ties = 0, trial = 0;
  for (const RandomEdgeSet& set : random_edge_sets(12)) {
    const std::vector<InsideEdge>& edges = set.edges;
    const std::vector<InsideEdgeX>& xs = set.xs;
    const InsideScale& sc = set.sc;
    const InsideEdgeLanes lanes = inside_edge_lanes(edges.data(), edges.size());
    const double karea = 1.0 / (sc.su * sc.sv);
    for (const RandomEdgeSet::Column& col : set.columns) {
      const int64_t pu = col.pu, pv = col.pv;
      for (double pw : random_edge_depths(edges[col.on])) {
        for (size_t e = 0; e < edges.size(); ++e) {
          const double x = inside_edge_solid_angle(edges[e], pu, pv, pw, sc);
          const double a = inside_edge_solid_angle_approx(xs[e], pu, pv, pw, sc, karea);
          if (inside_edge(edges[e].au, edges[e].av, edges[e].bu, edges[e].bv, pu, pv) == 0) {
            ASSERT_EQ(std::memcmp(&a, &x, sizeof a), 0) << trial << " " << e;  // the same tie rule
            ++ties;
            continue;
          }
          ASSERT_LE(std::fabs(a - x), bound * std::fabs(x)) << trial << " " << e << ": " << a << " " << x;
          if (x != 0.0) worst = std::max(worst, std::fabs(a - x) / std::fabs(x));
          ++terms;
        }
      }
      for (int lane = 0; lane < kInsideLanes; lane += 5) {
        const InsideParts x = inside_lane_parts(xs.data(), xs.size(), lane, pu, pv, 3, sc);
        const InsideParts a = inside_lane_parts_approx(xs.data(), xs.size(), lane, pu, pv, 3, sc, karea);
        const double slack = kInsideApproxRel * (a.pos - a.neg);
        ASSERT_LE(std::fabs(a.pos - x.pos), slack) << trial;
        ASSERT_LE(std::fabs(a.neg - x.neg), slack) << trial;
      }
      if (cpu_has_x86_64_v4()) {  // the CPU's vectorised sums: the lanes' bits, combined as the host's
        InsideParts p[kInsideLanes];
        for (int l = 0; l < kInsideLanes; ++l)
          p[l] = inside_lane_parts_approx(xs.data(), xs.size(), l, pu, pv, 3, sc, karea);
        for (int off = kInsideLanes / 2; off > 0; off /= 2)
          for (int l = 0; l < off; ++l) p[l] = {p[l].pos + p[l + off].pos, p[l].neg + p[l + off].neg};
        const InsideParts v = inside_boundary_parts_approx_vectorized(lanes, pu, pv, 3, sc);
        ASSERT_EQ(std::memcmp(&v.pos, &p[0].pos, sizeof(double)), 0) << trial << " " << v.pos << " " << p[0].pos;
        ASSERT_EQ(std::memcmp(&v.neg, &p[0].neg, sizeof(double)), 0) << trial << " " << v.neg << " " << p[0].neg;
      }
    }
    ++trial;
  }
  EXPECT_GT(ties, 300u);
  EXPECT_GT(terms, 150000u);
  EXPECT_GT(worst, 0.5 * e24);  // (the terms are not the exact ones: the check has something to check)
}

// The winding walk from approximate parts (inside_winding_exact_approx) sets exactly the voxels the
// exact sums set: synthetic parts whose sums lie within the approximation's error of the threshold,
// perturbed against the answer by up to nine tenths of kInsideApproxRel (without the walk's widening
// some voxels come out wrong), and random boundaries of a few hundred edges at random columns.
TEST(Inside, ApproximateSumsDecideAsTheExactSums) {
  const double kPi = 3.14159265358979323846;
  // Synthetic: B(k) = 2 pi + 1e-7 (k - 40) with parts of magnitude ~200 (c = 0: inside from 2 pi).
  for (const double push : {0.9, -0.9}) {
    for (const bool widen : {true, false}) {
      std::vector<int> got(80, 0);
      int exact_calls = 0;
      auto exact_at = [kPi](int64_t k) {
        return InsideParts{100.0 + 1e-7 * double(k), -(100.0 - 2.0 * kPi) - 1e-7 * 40.0};
      };
      auto approx_at = [&](int64_t k) {
        const InsideParts x = exact_at(k);
        const double d = push * kInsideApproxRel * (x.pos - x.neg);
        return InsideParts{x.pos + d, x.neg};
      };
      inside_winding_walk(
          approx_at,
          [](int64_t, int64_t) {
            return InsideFar{0.0, 0.0, 0.0};
          },
          inside_no_point,
          [&](int64_t k) {
            ++exact_calls;
            return exact_at(k);
          },
          0, 0, 80,
          [&](int64_t a, int64_t b) {
            for (int64_t k = a; k < b; ++k) got[size_t(k)]++;
          },
          nullptr, inside_no_far(), widen ? kInsideApproxRel : 0.0);
      size_t wrong = 0;
      for (int64_t k = 0; k < 80; ++k) {
        const InsideParts x = exact_at(k);
        wrong += got[size_t(k)] != (inside_winding_at_least_half(0, x.pos + x.neg, kPi) ? 1 : 0);
      }
      if (widen) {
        EXPECT_EQ(wrong, 0u) << push;
        EXPECT_GT(exact_calls, 0) << push;
      } else {
        EXPECT_GT(wrong, 0u) << push;  // the perturbation is large enough to matter
      }
    }
  }
  // Random boundaries: every voxel of a span as inside_winding_exact decides it.
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> cell(0, 40), pick(0, 9), mult(-2, 2);
  std::uniform_real_distribution<float> depth(-5.0f, 45.0f);
  const InsideScale scales[] = {{1.0, 1.0, 1.0}, {0.01, 0.02, 0.005}, {3.0, 1.0, 0.5}};
  size_t voxels = 0, inside = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<InsideEdge> edges(size_t(20 + (trial * 37) % 300));
    for (InsideEdge& e : edges) {
      auto coord = [&] {
        return pick(rng) < 3 ? inside_column(cell(rng)) : int64_t(cell(rng)) * 1024 + cell(rng) * 25;
      };
      e = {coord(), coord(), coord(), coord(), depth(rng), depth(rng), mult(rng)};
      if (e.mult == 0) e.mult = 1;
    }
    std::vector<InsideEdgeX> xs;
    for (const InsideEdge& e : edges) xs.push_back(inside_edge_x(e));
    const InsideScale& sc = scales[trial % 3];
    const double karea = 1.0 / (sc.su * sc.sv);
    for (int q = 0; q < 6; ++q) {
      const int64_t pu = inside_column(cell(rng)), pv = inside_column(cell(rng)), c = int64_t(q % 3) - 1;
      auto exact = [&](int64_t k) { return inside_boundary_parts(edges.data(), edges.size(), pu, pv, k, sc); };
      auto approx = [&](int64_t k) {
        InsideParts p[kInsideLanes];
        for (int l = 0; l < kInsideLanes; ++l)
          p[l] = inside_lane_parts_approx(xs.data(), xs.size(), l, pu, pv, k, sc, karea);
        for (int off = kInsideLanes / 2; off > 0; off /= 2)
          for (int l = 0; l < off; ++l) p[l] = {p[l].pos + p[l + off].pos, p[l].neg + p[l + off].neg};
        return p[0];
      };
      std::vector<int> want(50, 0), got(50, 0);
      inside_winding_exact(exact, c, -5, 45, [&](int64_t a, int64_t b) {
        for (int64_t k = a; k < b; ++k) want[size_t(k + 5)]++;
      });
      inside_winding_exact_approx(approx, exact, c, -5, 45, [&](int64_t a, int64_t b) {
        for (int64_t k = a; k < b; ++k) got[size_t(k + 5)]++;
      });
      ASSERT_EQ(got, want) << trial << " " << q;
      voxels += want.size();
      inside += size_t(std::count(want.begin(), want.end(), 1));
    }
  }
  EXPECT_GT(inside, voxels / 10);
  EXPECT_LT(inside, voxels - voxels / 10);
}

// The CPU band (each brick's triangles a sub-box at a time) holds exactly the minimum of band_min
// over every triangle for every voxel, as the GPU takes it voxel by voxel: the same voxels and the
// same bits, with triangles far smaller than voxels (many per brick), larger than bricks, and grids
// whose dims are not multiples of 8.
// A voxel centre on a triangle's plane is at distance +0, never -0, whatever the normal's signs: the
// band's minimum of several triangles through one centre is then the same whatever their order (the
// GPU's band takes its distances in any order). The plane's distance was |d| as d < 0 ? -d : d,
// which keeps -0 for a normal with no positive component.
TEST(Inside, DistanceOnTheSurfaceIsPlusZero) {
  const Vec3f vs{1.0f, 1.0f, 1.0f};
  // vertex 0 at voxel (3, 4, 5)'s centre; the normal (-1, -1, -1), then (1, 1, 1)
  const Vec3f a{3.5f, 4.5f, 5.5f}, p{3.5f, 5.5f, 4.5f}, q{4.5f, 3.5f, 5.5f};
  for (const bool flip : {false, true}) {
    const Vec3f tri[3] = {a, flip ? q : p, flip ? p : q};
    for (const float d : {voxel_distance(tri, 3, 4, 5, vs), voxel_distance_select(tri, 3, 4, 5, vs)}) {
      EXPECT_EQ(d, 0.0f);
      EXPECT_FALSE(std::signbit(d)) << (flip ? "normal (1, 1, 1)" : "normal (-1, -1, -1)");
    }
  }
}

TEST(Inside, BandIsEveryVoxelsMinimumOverAllTriangles) {
  std::vector<std::pair<std::string, Mesh>> meshes;
  for (const Case& c : cases()) meshes.push_back({c.name, c.mesh});
  meshes.push_back({"soup", test::random_soup(300, 1.0f, 0.05f, 7)});
  for (const auto& [name, mesh] : meshes) {
    for (const auto& [res, band, path] : std::vector<std::tuple<int, int, int>>{{5, 3, 0},
                                                                                {13, 2, 0},
                                                                                {29, 3, 0},
                                                                                {37, 1, 0},
                                                                                {13, 2, 2},
                                                                                {17, 12, 1},
                                                                                {17, 12, 2},
                                                                                {9, 40, 1},
                                                                                {9, 40, 2},
                                                                                {16, kBandAll, 0},
                                                                                {6, kBandAll, 0}}) {
      // path 0: band_distance_cpu's choice; 1: the pairs; 2: the search (core/band_search.h)
      SCOPED_TRACE(name + " -r " + std::to_string(res) + " --band " + std::to_string(band) + " path " +
                   std::to_string(path));
      const GridSpec spec = grid_for(mesh, res, 2);
      const std::vector<Vec3f> g = to_grid_space(mesh, spec);
      const SparseGrid got = path == 0   ? band_distance_cpu(mesh, spec, band)
                             : path == 1 ? band_pairs_cpu(mesh, g, spec, band)
                                         : band_search_cpu(mesh, g, spec, mesh_grid_box(mesh, spec), band);
      got.validate();
      const BandSetup bs = band_setup(spec, band);
      if (band == kBandAll) {
        EXPECT_EQ(got.active_voxels(), spec.num_voxels());
      }
      size_t active = 0;
      for (int32_t i = 0; i < spec.dims.x; ++i)
        for (int32_t j = 0; j < spec.dims.y; ++j)
          for (int32_t k = 0; k < spec.dims.z; ++k) {
            const float best = brute_band_min(mesh, g, i, j, k, bs);
            ASSERT_EQ(grid_has(got, i, j, k), best < bs.width) << i << "," << j << "," << k;
            if (best >= bs.width) continue;
            ++active;
            ASSERT_EQ(float_bits(grid_value(got, i, j, k)), float_bits(best)) << i << "," << j << "," << k;
          }
      EXPECT_EQ(got.active_voxels(), active);
      EXPECT_GT(active, 0u);
    }
  }
}

static Mesh hard_soup(int soup);

// The band search's tree (built in parallel above 16,384 triangles): every reference in one leaf,
// each child's box and margins holding its references', each reference's box within its triangle's
// bounds and its margins the triangle's; a triangle's pieces' boxes hold every point of it (sampled:
// vertices, edges, inside), long triangles cut (CAD slivers, a sphere of a few large triangles, and
// every triangle at a piece length under a voxel), the loose ones kept apart.
TEST(Inside, BandTreeHoldsEveryTriangleByPiecesWithinItsChildsBox) {
  const std::vector<std::pair<std::string, Mesh>> meshes = {
      {"sphere", subdivide(make_uv_sphere(0.1f, 0.2f, -0.3f, 1.0f, 60, 120), 2)},
      {"tubes", make_tubes(40, 30, 6, 5)},
      {"few large", make_uv_sphere(0, 0, 0, 1, 2, 3)},
      {"cad slivers", make_cad(8, 96, 4)},
      {"soup", hard_soup(1)}};
  size_t cut = 0;
  for (const auto& [name, mesh] : meshes)
    for (float piece : {kBandPieceVoxels, 0.75f}) {
      SCOPED_TRACE(name + " piece " + std::to_string(piece));
      const GridSpec spec = grid_for(mesh, 64, 2);
      const std::vector<Vec3f> g = to_grid_space(mesh, spec);
      const BandSetup bs = band_setup(spec, kBandAll);
      const BandTree tree = build_band_tree(mesh, g, mesh_grid_box(mesh, spec), bs, piece);
      const BandTreeView v = tree.view();
      ASSERT_FALSE(v.empty);
      const size_t nr = tree.tris.size() / 3;
      ASSERT_EQ(nr, v.num_tris);
      ASSERT_EQ(tree.boxes.size(), nr);
      // Each triangle's references (by its vertices), and the loose ones apart.
      std::map<std::array<float, 9>, std::vector<size_t>> refs;
      auto key_of = [](const Vec3f* t) {
        return std::array<float, 9>{t[0].x, t[0].y, t[0].z, t[1].x, t[1].y, t[1].z, t[2].x, t[2].y, t[2].z};
      };
      for (size_t u = 0; u < nr; ++u) refs[key_of(&tree.tris[3 * u])].push_back(u);
      size_t tree_tris = 0;
      for (size_t t = 0; t < mesh.num_triangles(); ++t) {
        const Vec3f tri[3] = {g[mesh.indices[3 * t]], g[mesh.indices[3 * t + 1]], g[mesh.indices[3 * t + 2]]};
        const BandBound w = band_bound(tri, bs);
        const auto it = refs.find(key_of(tri));
        if (band_loose(w.k2, w.k2e)) continue;
        ASSERT_TRUE(it != refs.end()) << "triangle " << t << " not in the tree";
        ++tree_tris;
        float lo[3], hi[3];
        band_tri_bounds(tri, lo, hi);
        for (size_t u : it->second) {
          const BandNodeBox& b = tree.boxes[u];
          for (int a = 0; a < 3; ++a) ASSERT_TRUE(lo[a] <= b.lo[a] && b.lo[a] <= b.hi[a] && b.hi[a] <= hi[a]) << t;
          ASSERT_EQ(b.k2, w.k2);
          ASSERT_EQ(b.k2e, w.k2e);
        }
        cut += it->second.size() > 1;
        // Points of the triangle (barycentric samples in double, rounded to float both ways) lie in a piece's box.
        const int n = 12;
        for (int p = 0; p <= n; ++p)
          for (int q = 0; p + q <= n; ++q) {
            double x[3];
            const double wa = double(p) / n, wb = double(q) / n, wc = 1.0 - wa - wb;
            x[0] = wa * tri[0].x + wb * tri[1].x + wc * tri[2].x;
            x[1] = wa * tri[0].y + wb * tri[1].y + wc * tri[2].y;
            x[2] = wa * tri[0].z + wb * tri[1].z + wc * tri[2].z;
            bool held = false;
            for (size_t u : it->second) {
              const BandNodeBox& b = tree.boxes[u];
              bool in = true;
              for (int a = 0; a < 3; ++a) in &= double(b.lo[a]) <= x[a] + 1e-9 && x[a] - 1e-9 <= double(b.hi[a]);
              held |= in;
            }
            ASSERT_TRUE(held) << "triangle " << t << " point " << p << "," << q << " in no piece's box";
          }
      }
      EXPECT_EQ(tree_tris + v.num_loose, mesh.num_triangles());
      std::vector<int> seen(nr, 0);
      // (ref, box, margins) to check: the subtree's references lie in the box, their margins under its.
      struct Item {
        BandRef ref;
        float lo[3], hi[3], k2, k2e;
      };
      std::vector<Item> todo;
      Item root{v.root, {}, {}, v.root_k2, v.root_k2e};
      for (int a = 0; a < 3; ++a) {
        root.lo[a] = v.root_lo[a];
        root.hi[a] = v.root_hi[a];
      }
      todo.push_back(root);
      size_t inner_seen = 0;
      while (!todo.empty()) {
        const Item it = todo.back();
        todo.pop_back();
        if (it.ref.count) {
          ASSERT_LE(it.ref.index + it.ref.count, nr);
          ASSERT_LE(it.ref.count, 4u);
          for (uint32_t u = it.ref.index; u < it.ref.index + it.ref.count; ++u) {
            ++seen[u];
            const BandNodeBox& b = tree.boxes[u];
            for (int a = 0; a < 3; ++a) ASSERT_TRUE(it.lo[a] <= b.lo[a] && b.hi[a] <= it.hi[a]);
            ASSERT_LE(b.k2, it.k2);
            ASSERT_LE(b.k2e, it.k2e);
          }
          continue;
        }
        ASSERT_LT(it.ref.index, tree.nodes.size());
        ++inner_seen;
        const BandNode& n = tree.nodes[it.ref.index];
        for (int h = 0; h < 2; ++h) {
          Item c{n.child[h], {}, {}, n.k2[h], n.k2e[h]};
          for (int a = 0; a < 3; ++a) {
            c.lo[a] = n.lo[h][a];
            c.hi[a] = n.hi[h][a];
            ASSERT_TRUE(it.lo[a] <= c.lo[a] && c.hi[a] <= it.hi[a]);
          }
          ASSERT_LE(c.k2, it.k2);
          ASSERT_LE(c.k2e, it.k2e);
          todo.push_back(c);
        }
      }
      EXPECT_EQ(inner_seen, tree.nodes.size());
      for (size_t u = 0; u < nr; ++u) ASSERT_EQ(seen[u], 1) << u;
    }
  EXPECT_GT(cut, 1000u) << "few triangles cut into pieces";
}

// The pieces stay within band_piece_budget: 10,000 triangles across a 1024^3 grid (their pieces at 8
// voxels, about 7M, are over the budget of 4.2M: the length grows until they fit), and triangles out to
// 1e20 voxels around a small grid (64 cuts a side at any length up to 2^40 x 8: none cut), each
// built in a few passes, every triangle held.
TEST(Inside, BandTreeCutsWithinItsBudget) {
  const Mesh large = test::random_soup(10000, 0.5f, 1.0f, 5), huge = test::random_soup(5000, 2e17f, 1e17f, 5);
  GridOptions small;
  small.bbox = Bounds{{-0.5, -0.5, -0.5}, {0.5, 0.5, 0.5}};
  small.resolution = 200;
  for (const auto& [name, mesh, spec] : std::vector<std::tuple<std::string, Mesh, GridSpec>>{
           {"large", large, grid_for(large, 1024, 2)}, {"huge", huge, make_grid_spec(huge.bounds(), small)}}) {
    SCOPED_TRACE(name);
    const std::vector<Vec3f> g = to_grid_space(mesh, spec);
    const BandTree tree = build_band_tree(mesh, g, mesh_grid_box(mesh, spec), band_setup(spec, 3));
    const size_t refs = tree.boxes.size() + tree.loose.size() / 3;
    EXPECT_LE(refs, band_piece_budget(mesh.num_triangles()));
    EXPECT_GE(refs, mesh.num_triangles());
    if (name == "large") {
      EXPECT_GT(tree.piece, kBandPieceVoxels);
      EXPECT_GT(refs, 10 * mesh.num_triangles());  // (still cut)
    } else {
      EXPECT_EQ(tree.piece, INFINITY);
      EXPECT_EQ(refs, mesh.num_triangles());
    }
  }
}

// The walk over a tree of pieces (long triangles cut, down to pieces under a voxel) gives each voxel
// band_min's minimum over all triangles, bit for bit, at a band of 2 and 7 voxels and for every
// voxel: CAD slivers, a sphere of a few large triangles, a soup of needles and slivers.
TEST(Inside, BandSearchOverPiecesIsEveryVoxelsMinimum) {
  const std::vector<std::pair<std::string, Mesh>> meshes = {
      {"cad slivers", make_cad(3, 40, 2)}, {"few large", make_uv_sphere(0.1f, 0, 0, 1, 2, 3)}, {"soup", hard_soup(2)}};
  for (const auto& [name, mesh] : meshes)
    for (int band : {2, 7, kBandAll})
      for (float piece : {kBandPieceVoxels, 2.0f, 0.6f}) {
        SCOPED_TRACE(name + " band " + std::to_string(band) + " piece " + std::to_string(piece));
        const GridSpec spec = grid_for(mesh, 23, 2);
        const std::vector<Vec3f> g = to_grid_space(mesh, spec);
        const BandSetup bs = band_setup(spec, band);
        const BandTree tree = build_band_tree(mesh, g, mesh_grid_box(mesh, spec), bs, piece);
        const BandTreeView v = tree.view();
        for (int32_t i = 0; i < spec.dims.x; ++i)
          for (int32_t j = 0; j < spec.dims.y; ++j)
            for (int32_t k = 0; k < spec.dims.z; ++k) {
              const float want = brute_band_min(mesh, g, i, j, k, bs);
              BandLanes<1> p;
              p.i[0] = i;
              p.j[0] = j;
              p.k[0] = k;
              p.active[0] = 1;
              p.best[0] = bs.width;
              p.arg[0] = kBandNone;
              band_search_lanes(v, bs, p);
              ASSERT_EQ(float_bits(p.best[0]), float_bits(want)) << i << "," << j << "," << k;
            }
      }
}

// On closed meshes that do not cross themselves, OpenVDB's meshToLevelSet (an independent sign:
// its own flood fill) gives every band voxel the sign the sdf gives it, away from the surface.
TEST(Inside, SdfSignEqualsOpenVdbsOnClosedMeshes) {
  openvdb::initialize();
  const Mesh sphere = make_uv_sphere(0.1f, -0.2f, 0.3f, 1.0f, 24, 40);
  const Mesh box = make_box_mesh(-0.7f, -0.4f, -0.9f, 0.8f, 0.6f, 0.5f);
  const std::vector<std::pair<std::string, Mesh>> meshes = {
      {"sphere", sphere}, {"rotated box", rotated(box, 7)}, {"subdivided rotated sphere", subdivide(rotated(sphere, 4), 1)}};
  for (const auto& [name, mesh] : meshes)
    for (int res : {40, 97}) {
      const GridSpec spec = grid_for(mesh, res, 4);
      VoxelizeOptions o;
      o.target = Target::kSdf;
      const SparseGrid sdf = voxelize_cpu(mesh, spec, o);
      const std::vector<Vec3f> g = to_grid_space(mesh, spec);
      std::vector<openvdb::Vec3s> pts(g.size());
      for (size_t i = 0; i < g.size(); ++i) pts[i] = openvdb::Vec3s(g[i].x - 0.5f, g[i].y - 0.5f, g[i].z - 0.5f);
      std::vector<openvdb::Vec3I> tris(mesh.num_triangles());
      for (size_t t = 0; t < tris.size(); ++t)
        tris[t] = openvdb::Vec3I(mesh.indices[3 * t], mesh.indices[3 * t + 1], mesh.indices[3 * t + 2]);
      const openvdb::FloatGrid::Ptr ls = openvdb::tools::meshToLevelSet<openvdb::FloatGrid>(
          *openvdb::math::Transform::createLinearTransform(1.0), pts, tris, 3.0f);
      const auto acc = ls->getConstAccessor();
      const float half = float(0.5 * spec.voxel_size.x);
      size_t compared = 0, inside = 0;
      sdf.for_each_active([&](int i, int j, int k, size_t, int, uint64_t at) {
        const float v = sdf.fvalues[at];
        if (std::fabs(v) <= half) return;
        ++compared;
        inside += v < 0;
        ASSERT_EQ(v < 0, acc.getValue(openvdb::Coord(i, j, k)) < 0) << name << " r" << res << " at " << i << "," << j
                                                                    << "," << k << " sdf " << v;
      });
      EXPECT_GT(compared, 1000u) << name;
      EXPECT_GT(inside, compared / 4) << name;
    }
}

TEST(Inside, SdfIsWrittenAsAnOpenVdbLevelSet) {
  const Mesh sphere = make_uv_sphere(0, 0, 0, 1, 16, 32);
  const GridSpec spec = grid_for(sphere, 32, 4);
  CpuVoxelizer cpu;
  cpu.set_mesh(sphere);
  VoxelizeOptions vo;
  const SparseGrid sdf = cpu.voxelize(spec, vo, {make_target_spec(Target::kSdf)})[0];
  test::TempDir dir;
  write_grid(sdf, dir.file("s.vdb"), OutputFormat::kVdb, {});
  openvdb::initialize();
  openvdb::io::File f(dir.file("s.vdb"));
  f.open();
  auto grid = openvdb::gridPtrCast<openvdb::FloatGrid>(f.readGrid("sdf"));
  ASSERT_TRUE(grid);
  EXPECT_EQ(grid->getGridClass(), openvdb::GRID_LEVEL_SET);
  EXPECT_FLOAT_EQ(grid->background(), sdf.background);
  const openvdb::Coord centre(spec.dims.x / 2, spec.dims.y / 2, spec.dims.z / 2);
  EXPECT_FLOAT_EQ(grid->tree().getValue(centre), -sdf.background);  // flood-filled inside
  EXPECT_FLOAT_EQ(grid->tree().getValue(openvdb::Coord(0, 0, 0)), sdf.background);
  EXPECT_EQ(grid->activeVoxelCount(), sdf.active_voxels());
  const SparseGrid back = read_vdb(dir.file("s.vdb"), "sdf");
  EXPECT_TRUE(back.level_set);
  EXPECT_EQ(back.checksum(), sdf.checksum());
  // The dense field: -background inside beyond the band, +background outside.
  write_grid(sdf, dir.file("s.npy"), OutputFormat::kNpy, {});
  const std::string npy = test::read_file(dir.file("s.npy"));
  const size_t header = npy.size() - spec.num_voxels() * 4;
  auto at = [&](int32_t i, int32_t j, int32_t k) {
    float v;
    std::memcpy(&v, npy.data() + header + ((size_t(i) * spec.dims.y + j) * spec.dims.z + k) * 4, 4);
    return v;
  };
  EXPECT_FLOAT_EQ(at(centre.x(), centre.y(), centre.z()), -sdf.background);
  EXPECT_FLOAT_EQ(at(0, 0, 0), sdf.background);
  EXPECT_FLOAT_EQ(at(centre.x(), centre.y(), spec.dims.z - 1), sdf.background);
}

// --band all: every voxel's distance (the dense field a .npy user wants), signed, the level set's
// background its largest; wide and bad widths through the command line and a batch manifest.
TEST(Inside, EveryVoxelsDistanceFromTheCommandLine) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  auto run = [&](std::vector<std::string> args) { return test::run_voxtile(args); };
  for (const char* ext : {"vdb", "npy"}) {
    const auto r = run({"voxelize", bunny, "-o", dir.file(std::string("all.") + ext), "-r", "24", "-t", "sdf", "--band",
                        "all", "-d", "cpu", "--stats", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const SparseGrid all = read_vdb(dir.file("all.vdb"), "sdf");
  EXPECT_EQ(all.active_voxels(), all.spec.num_voxels());
  float largest = 0.0f, inside = 0.0f;
  for (float v : all.fvalues) {
    ASSERT_TRUE(std::isfinite(v));
    largest = std::max(largest, std::fabs(v));
    inside = std::min(inside, v);
  }
  EXPECT_EQ(all.background, largest);
  EXPECT_LT(inside, -2.0f * float(all.spec.voxel_size.x));  // deep inside the bunny
  // The corner voxel's distance: more than 3 voxels (beyond the default band), from the brute force.
  const Mesh mesh = load_mesh(bunny).mesh;
  const std::vector<Vec3f> g = to_grid_space(mesh, all.spec);
  const BandSetup bs = band_setup(all.spec, kBandAll);
  const float corner = brute_band_min(mesh, g, 0, 0, 0, bs);  // (the width infinite)
  EXPECT_GT(corner, 3.0f * float(all.spec.voxel_size.x));
  EXPECT_EQ(float_bits(grid_value(all, 0, 0, 0)), float_bits(corner));
  const auto cmp = run({"compare", dir.file("all.vdb"), dir.file("all.npy")});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
  // A band of 30 voxels holds every voxel of this grid too: the same values, its own background.
  ASSERT_EQ(
      run({"voxelize", bunny, "-o", dir.file("w.vdb"), "-r", "24", "-t", "sdf", "--band", "30", "-d", "cpu", "-q"})
          .exit_code,
      0);
  const SparseGrid wide = read_vdb(dir.file("w.vdb"), "sdf");
  EXPECT_EQ(wide.fvalues, all.fvalues);
  EXPECT_EQ(wide.background, float(30 * all.spec.voxel_size.x));
  for (const char* bad : {"0", "65537", "-1", "wide", "3.5"}) {
    const auto r = run({"voxelize", bunny, "-o", dir.file("x.vdb"), "-t", "sdf", "--band", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--band"), std::string::npos) << r.err;
  }
  // A manifest's "band": "all" or a width.
  std::ofstream(dir.file("m.jsonl")) << "{\"input\": \"" << bunny << "\", \"output\": \"" << dir.file("m.vdb")
                                     << "\", \"band\": \"all\"}\n";
  auto r = run({"batch", "--manifest", dir.file("m.jsonl"), "-r", "24", "-t", "sdf", "--devices", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_vdb(dir.file("m.vdb"), "sdf").fvalues, all.fvalues);
  std::ofstream(dir.file("m0.jsonl")) << "{\"input\": \"" << bunny << "\", \"output\": \"" << dir.file("m0.vdb")
                                      << "\", \"band\": 0}\n";
  r = run({"batch", "--manifest", dir.file("m0.jsonl"), "-r", "24", "-t", "sdf", "--devices", "cpu", "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(Inside, CommandLineSolidAndSdf) {
  test::TempDir dir;
  const std::string obj = dir.file("cube.obj");
  {
    std::FILE* f = std::fopen(obj.c_str(), "w");
    std::fputs(
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
        "f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n",
        f);
    std::fclose(f);
  }
  for (const char* inside : {"parity", "winding", "vote"}) {
    const test::RunResult r = test::run_voxtile({"voxelize", obj, "-o", dir.file("c.vdb"), "-r", "8", "-t", "solid",
                                                 "--inside", inside, "--stats", "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"active_voxels\":512"), std::string::npos) << r.out;
  }
  // A solid with an interior (runs, tiles in .vdb) through every command that reads grids.
  {
    ASSERT_EQ(test::run_voxtile({"voxelize", obj, "-o", dir.file("big.vdb"), "-r", "64", "-t", "solid", "-q"}).exit_code,
              0);
    ASSERT_EQ(test::run_voxtile({"voxelize", obj, "-o", dir.file("big.npy"), "-r", "64", "-t", "solid", "-q"}).exit_code,
              0);
    const SparseGrid big = read_vdb(dir.file("big.vdb"), "");
    EXPECT_GT(big.run_bricks(), 100u);
    EXPECT_EQ(big.active_voxels(), uint64_t(64 * 64 * 64));
    const test::RunResult cmp = test::run_voxtile({"compare", dir.file("big.vdb"), dir.file("big.npy")});
    EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
    const test::RunResult info = test::run_voxtile({"info", dir.file("big.vdb")});
    EXPECT_NE(info.out.find("active_voxels=262144"), std::string::npos) << info.out;
    const test::RunResult cubes =
        test::run_voxtile({"mesh", dir.file("big.vdb"), "-o", dir.file("cubes.ply"), "--style", "cubes", "-q"});
    ASSERT_EQ(cubes.exit_code, 0) << cubes.err;
    EXPECT_EQ(load_mesh(dir.file("cubes.ply")).mesh.num_triangles(), size_t(6 * 64 * 64 * 2));  // the box faces
    EXPECT_EQ(test::run_voxtile({"preview", dir.file("big.vdb"), "-o", dir.file("big.png"), "-q"}).exit_code, 0);
  }
  const test::RunResult sdf = test::run_voxtile({"voxelize", obj, "-o", dir.file("s.vdb"), "-r", "16", "--pad", "4",
                                                 "-t", "sdf,solid", "--band", "2", "-d", "cpu", "-q"});
  ASSERT_EQ(sdf.exit_code, 0) << sdf.err;
  const SparseGrid back = read_vdb(dir.file("s.vdb"), "sdf");
  EXPECT_TRUE(back.level_set);
  EXPECT_FLOAT_EQ(back.background, float(2 * back.spec.voxel_size.x));
  EXPECT_EQ(test::run_voxtile({"voxelize", obj, "-o", dir.file("x.vdb"), "-t", "solid", "--inside", "odd"}).exit_code,
            2);
  EXPECT_EQ(test::run_voxtile({"voxelize", obj, "-o", dir.file("x.vdb"), "-t", "sdf", "--band", "0"}).exit_code, 2);
  EXPECT_EQ(test::run_voxtile({"voxelize", obj, "-o", dir.file("x.vdb"), "-t", "sdf:max"}).exit_code, 2);
  EXPECT_FALSE(test::file_exists(dir.file("x.vdb")));
  // Batch manifests take inside and band.
  {
    std::FILE* f = std::fopen(dir.file("m.jsonl").c_str(), "w");
    std::fprintf(f,
                 "{\"input\": \"%s\", \"output\": \"%s\", \"target\": \"sdf\", \"inside\": \"parity\", \"band\": 1, "
                 "\"resolution\": 8, \"pad\": 2}\n",
                 obj.c_str(), dir.file("b.vdb").c_str());
    std::fclose(f);
  }
  const test::RunResult b = test::run_voxtile({"batch", "--manifest", dir.file("m.jsonl"), "--devices", "cpu", "-q"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const SparseGrid bs = read_vdb(dir.file("b.vdb"), "sdf");
  EXPECT_FLOAT_EQ(bs.background, float(bs.spec.voxel_size.x));
}

// The sdf alone (no solid target) takes the inside test in its band's bricks only: open meshes
// whose columns the winding test sums voxel by voxel (a sphere with a third of its triangles left out and open tubes,
// with the piece trees; the bunny's open base, a rim on the bounds' face) get, at every band voxel, the whole test's
// bit, so the sdf is the band signed by the whole test, byte for byte; the test left out somewhere (fewer voxels set).
// Whether grids a and b hold the same bits at every voxel of `band`.
static testing::AssertionResult same_at_band_voxels(const SparseGrid& band, const SparseGrid& a, const SparseGrid& b) {
  for (size_t q = 0; q < band.keys.size(); ++q) {
    const Int3 c = brick_coord(band.keys[q]);
    for (int o = 0; o < kBrickVoxels; ++o) {
      if (!band.masks[q].test(o)) continue;
      const int32_t i = c.x * 8 + (o >> 6), j = c.y * 8 + ((o >> 3) & 7), k = c.z * 8 + (o & 7);
      if (grid_has(a, i, j, k) != grid_has(b, i, j, k))
        return testing::AssertionFailure() << "voxel " << i << "," << j << "," << k << " differs";
    }
  }
  return testing::AssertionSuccess();
}
static std::vector<std::pair<std::string, Mesh>> open_meshes() {
  Mesh holed =
      make_uv_sphere(0.1f, -0.2f, 0.05f, 1.0f, 32, 64);  // (a third of the triangles left out: 2,687 open edges)
  std::vector<uint32_t> kept;
  for (size_t t = 0; t < holed.num_triangles(); ++t)
    if (t % 3 != 1) kept.insert(kept.end(), &holed.indices[3 * t], &holed.indices[3 * t + 3]);
  holed.indices.assign(kept.begin(), kept.end());
  return {{"holed sphere", holed},
          {"open tubes", make_tubes(300, 6, 6, 8, 0.01, 0.4)},
          {"bunny", load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh},
          {"rim", rim_on_bounds_box(0)}};
}
TEST(Inside, SdfSignInItsBandOnlyIsTheWholeTestsSign) {
  size_t left_out = 0;
  for (const auto& [name, mesh] : open_meshes())
    for (int res : {24, 40}) {
      const GridSpec spec = grid_for(mesh, res, 2);
      const SparseGrid whole = inside_cpu(mesh, spec, InsideMethod::kWinding);
      for (int band : {1, 3}) {
        SCOPED_TRACE(name + " -r " + std::to_string(res) + " --band " + std::to_string(band));
        SparseGrid signed_band = band_distance_cpu(mesh, spec, band);
        const SparseGrid part = inside_cpu(mesh, spec, InsideMethod::kWinding, &signed_band);
        part.validate();
        ASSERT_TRUE(same_at_band_voxels(signed_band, part, whole));
        left_out += whole.active_voxels() - part.active_voxels();
        apply_sign(signed_band, whole);
        CpuVoxelizer cpu;
        cpu.set_mesh(mesh);
        VoxelizeOptions vo;
        vo.inside = InsideMethod::kWinding;
        vo.band = band;
        const SparseGrid sdf = cpu.voxelize(spec, vo, {make_target_spec(Target::kSdf)})[0];
        ASSERT_EQ(sdf.keys, signed_band.keys);
        ASSERT_EQ(sdf.fvalues, signed_band.fvalues);
      }
    }
  EXPECT_GT(left_out, 3000u) << "the band's bricks left out little of the test";
}

// ---- GPU = CPU ---------------------------------------------------------------------------------

TEST(InsideGpu, SolidAndSdfEqualTheCpuBitForBit) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer();
  CpuVoxelizer cpu;
  std::vector<Case> all = cases();
  all.push_back({"dragon-like subdivided sphere", subdivide(rotated(make_uv_sphere(0, 0, 0, 1, 20, 40), 9), 2), true});
  all.push_back({"tubes", make_tubes(20, 40, 6, 3), true});
  all.push_back({"cad slivers", make_cad(8, 96, 4), true});  // (long slivers: the band's bound at its margins)
  all.push_back({"open tubes", make_tubes(300, 6, 6, 8, 0.01, 0.4), false});  // (3,600 boundary edges: the piece trees)
  for (const Case& c : all)
    for (int res : {16, 63, 128}) {
      const GridSpec spec = grid_for(c.mesh, res, 2);
      cpu.set_mesh(c.mesh);
      gpu->set_mesh(c.mesh);
      for (InsideMethod m : {InsideMethod::kParity, InsideMethod::kWinding, InsideMethod::kVote}) {
        VoxelizeOptions vo;
        vo.inside = m;
        vo.band = res == 16 ? 1 : 3;
        const std::vector<TargetSpec> t = {make_target_spec(Target::kSolid), make_target_spec(Target::kSdf),
                                           make_target_spec(Target::kCount)};
        const auto a = cpu.voxelize(spec, vo, t);
        const auto b = gpu->voxelize(spec, vo, t);
        for (size_t i = 0; i < t.size(); ++i) {
          ASSERT_EQ(a[i].keys, b[i].keys) << c.name << " " << res << " " << inside_name(m) << " " << i;
          ASSERT_EQ(a[i].run_bricks(), b[i].run_bricks()) << c.name << " " << res << " " << inside_name(m) << " " << i;
          ASSERT_EQ(a[i].checksum(), b[i].checksum()) << c.name << " " << res << " " << inside_name(m) << " " << i;
          ASSERT_EQ(a[i].fvalues, b[i].fvalues) << c.name << " " << res << " " << inside_name(m) << " " << i;
        }
      }
    }
  // An open rim on the bounds' face, just under a row of voxel centres (the CPU once set voxels there).
  for (int flip = 0; flip < 2; ++flip) {
    const Mesh open = rim_on_bounds_box(flip);
    cpu.set_mesh(open);
    gpu->set_mesh(open);
    VoxelizeOptions vo;
    vo.inside = InsideMethod::kWinding;
    const std::vector<TargetSpec> t = {make_target_spec(Target::kSolid), make_target_spec(Target::kSdf)};
    const auto a = cpu.voxelize(unit_grid_8(open), vo, t);
    const auto b = gpu->voxelize(unit_grid_8(open), vo, t);
    for (size_t i = 0; i < t.size(); ++i) {
      ASSERT_EQ(a[i].checksum(), b[i].checksum()) << "rim on the bounds, flip " << flip << " " << i;
      ASSERT_EQ(a[i].fvalues, b[i].fvalues) << "rim on the bounds, flip " << flip << " " << i;
    }
  }
}

// The sdf of the voxelizers' mesh on both devices (CPU, GPU).
std::pair<SparseGrid, SparseGrid> sdf_cpu_gpu(Voxelizer& cpu, Voxelizer& gpu, const GridSpec& spec, InsideMethod inside,
                                              int band) {
  VoxelizeOptions vo;
  vo.inside = inside;
  vo.band = band;
  const std::vector<TargetSpec> t = {make_target_spec(Target::kSdf)};
  return {cpu.voxelize(spec, vo, t)[0], gpu.voxelize(spec, vo, t)[0]};
}

// The band's bounds on the device (plane and edges, the box, the running minimum, the rows of a long
// box's bricks) skip only what the CPU's band finds beyond each voxel's minimum: the sdf of soups of
// hard triangles (long and thin down to 1e-5 voxels, needles, degenerate, axis-aligned slivers,
// small, large, far from the origin) on cubic and anisotropic voxels, bands of 1 and 3, equal to the
// CPU's bit for bit.
// A soup of 240 hard triangles (needles, near-degenerate, degenerate, axis-aligned slivers, tiny
// and large ones; soup 3 far from the origin).
static Mesh hard_soup(int soup) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Mesh m;
  for (int k = 0; k <= soup; ++k) {
    m = Mesh{};
    const float far = k == 3 ? 2000.0f : 0.0f;
    for (int t = 0; t < 240; ++t) {
      const int kind = t % 6;
      const float scale = kind == 4 ? 0.02f : (kind == 5 ? 0.9f : 0.3f);
      const Vec3f c{far + 0.6f * u(rng), 0.6f * u(rng), far + 0.6f * u(rng)};
      Vec3f v[3];
      for (Vec3f& p : v) p = {c.x + scale * u(rng), c.y + scale * u(rng), c.z + scale * u(rng)};
      const float w = std::pow(10.0f, -5.0f * (u(rng) + 1.0f) / 2.0f) * 0.01f;
      if (kind == 1) v[2] = near_edge(v[0], v[1], 0.5f, w, [&] { return u(rng); });
      if (kind == 2) v[2] = v[1];  // degenerate
      if (kind == 3) {             // an axis-aligned sliver
        v[1] = {v[0].x + scale, v[0].y, v[0].z};
        v[2] = {v[0].x + 0.3f * scale, v[0].y + w, v[0].z};
      }
      const uint32_t base = uint32_t(m.positions.size());
      for (const Vec3f& p : v) m.positions.push_back(p);
      for (uint32_t i = 0; i < 3; ++i) m.indices.push_back(base + i);
    }
  }
  return m;
}

TEST(InsideGpu, SdfOfHardTrianglesEqualsTheCpu) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer();
  CpuVoxelizer cpu;
  for (int soup = 0; soup < 4; ++soup) {
    const Mesh m = hard_soup(soup);
    cpu.set_mesh(m);
    gpu->set_mesh(m);
    Bounds b;
    for (const Vec3f& p : m.positions) b.extend({p.x, p.y, p.z});
    for (int grid = 0; grid < 2; ++grid) {
      GridOptions o;
      o.pad = 3;
      if (grid == 0)
        o.resolution = 96;
      else
        o.voxel_size = Vec3d{0.021, 0.013, 0.034};
      const GridSpec spec = make_grid_spec(b, o);
      for (int band : {1, 3, 24, kBandAll}) {
        const auto [a0, g0] = sdf_cpu_gpu(cpu, *gpu, spec, InsideMethod::kParity, band);
        const std::vector<SparseGrid> a = {a0}, g = {g0};
        const std::string what =
            "soup " + std::to_string(soup) + " grid " + std::to_string(grid) + " band " + std::to_string(band);
        ASSERT_GT(a[0].active_voxels(), 10000u) << what;
        ASSERT_EQ(a[0].keys, g[0].keys) << what;
        ASSERT_EQ(a[0].fvalues, g[0].fvalues) << what;
      }
    }
  }
}

// The inside test in the band's bricks only (the sdf alone) on the GPU: the whole test's bits at every
// band voxel, and the CPU's sdf, on the open meshes above.
TEST(InsideGpu, SdfSignInItsBandOnlyEqualsTheCpu) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer();
  CpuVoxelizer cpu;
  for (const auto& [name, mesh] : open_meshes())
    for (int res : {40, 80})
      for (int band : {1, 3}) {
        SCOPED_TRACE(name + " -r " + std::to_string(res) + " --band " + std::to_string(band));
        const GridSpec spec = grid_for(mesh, res, 2);
        cpu.set_mesh(mesh);
        gpu->set_mesh(mesh);
        const SparseGrid b = band_distance_cpu(mesh, spec, band);
        const SparseGrid want = inside_cpu(mesh, spec, InsideMethod::kWinding);
        const SparseGrid got = gpu_inside_centres(mesh, spec, InsideMethod::kWinding, &b, GpuOptions{});
        ASSERT_TRUE(same_at_band_voxels(b, got, want));
        VoxelizeOptions vo;
        vo.inside = InsideMethod::kWinding;
        vo.band = band;
        const SparseGrid a = cpu.voxelize(spec, vo, {make_target_spec(Target::kSdf)})[0];
        const SparseGrid g = gpu->voxelize(spec, vo, {make_target_spec(Target::kSdf)})[0];
        ASSERT_EQ(a.keys, g.keys);
        ASSERT_EQ(a.fvalues, g.fvalues);
      }
}

// The search's tree as the GPU builds it (keys, sort, shape and boxes on the device) is the host's,
// node for node: on the test meshes, the hard soups (whose degenerate triangles no margin holds for:
// loose, kept apart in the mesh's order), a mesh of one triangle, one of 230k and CAD slivers (cut
// into pieces: band_pieces).
TEST(InsideGpu, TheSearchTreeIsTheHosts) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  std::vector<std::pair<std::string, Mesh>> meshes;
  for (const Case& c : cases()) meshes.push_back({c.name, c.mesh});
  for (int soup = 0; soup < 4; ++soup) meshes.push_back({"soup " + std::to_string(soup), hard_soup(soup)});
  Mesh one;
  one.positions = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0.5f}};
  one.indices = {0, 1, 2};
  meshes.push_back({"one triangle", one});
  meshes.push_back({"tubes 230k", make_tubes(160, 120, 6, 3)});
  meshes.push_back({"cad slivers", make_cad(40, 128, 6)});  // (long triangles cut into pieces)
  size_t loose = 0, pieces = 0;
  for (const auto& [name, m] : meshes)
    for (int band : {3, kBandAll}) {
      const GridSpec spec = grid_for(m, 70, 2);
      const BandTree want = build_band_tree(m, to_grid_space(m, spec), mesh_grid_box(m, spec), band_setup(spec, band));
      const BandTree got = gpu_band_tree(m, spec, band, GpuOptions{});
      const std::string what = name + " band " + std::to_string(band);
      ASSERT_EQ(got.nodes.size(), want.nodes.size()) << what;
      ASSERT_EQ(0, std::memcmp(got.nodes.data(), want.nodes.data(), want.nodes.size() * sizeof(BandNode))) << what;
      ASSERT_EQ(got.tris.size(), want.tris.size()) << what;
      ASSERT_EQ(0, std::memcmp(got.tris.data(), want.tris.data(), want.tris.size() * sizeof(Vec3f))) << what;
      ASSERT_EQ(got.boxes.size(), want.boxes.size()) << what;
      ASSERT_EQ(0, std::memcmp(got.boxes.data(), want.boxes.data(), want.boxes.size() * sizeof(BandNodeBox))) << what;
      EXPECT_EQ(got.piece, want.piece) << what;
      pieces += want.boxes.size() + want.loose.size() / 3 - m.num_triangles();
      ASSERT_EQ(got.loose.size(), want.loose.size()) << what;
      ASSERT_EQ(0, std::memcmp(got.loose.data(), want.loose.data(), want.loose.size() * sizeof(Vec3f))) << what;
      EXPECT_EQ(got.top.empty, want.top.empty) << what;
      EXPECT_EQ(got.top.root.index, want.top.root.index) << what;
      EXPECT_EQ(got.top.root.count, want.top.root.count) << what;
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(got.top.root_lo[a], want.top.root_lo[a]) << what;
        EXPECT_EQ(got.top.root_hi[a], want.top.root_hi[a]) << what;
      }
      EXPECT_EQ(got.top.root_k2, want.top.root_k2) << what;
      EXPECT_EQ(got.top.root_k2e, want.top.root_k2e) << what;
      loose += want.loose.size();
    }
  EXPECT_GT(loose, 0u) << "no loose triangle tested";
  EXPECT_GT(pieces, 1000u) << "few triangles cut into pieces";
}

// Wide bands and --band all, which both devices take by the search (core/band_search.h): the
// same grids, and every voxel's distance under all.
TEST(InsideGpu, WideBandsAndEveryVoxelEqualTheCpu) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  const std::unique_ptr<Voxelizer> gpu = make_gpu_voxelizer();
  CpuVoxelizer cpu;
  std::vector<Case> all = cases();
  all.push_back({"tubes", make_tubes(20, 40, 6, 3), true});
  all.push_back({"cad slivers", make_cad(8, 96, 4), true});
  all.push_back({"open tubes", make_tubes(300, 6, 6, 8, 0.01, 0.4), false});
  for (const Case& c : all)
    for (int res : {40, 77}) {
      const GridSpec spec = grid_for(c.mesh, res, 2);
      cpu.set_mesh(c.mesh);
      gpu->set_mesh(c.mesh);
      for (int band : {12, 40, kBandAll}) {
        const auto [a0, b0] = sdf_cpu_gpu(cpu, *gpu, spec, InsideMethod::kWinding, band);
        const std::vector<SparseGrid> a = {a0}, b = {b0};
        const std::string what = c.name + " " + std::to_string(res) + " band " + std::to_string(band);
        ASSERT_EQ(a[0].keys, b[0].keys) << what;
        ASSERT_EQ(a[0].fvalues, b[0].fvalues) << what;
        EXPECT_EQ(a[0].background, b[0].background) << what;
        if (band == kBandAll) {
          EXPECT_EQ(a[0].active_voxels(), spec.num_voxels()) << what;
        }
      }
    }
  // A band whose pairs would not fit the memory budget takes the search on the device: the same grid.
  const Mesh tubes = make_tubes(20, 40, 6, 3);
  const GridSpec spec = grid_for(tubes, 64, 2);
  cpu.set_mesh(tubes);
  VoxelizeOptions vo;
  vo.inside = InsideMethod::kParity;
  vo.band = 20;
  const auto want = cpu.voxelize(spec, vo, {make_target_spec(Target::kSdf)});
  const BandSetup bs = band_setup(spec, vo.band);
  const std::vector<Vec3f> g = to_grid_space(tubes, spec);
  const double pairs = band_box_voxels(tubes, g, spec, bs) / 512.0;  // (at least the pairs' bricks)
  const double search = band_search_voxels(mesh_grid_box(tubes, spec), spec, bs) / 512.0;
  ASSERT_GT(pairs * 48, 4 * search * 2 * (2048 + 80)) << "the pairs would fit wherever the search does";
  GpuOptions small;
  small.memory_budget = uint64_t(2 * search * 2 * (2048 + 80) + 8e6);
  const std::unique_ptr<Voxelizer> tight = make_gpu_voxelizer(small);
  tight->set_mesh(tubes);
  VoxelizeStats st;
  const auto got = tight->voxelize(spec, vo, {make_target_spec(Target::kSdf)}, &st);
  ASSERT_EQ(want[0].keys, got[0].keys);
  ASSERT_EQ(want[0].fvalues, got[0].fvalues);
  bool searched = false;
  for (const auto& [name, ms] : st.stage_ms) searched |= name == "band_tree";
  EXPECT_TRUE(searched);
}

// The device holds the inside bits of one x-slab of bricks at a time when the grid is large: the same
// grid for every slab width (1 brick, 3 bricks, the whole grid).
// The winding test's columns whose patience runs out, handed on from the kernel with piece trees to
// the kernel without them (GpuOptions::winding_hand_on: always, never, by the rule), give the CPU's
// grids: a soup of 800 open triangles (2,400 boundary edges: trees, patience 2).
TEST(InsideGpu, ColumnsHandedOnGiveTheCpusGrid) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  const Mesh soup = random_soup(800, 0.3f, 47);
  CpuVoxelizer cpu;
  cpu.set_mesh(soup);
  for (int hand : {1, 0, -1}) {
    GpuOptions o;
    o.winding_hand_on = hand;
    auto gpu = make_gpu_voxelizer(o);
    gpu->set_mesh(soup);
    for (int res : {48, 128}) {
      const GridSpec spec = grid_for(soup, res, 2);
      VoxelizeOptions vo;
      vo.inside = InsideMethod::kWinding;
      for (const std::vector<TargetSpec>& t :
           {std::vector<TargetSpec>{make_target_spec(Target::kSolid), make_target_spec(Target::kSdf)},
            std::vector<TargetSpec>{make_target_spec(Target::kSdf)}}) {
        const auto a = cpu.voxelize(spec, vo, t);
        VoxelizeStats stats;
        const auto b = gpu->voxelize(spec, vo, t, &stats);
        for (size_t i = 0; i < t.size(); ++i) {
          ASSERT_EQ(a[i].keys, b[i].keys) << hand << " " << res << " " << i;
          ASSERT_EQ(a[i].checksum(), b[i].checksum()) << hand << " " << res << " " << i;
        }
        bool handed = false;
        for (const auto& st : stats.stage_ms) handed = handed || st.first == "inside_winding_rest";
        // (by the rule: too few columns, under its 8 rounds)
        EXPECT_EQ(handed, hand == 1) << hand << " " << res;
      }
    }
  }
}

TEST(InsideGpu, SlabsGiveTheSameGrid) {
  if (!query_gpu().available) GTEST_SKIP() << "no GPU";
  CpuVoxelizer cpu;
  std::vector<std::unique_ptr<Voxelizer>> gpus;
  for (uint32_t slab : {1u, 3u}) {
    GpuOptions o;
    o.inside_slab_bricks = slab;
    gpus.push_back(make_gpu_voxelizer(o));
  }
  std::vector<Case> all = cases();
  all.push_back({"tubes", make_tubes(20, 40, 6, 3), true});
  for (const Case& c : all)
    for (int res : {37, 128}) {
      const GridSpec spec = grid_for(c.mesh, res, 2);
      cpu.set_mesh(c.mesh);
      for (InsideMethod m : {InsideMethod::kParity, InsideMethod::kWinding, InsideMethod::kVote}) {
        VoxelizeOptions vo;
        vo.inside = m;
        const std::vector<TargetSpec> t = {make_target_spec(Target::kSolid), make_target_spec(Target::kSdf)};
        const auto a = cpu.voxelize(spec, vo, t);
        for (auto& gpu : gpus) {
          gpu->set_mesh(c.mesh);
          const auto b = gpu->voxelize(spec, vo, t);
          for (size_t i = 0; i < t.size(); ++i) {
            ASSERT_EQ(a[i].keys, b[i].keys) << c.name << " " << res << " " << inside_name(m) << " " << i;
            ASSERT_EQ(a[i].checksum(), b[i].checksum()) << c.name << " " << res << " " << inside_name(m) << " " << i;
          }
        }
      }
    }
}

}  // namespace
}  // namespace voxtile
