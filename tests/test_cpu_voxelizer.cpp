// The tiled CPU voxelizer against a direct per-voxel reference, plus its documented properties.
#include <gtest/gtest.h>

#include <map>
#include <queue>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/meshgen.h"
#include "core/tile_footprint.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using VoxelMap = std::map<std::tuple<int, int, int>, int>;

VoxelMap to_map(const SparseGrid& g) {
  VoxelMap m;
  g.for_each_active([&](int i, int j, int k, size_t, int, uint64_t at) {
    m[{i, j, k}] = g.value_type == ValueType::kInt32 ? g.ivalues[at] : 1;
  });
  return m;
}

// Direct reference: every triangle, every voxel of the grid-clipped enumerator, no tiles. Values
// are the number of triangles (count) or the smallest triangle index (id).
VoxelMap direct(const Mesh& mesh, const GridSpec& spec, VoxelMode mode, Target target = Target::kCount) {
  VoxelMap m;
  test::for_each_direct_fragment(mesh, spec, mode, [&](size_t t, const Vec3f*, int i, int j, int k) {
    if (target != Target::kId) {
      ++m[{i, j, k}];
    } else {
      auto [it, fresh] = m.emplace(std::make_tuple(i, j, k), int(t));
      if (!fresh) it->second = std::min(it->second, int(t));
    }
  });
  return m;
}

using FloatMap = std::map<std::tuple<int, int, int>, float>;

FloatMap to_fmap(const SparseGrid& g) {
  FloatMap m;
  g.for_each_active([&](int i, int j, int k, size_t, int, uint64_t at) { m[{i, j, k}] = g.fvalues[at]; });
  return m;
}

// Smallest voxel_distance over the triangles whose voxelization contains each voxel.
FloatMap direct_distance(const Mesh& mesh, const GridSpec& spec, VoxelMode mode) {
  FloatMap m;
  const Vec3f vs{float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  test::for_each_direct_fragment(mesh, spec, mode, [&](size_t, const Vec3f* v, int i, int j, int k) {
    const float d = voxel_distance(v, i, j, k, vs);
    auto [it, fresh] = m.emplace(std::make_tuple(i, j, k), d);
    if (!fresh) it->second = std::min(it->second, d);
  });
  return m;
}

void expect_matches_direct(const Mesh& mesh, const GridSpec& spec) {
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    VoxelizeOptions o;
    o.mode = mode;
    o.target = Target::kCount;
    const SparseGrid g = voxelize_cpu(mesh, spec, o);
    g.validate();
    const VoxelMap want = direct(mesh, spec, mode);
    ASSERT_EQ(to_map(g), want) << mode_name(mode) << " " << spec.describe();
    o.target = Target::kId;
    const SparseGrid ids = voxelize_cpu(mesh, spec, o);
    ids.validate();
    ASSERT_EQ(to_map(ids), direct(mesh, spec, mode, Target::kId)) << mode_name(mode) << " id " << spec.describe();
    o.target = Target::kDistance;
    const SparseGrid dist = voxelize_cpu(mesh, spec, o);
    dist.validate();
    ASSERT_EQ(to_fmap(dist), direct_distance(mesh, spec, mode)) << mode_name(mode) << " distance " << spec.describe();
    o.target = Target::kBinary;
    const SparseGrid bin = voxelize_cpu(mesh, spec, o);
    bin.validate();
    EXPECT_EQ(bin.active_voxels(), want.size());
    EXPECT_EQ(bin.keys, g.keys);
  }
}

TEST(TileFootprint, CoversEveryAcceptedVoxelAndKnowsItsColumnsEarly) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-20, 140), s(-60, 60);
  const Int3 dims{100, 77, 120};
  const Int3 tiles{(dims.x + kTileDim - 1) / kTileDim, (dims.y + kTileDim - 1) / kTileDim,
                   (dims.z + kTileDim - 1) / kTileDim};
  const VoxelBox grid{{0, 0, 0}, {dims.x - 1, dims.y - 1, dims.z - 1}};
  for (int n = 0; n < 600; ++n) {
    const float size = n % 3 == 1 ? 60.0f : 3.0f;  // huge and small triangles, and long slivers
    const Vec3f a{u(rng), u(rng), u(rng)};
    auto near = [&] { return Vec3f{a.x + s(rng) * size / 60, a.y + s(rng) * size / 60, a.z + s(rng) * size / 60}; };
    const Vec3f b = near();
    // A sliver: from a to a point up to 120 voxels away along a random direction, half a voxel wide.
    const Vec3f far{a.x + 2 * s(rng), a.y + 2 * s(rng), a.z + 2 * s(rng)};
    const bool sliver = n % 3 == 2;
    const TriSetup t = sliver ? setup_triangle(a, far, Vec3f{a.x + s(rng) / 120, a.y + s(rng) / 120, a.z + s(rng) / 120})
                              : setup_triangle(a, b, near());
    for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
      TileFootprint early;
      if (footprint_range(t, mode, dims, &early)) {
        TileFootprint full = early;
        footprint_planes(t, &full);
        EXPECT_EQ(early.columns(), full.columns());
      }
      std::set<uint64_t> covered;
      for_each_tile(t, mode, dims, tiles, [&](uint64_t tile) { covered.insert(tile); });
      auto check = [&](int i, int j, int k) {
        ASSERT_TRUE(covered.count(tile_index(tiles, i / kTileDim, j / kTileDim, k / kTileDim)))
            << mode_name(mode) << " voxel " << i << "," << j << "," << k;
      };
      for_each_voxel(t, mode, grid, dims, check);
    }
  }
}

TEST(CpuVoxelizer, BoxFacesOnTheGridBoundaryFillTheShell) {
  const Mesh box = make_box_mesh(0, 0, 0, 4, 4, 4);
  GridOptions go;
  go.voxel_size = Vec3d{1, 1, 1};
  const GridSpec spec = make_grid_spec(box.bounds(), go);
  ASSERT_EQ(spec.dims.x, 4);
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    VoxelizeOptions o;
    o.mode = mode;
    o.target = Target::kCount;
    const SparseGrid g = voxelize_cpu(box, spec, o);
    const VoxelMap m = to_map(g);
    EXPECT_EQ(m.size(), 56u) << mode_name(mode);  // 4^3 minus the 2^3 interior
    EXPECT_FALSE(m.count({1, 1, 1}));
    EXPECT_TRUE(m.count({3, 3, 3}));
    if (mode == VoxelMode::kConservative) {
      EXPECT_EQ(m.at({0, 0, 0}), 6);  // 2 triangles of 3 faces
      o.target = Target::kId;
      const VoxelMap ids = to_map(voxelize_cpu(box, spec, o));
      EXPECT_EQ(ids.at({0, 0, 0}), 0);  // triangles 0, 1 (z = 0), 4, 5 (y = 0), 8, 9 (x = 0)
      EXPECT_EQ(ids.at({3, 3, 3}), 2);  // triangles 2, 3 (z = 4), 6, 7 (y = 4), 10, 11 (x = 4)
      o.target = Target::kDistance;
      const SparseGrid dist = voxelize_cpu(box, spec, o);
      ASSERT_EQ(dist.value_type, ValueType::kFloat32);
      const FloatMap d = to_fmap(dist);
      EXPECT_EQ(d.at({0, 0, 0}), 0.5f);  // centre (0.5, 0.5, 0.5), faces at 0
      EXPECT_EQ(d.at({3, 1, 2}), 0.5f);
    }
  }
}

TEST(CpuVoxelizer, MatchesTheDirectReferenceOnRandomSoups) {
  const Mesh soup = test::random_soup(400, 10.0f, 1.25f, 3);
  for (int res : {1, 7, 33, 64, 100}) {
    GridOptions go;
    go.resolution = res;
    expect_matches_direct(soup, make_grid_spec(soup.bounds(), go));
  }
  GridOptions go;
  go.dims = Int3{37, 50, 23};
  expect_matches_direct(soup, make_grid_spec(soup.bounds(), go));
  go = GridOptions{};
  go.resolution = 40;
  go.pad = 3;
  expect_matches_direct(soup, make_grid_spec(soup.bounds(), go));
}

TEST(CpuVoxelizer, MatchesTheDirectReferenceOnARealMesh) {
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  GridOptions go;
  go.resolution = 97;
  expect_matches_direct(bunny, make_grid_spec(bunny.bounds(), go));
}

TEST(CpuVoxelizer, GeometryOutsideAUserBoxIsClipped) {
  const Mesh soup = test::random_soup(300, 10.0f, 1.25f, 5);
  GridOptions go;
  go.voxel_size = Vec3d{0.25, 0.25, 0.25};
  go.bbox = test::make_bounds(2, 3, 4, 6, 5, 7);
  expect_matches_direct(soup, make_grid_spec(soup.bounds(), go));
}

TEST(CpuVoxelizer, ResultDoesNotDependOnThreadCount) {
  const Mesh soup = test::random_soup(3000, 10.0f, 1.25f, 9);
  GridOptions go;
  go.resolution = 120;
  const GridSpec spec = make_grid_spec(soup.bounds(), go);
  VoxelizeOptions o;
  o.target = Target::kCount;
  o.threads = 1;
  const uint64_t one = voxelize_cpu(soup, spec, o).checksum();
  o.threads = 2;
  EXPECT_EQ(voxelize_cpu(soup, spec, o).checksum(), one);
  o.threads = 0;
  EXPECT_EQ(voxelize_cpu(soup, spec, o).checksum(), one);
}

// Flood fill from the grid corner through 6-connected empty voxels; true if `probe` is reached.
bool leaks(const SparseGrid& g, const Int3& probe) {
  const Int3 d = g.spec.dims;
  std::vector<uint8_t> solid(size_t(d.x) * d.y * d.z, 0), seen(solid.size(), 0);
  auto idx = [&](int i, int j, int k) { return (size_t(i) * d.y + j) * d.z + k; };
  g.for_each_active([&](int i, int j, int k, size_t, int) { solid[idx(i, j, k)] = 1; });
  std::queue<Int3> q;
  q.push({0, 0, 0});
  seen[0] = 1;
  while (!q.empty()) {
    const Int3 p = q.front();
    q.pop();
    if (p.x == probe.x && p.y == probe.y && p.z == probe.z) return true;
    const int nb[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    for (const auto& n : nb) {
      const int i = p.x + n[0], j = p.y + n[1], k = p.z + n[2];
      if (i < 0 || j < 0 || k < 0 || i >= d.x || j >= d.y || k >= d.z) continue;
      const size_t id = idx(i, j, k);
      if (seen[id] || solid[id]) continue;
      seen[id] = 1;
      q.push({i, j, k});
    }
  }
  return false;
}

TEST(CpuVoxelizer, ThinVoxelizationOfAClosedSurfaceIs6Separating) {
  for (int res : {24, 61, 96}) {
    const Mesh sphere = make_uv_sphere(0.1f, -0.2f, 0.3f, 1.0f, 23, 37);
    GridOptions go;
    go.resolution = res;
    go.pad = 2;
    const GridSpec spec = make_grid_spec(sphere.bounds(), go);
    VoxelizeOptions o;
    o.mode = VoxelMode::kThin;
    const SparseGrid thin = voxelize_cpu(sphere, spec, o);
    const Int3 centre{spec.dims.x / 2, spec.dims.y / 2, spec.dims.z / 2};
    EXPECT_FALSE(leaks(thin, centre)) << "resolution " << res;
    o.mode = VoxelMode::kConservative;
    const SparseGrid cons = voxelize_cpu(sphere, spec, o);
    EXPECT_FALSE(leaks(cons, centre));
    EXPECT_LT(thin.active_voxels(), cons.active_voxels());
  }
}

TEST(CpuVoxelizer, LargeSparseGridsNeverMaterialiseTheDenseGrid) {
  // A long sliver across an 8192^3 grid: a few tens of thousands of voxels, not 2^39.
  const Mesh m = test::sliver_8192();
  const GridSpec spec = make_grid_spec(m.bounds(), test::sliver_grid());
  ASSERT_EQ(spec.dims.x, 8192);
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    VoxelizeOptions o;
    o.mode = mode;
    const SparseGrid g = voxelize_cpu(m, spec, o);
    g.validate();
    EXPECT_EQ(to_map(g), direct(m, spec, mode));
    EXPECT_GT(g.active_voxels(), 8000u);
    EXPECT_LT(g.num_bricks(), 20000u);
  }
}

TEST(CpuVoxelizer, EmptyResultWhenTheMeshMissesTheGrid) {
  const Mesh box = make_box_mesh(0, 0, 0, 1, 1, 1);
  const SparseGrid g = voxelize_cpu(box, make_grid_spec(box.bounds(), test::grid_beside_unit_box()), VoxelizeOptions{});
  EXPECT_EQ(g.num_bricks(), 0u);
  EXPECT_EQ(g.active_voxels(), 0u);
}

// The GPU's choice of pairs scattered to their tiles for large meshes rests on this measure of the
// triangles' order (core/mesh.h kScatterLocalOrder): the fraction of neighbours
// closer than a tile of 32 voxels at 1024^3.
TEST(MeshOrder, NeighbourDistancesTellListedSurfacesFromShuffledOnes) {
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  const Mesh tubes = make_tubes(40, 60, 6, 7, 0.01, 1.5);
  const Mesh fine = subdivide(bunny, 2), quarters = subdivide(bunny, 2, true);
  auto local = [](const Mesh& m) {
    const Bounds b = m.bounds();
    const double extent = std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z});
    return fraction_below(neighbour_distances(m), extent / 32);
  };
  // Listed along the surface (the scan's order; the tubes ring by ring; subdivided, each parent's
  // children together or the children quarter by quarter) against the same triangles shuffled.
  for (const Mesh* m : {&bunny, &tubes, &fine, &quarters}) {
    Mesh shuffled = *m;
    shuffle_triangles(shuffled, 3);
    EXPECT_GT(local(*m), 2 * kScatterLocalOrder);
    EXPECT_LT(local(shuffled), kScatterLocalOrder / 10);
  }
  EXPECT_GT(local(tubes), 0.99);
  // Every pair of a small mesh, ascending; none for fewer than two triangles; a non-finite vertex far.
  Mesh strip;
  for (uint32_t i = 0; i < 6; ++i) strip.positions.push_back(Vec3f{float(i * i), 0.0f, 0.0f});
  for (uint32_t i = 0; i < 5; ++i) strip.indices.insert(strip.indices.end(), {5 - i, 0, 1});
  EXPECT_EQ(neighbour_distances(strip), (std::vector<float>{3, 5, 7, 9}));  // (first vertices at x = 25, 16, 9, 4, 1)
  EXPECT_EQ(fraction_below(neighbour_distances(strip), 6.0), 0.5);
  EXPECT_EQ(fraction_below(neighbour_distances(strip), 100.0), 1.0);
  strip.positions[3].x = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(neighbour_distances(strip).back(), std::numeric_limits<float>::infinity());
  strip.indices.resize(3);
  EXPECT_TRUE(neighbour_distances(strip).empty());
  EXPECT_EQ(fraction_below({}, 1.0), 0.0);
}

}  // namespace
}  // namespace voxtile
