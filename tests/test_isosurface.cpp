// Meshes from grids (core/isosurface.h): closed, oriented, manifold marching cubes on random
// occupancy (every ambiguous case), analytic spheres and tori; cubes exact in volume; the command.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/isosurface.h"
#include "core/sparse_grid.h"
#include "core/voxelizer.h"
#include "helpers.h"
#include "io/grid_reader.h"
#include "io/mesh_reader.h"
#include "io/mesh_writer.h"
#include "kernels/api.h"

namespace voxtile {
namespace {

using test::expect_closed_manifold;
using test::signed_volume;

// Directed edge counts of a triangle mesh.
std::map<std::pair<uint32_t, uint32_t>, int> directed_edges(const Mesh& m) {
  std::map<std::pair<uint32_t, uint32_t>, int> e;
  for (size_t t = 0; t < m.num_triangles(); ++t)
    for (int k = 0; k < 3; ++k) ++e[{m.indices[3 * t + size_t(k)], m.indices[3 * t + size_t((k + 1) % 3)]}];
  return e;
}

// Euler characteristic V - E + F of the vertices used.
int64_t euler(const Mesh& m) {
  std::set<uint32_t> used(m.indices.begin(), m.indices.end());
  return int64_t(used.size()) - int64_t(directed_edges(m).size() / 2) + int64_t(m.num_triangles());
}

GridSpec unit_spec(int n, double size = 1.0) {
  GridSpec s;
  s.dims = {n, n, n};
  s.voxel_size = {size, size, size};
  s.origin = {0, 0, 0};
  return s;
}

SparseGrid occupancy(const GridSpec& spec, const std::function<bool(int, int, int)>& inside) {
  SparseGridBuilder b(spec, ValueType::kNone, "solid", "test");
  for (int i = 0; i < spec.dims.x; ++i)
    for (int j = 0; j < spec.dims.y; ++j)
      for (int k = 0; k < spec.dims.z; ++k)
        if (inside(i, j, k)) b.add(i, j, k);
  return b.build();
}

// A narrow-band level set of an analytic signed distance (voxels within `band` voxels).
SparseGrid level_set(const GridSpec& spec, const std::function<double(double, double, double)>& sdf, double band) {
  SparseGridBuilder b(spec, ValueType::kFloat32, "sdf", "test");
  for (int i = 0; i < spec.dims.x; ++i)
    for (int j = 0; j < spec.dims.y; ++j)
      for (int k = 0; k < spec.dims.z; ++k) {
        const Vec3d c = spec.voxel_center(i, j, k);
        const float d = float(sdf(c.x, c.y, c.z));
        if (std::abs(d) <= band * spec.voxel_size.x) {
          uint32_t bits;
          std::memcpy(&bits, &d, 4);
          b.add(i, j, k, &bits);
        }
      }
  return b.build();
}

TEST(Isosurface, TableFromTheFaceRule) {
  const McTable& t = mc_table();
  EXPECT_EQ(t.count[0], 0);
  EXPECT_EQ(t.count[255], 0);
  int max = 0;
  for (int p = 0; p < 256; ++p) {
    max = std::max<int>(max, t.count[p]);
    EXPECT_EQ(t.count[p] == 0, p == 0 || p == 255) << p;
    for (int k = 0; k < 3 * t.count[p]; ++k) ASSERT_LT(t.edges[p][k], 12);
  }
  EXPECT_EQ(t.count[1], 1);  // one corner: one triangle
  EXPECT_EQ(t.count[3], 2);  // one edge: a quad
  EXPECT_LE(max, 12);
}

TEST(Isosurface, RandomOccupancyGivesClosedOrientedManifolds) {
  // Random voxels hit every sign pattern, the ambiguous faces included: the face rule must close
  // every surface, whatever the neighbours.
  for (unsigned seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    const GridSpec spec = unit_spec(11);
    const SparseGrid g = occupancy(spec, [&](int, int, int) { return rng() % 100 < 30 + 8 * seed; });
    const Mesh smooth = grid_to_mesh(g, {0.0f, true});
    expect_closed_manifold(smooth, "smooth seed " + std::to_string(seed));
    EXPECT_GT(signed_volume(smooth), 0.0) << seed;
    // Cubes: watertight and oriented (each directed edge balanced by its reverse), exact volume.
    const Mesh cubes = grid_to_mesh(g, {0.0f, false});
    const auto e = directed_edges(cubes);
    for (const auto& [edge, n] : e)
      ASSERT_EQ(e.count({edge.second, edge.first}) ? e.at({edge.second, edge.first}) : 0, n);
    EXPECT_NEAR(signed_volume(cubes), double(g.active_voxels()), 1e-6 * double(g.active_voxels()));
  }
}

TEST(Isosurface, SphereAndTorusLevelSets) {
  const double r = 10.3;
  const GridSpec spec = unit_spec(32);
  auto sphere = [&](double x, double y, double z) {
    return std::sqrt((x - 16) * (x - 16) + (y - 16.2) * (y - 16.2) + (z - 15.9) * (z - 15.9)) - r;
  };
  const SparseGrid g = level_set(spec, sphere, 3.0);
  const Mesh m = grid_to_mesh(g, {0.0f, true});
  expect_closed_manifold(m, "sphere");
  EXPECT_EQ(euler(m), 2);
  const double volume = 4.0 / 3.0 * M_PI * r * r * r;
  EXPECT_NEAR(signed_volume(m), volume, 0.02 * volume);
  // Vertices on the surface (linear interpolation of a distance: within a small fraction of a voxel),
  // normals outward along the radius.
  ASSERT_EQ(m.normals.size(), m.positions.size());
  for (size_t v = 0; v < m.positions.size(); ++v) {
    const Vec3f p = m.positions[v];
    ASSERT_NEAR(sphere(p.x, p.y, p.z), 0.0, 0.05);
    const double rx = p.x - 16, ry = p.y - 16.2, rz = p.z - 15.9, len = std::sqrt(rx * rx + ry * ry + rz * rz);
    ASSERT_GT((rx * m.normals[v].x + ry * m.normals[v].y + rz * m.normals[v].z) / len, 0.98) << v;
  }
  // The iso value moves the surface (within the band less a cell's diagonal): radius r + 1.
  const Mesh grown = grid_to_mesh(g, {1.0f, true});
  expect_closed_manifold(grown, "grown sphere");
  EXPECT_NEAR(signed_volume(grown), 4.0 / 3.0 * M_PI * std::pow(r + 1, 3), 0.02 * volume);

  auto torus = [](double x, double y, double z) {
    const double q = std::sqrt((x - 16) * (x - 16) + (y - 16) * (y - 16)) - 9.0;
    return std::sqrt(q * q + (z - 16.3) * (z - 16.3)) - 3.6;
  };
  const Mesh t = grid_to_mesh(level_set(spec, torus, 3.0), {0.0f, true});
  expect_closed_manifold(t, "torus");
  EXPECT_EQ(euler(t), 0);
  EXPECT_NEAR(signed_volume(t), 2 * M_PI * M_PI * 9.0 * 3.6 * 3.6, 0.03 * 2 * M_PI * M_PI * 9.0 * 3.6 * 3.6);
}

TEST(Isosurface, NormalsInEveryFormatThatHoldsThem) {
  const GridSpec spec = unit_spec(20);
  const SparseGrid g = level_set(spec, [](double x, double y, double z) {
    return std::sqrt((x - 10) * (x - 10) + (y - 10.2) * (y - 10.2) + (z - 9.9) * (z - 9.9)) - 6.3;
  }, 3.0);
  const Mesh m = grid_to_mesh(g, {0.0f, true});
  ASSERT_EQ(m.normals.size(), m.positions.size());
  test::TempDir dir;
  // Read back (natively): every triangle corner has its position and gradient normal (text is
  // written in shortest round-trip form).
  for (const char* name : {"a.obj", "a.glb", "a.ply", "b.ply", "a.off"}) {
    const std::string path = dir.file(name);
    write_mesh(m, path, std::string(name) == "b.ply");
    const Mesh r = load_mesh(path).mesh;
    ASSERT_EQ(r.num_triangles(), m.num_triangles()) << name;
    ASSERT_EQ(r.normals.size(), r.positions.size()) << name;
    for (size_t c = 0; c < m.indices.size(); ++c) {
      const Vec3f p = m.positions[m.indices[c]], q = r.positions[r.indices[c]];
      const Vec3f n = m.normals[m.indices[c]], k = r.normals[r.indices[c]];
      ASSERT_TRUE(p.x == q.x && p.y == q.y && p.z == q.z) << name << " corner " << c;
      // (the OBJ reader renormalizes its normals, as Assimp does: a unit vector moves by an ulp)
      ASSERT_NEAR(n.x, k.x, 1e-6) << name << " corner " << c;
      ASSERT_NEAR(n.y, k.y, 1e-6) << name << " corner " << c;
      ASSERT_NEAR(n.z, k.z, 1e-6) << name << " corner " << c;
    }
  }
}

void expect_same_mesh(const Mesh& a, const Mesh& b, const std::string& what) {
  ASSERT_EQ(a.positions.size(), b.positions.size()) << what;
  ASSERT_EQ(a.indices.size(), b.indices.size()) << what;
  ASSERT_EQ(a.normals.size(), b.normals.size()) << what;
  auto same_bits = [](const Vec3f& x, const Vec3f& y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  EXPECT_TRUE(std::equal(a.positions.begin(), a.positions.end(), b.positions.begin(), same_bits)) << what;
  EXPECT_TRUE(std::equal(a.normals.begin(), a.normals.end(), b.normals.begin(), same_bits)) << what;
  EXPECT_TRUE(a.indices == b.indices) << what;
}

// Cubes the slow way: each active voxel's faces towards inactive voxels (a set of the voxels), in
// voxel order, the corners sorted and searched.
Mesh every_voxel_faces(const SparseGrid& g) {
  std::set<std::array<int32_t, 3>> active;
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) { active.insert({i, j, k}); });
  const IsoKeys keys = IsoKeys::make(g.spec.dims.x + 1, g.spec.dims.y + 1, g.spec.dims.z + 1);
  const int face[6][4][3] = {
      {{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, 0}}, {{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 0, 1}},
      {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}}, {{0, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 1, 0}},
      {{0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {1, 0, 0}}, {{0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}}};
  const int dir[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  std::vector<uint64_t> quads;
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int) {
    for (int d = 0; d < 6; ++d) {
      if (active.count({i + dir[d][0], j + dir[d][1], k + dir[d][2]})) continue;
      for (int c = 0; c < 4; ++c) quads.push_back(keys.key(i + face[d][c][0], j + face[d][c][1], k + face[d][c][2]));
    }
  });
  std::vector<uint64_t> verts = quads;
  std::sort(verts.begin(), verts.end());
  verts.erase(std::unique(verts.begin(), verts.end()), verts.end());
  Mesh m;
  for (uint64_t v : verts) {
    int64_t i, j, k;
    keys.ijk(v, i, j, k);
    m.positions.push_back({float(g.spec.origin.x + double(i) * g.spec.voxel_size.x),
                           float(g.spec.origin.y + double(j) * g.spec.voxel_size.y),
                           float(g.spec.origin.z + double(k) * g.spec.voxel_size.z)});
  }
  auto index = [&](uint64_t key) {
    return uint32_t(std::lower_bound(verts.begin(), verts.end(), key) - verts.begin());
  };
  for (size_t q = 0; q < quads.size(); q += 4) {
    const uint32_t id[4] = {index(quads[q]), index(quads[q + 1]), index(quads[q + 2]), index(quads[q + 3])};
    for (uint32_t t : {id[0], id[1], id[2], id[0], id[2], id[3]}) m.indices.push_back(t);
  }
  return m;
}

// Marching cubes the slow way: every cell of the grown grid (-1 to dims - 1 on each axis) in
// ascending key order, each with its pattern, the vertex keys sorted and searched.
Mesh every_cell_mesh(const SparseGrid& g, float iso, const SparseGrid* inside) {
  const McTable& t = mc_table();
  const IsoField f = iso_field(g, inside);
  const IsoKeys keys = IsoKeys::make(g.spec.dims.x, g.spec.dims.y, g.spec.dims.z);
  std::vector<uint64_t> cells;
  for (int64_t i = -1; i < g.spec.dims.x; ++i)
    for (int64_t j = -1; j < g.spec.dims.y; ++j)
      for (int64_t k = -1; k < g.spec.dims.z; ++k) cells.push_back(keys.key(i, j, k));
  std::sort(cells.begin(), cells.end());
  std::vector<uint64_t> corners;
  for (uint64_t c : cells) {
    int64_t i, j, k;
    keys.ijk(c, i, j, k);
    const int p = f.pattern(i, j, k, iso);
    uint64_t out[36];
    iso_cell_corners(t, keys, p, i, j, k, out);
    corners.insert(corners.end(), out, out + 3 * t.count[p]);
  }
  std::vector<uint64_t> verts = corners;
  std::sort(verts.begin(), verts.end());
  verts.erase(std::unique(verts.begin(), verts.end()), verts.end());
  Mesh m;
  m.positions.resize(verts.size());
  m.normals.resize(verts.size());
  const double origin[3] = {g.spec.origin.x, g.spec.origin.y, g.spec.origin.z},
               size[3] = {g.spec.voxel_size.x, g.spec.voxel_size.y, g.spec.voxel_size.z};
  for (size_t v = 0; v < verts.size(); ++v)
    iso_vertex(f, t, keys, verts[v], iso, origin, size, &m.positions[v].x, &m.normals[v].x);
  for (uint64_t c : corners)
    m.indices.push_back(uint32_t(std::lower_bound(verts.begin(), verts.end(), c) - verts.begin()));
  return m;
}

TEST(Isosurface, BrickByBrickEqualsEveryCellsPattern) {
  // (and the cubes: every voxel's faces)
  // The CPU's marching cubes visits only the grown grid's bricks near active voxels (and near the
  // inside's boundary), reading each brick's 9^3 corners from the grid's bricks: on grids of every
  // size modulo 8 (a brick above that the grown grid lacks, bricks cut by the grid's end), random
  // occupancy, random bands of float values with and without an inside grid (interior bricks of it
  // skipped) and iso values off 0, it must give the mesh of every cell's pattern.
  const Int3 sizes[] = {{1, 1, 1}, {6, 7, 5}, {8, 9, 15}, {17, 16, 3}, {23, 10, 31}, {40, 6, 33}, {35, 34, 41}};
  unsigned seed = 0;
  for (const Int3& d : sizes) {
    GridSpec spec = unit_spec(1);
    spec.dims = d;
    std::mt19937 rng(++seed);
    const int fill = 20 + int(rng() % 50);
    const SparseGrid occ = occupancy(spec, [&](int, int, int) { return int(rng() % 100) < fill; });
    const std::string at = std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
    expect_same_mesh(grid_to_mesh(occ, {0.0f, true}), every_cell_mesh(occ, 0.0f, nullptr), "occupancy " + at);
    expect_same_mesh(grid_to_mesh(occ, {0.0f, false}), every_voxel_faces(occ), "cubes " + at);
    // Sparse occupancy (a voxel here and there, as from points binned finely): bricks above are
    // visited only where a brick's last plane holds voxels.
    const SparseGrid sparse = occupancy(spec, [&](int, int, int) { return rng() % 300 == 0; });
    expect_same_mesh(grid_to_mesh(sparse, {0.0f, true}), every_cell_mesh(sparse, 0.0f, nullptr), "sparse " + at);
    expect_same_mesh(grid_to_mesh(sparse, {0.0f, false}), every_voxel_faces(sparse), "sparse cubes " + at);
    // A solid ball (full interior bricks) with a band of values around a sphere.
    const double cx = d.x / 2.0, cy = d.y / 2.0, cz = d.z / 2.0, r = 0.35 * std::min({d.x, d.y, d.z}) + 0.7;
    auto sphere = [&](double x, double y, double z) {
      return std::sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz)) - r;
    };
    const SparseGrid band = level_set(spec, sphere, 1.0 + double(rng() % 3));
    const SparseGrid ball = occupancy(spec, [&](int i, int j, int k) { return sphere(i + 0.5, j + 0.5, k + 0.5) < 0; });
    // An inside of full bricks (one of them interior) whose faces lie on brick faces, away from the
    // band of a small sphere in a corner (as across a hole).
    const SparseGrid box =
        occupancy(spec, [&](int i, int j, int k) { return i >= 8 && i < 32 && j >= 8 && j < 32 && k >= 8 && k < 32; });
    expect_same_mesh(grid_to_mesh(box, {0.0f, false}), every_voxel_faces(box), "cubes of the box " + at);
    expect_same_mesh(grid_to_mesh(box, {0.0f, true}), every_cell_mesh(box, 0.0f, nullptr), "the box " + at);
    SparseGrid box_runs = box;  // full bricks held as runs, as solids come from the voxelizers
    box_runs.make_runs();
    expect_same_mesh(grid_to_mesh(box_runs, {0.0f, true}), every_cell_mesh(box, 0.0f, nullptr), "the box's runs " + at);
    expect_same_mesh(grid_to_mesh(box_runs, {0.0f, false}), every_voxel_faces(box), "cubes of the box's runs " + at);
    expect_same_mesh(grid_to_mesh(ball, {0.0f, false}), every_voxel_faces(ball), "cubes of the ball " + at);
    const SparseGrid corner = level_set(
        spec,
        [](double x, double y, double z) {
          return std::sqrt((x - 3) * (x - 3) + (y - 2.5) * (y - 2.5) + (z - 3) * (z - 3)) - 1.8;
        },
        1.5);
    for (float iso : {0.0f, 0.37f, -0.61f}) {
      const std::string what = at + " iso " + std::to_string(iso);
      expect_same_mesh(grid_to_mesh(band, {iso, true}), every_cell_mesh(band, iso, nullptr), "band " + what);
      expect_same_mesh(grid_to_mesh(band, {iso, true}, &ball), every_cell_mesh(band, iso, &ball), "band, ball " + what);
      expect_same_mesh(grid_to_mesh(band, {iso, true}, &occ), every_cell_mesh(band, iso, &occ), "band, random " + what);
      expect_same_mesh(grid_to_mesh(corner, {iso, true}, &box), every_cell_mesh(corner, iso, &box),
                       "corner, box " + what);
      expect_same_mesh(grid_to_mesh(corner, {iso, true}, &box_runs), every_cell_mesh(corner, iso, &box),
                       "corner, box held as runs " + what);
    }
  }
}

TEST(Isosurface, CubesOfABoxAndSmoothOccupancy) {
  const GridSpec spec = unit_spec(20, 0.5);
  const SparseGrid box =
      occupancy(spec, [](int i, int j, int k) { return i >= 3 && i < 12 && j >= 0 && j < 5 && k >= 7 && k < 19; });
  const Mesh c = grid_to_mesh(box, {0.0f, false});
  expect_closed_manifold(c, "box cubes");
  EXPECT_EQ(euler(c), 2);
  EXPECT_NEAR(signed_volume(c), 9 * 5 * 12 * 0.125, 1e-9);
  const Mesh s = grid_to_mesh(box, {0.0f, true});
  expect_closed_manifold(s, "box smooth");
  EXPECT_EQ(euler(s), 2);
  EXPECT_GT(signed_volume(s), 0.0);
  EXPECT_LT(signed_volume(s), 9 * 5 * 12 * 0.125);
  // Vector grids are refused.
  SparseGrid v = box;
  v.value_type = ValueType::kVec3f;
  EXPECT_THROW(grid_to_mesh(v, {}), Error);
}

TEST(MeshCli, MeshesFromGridsAndStraightFromMeshes) {
  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  test::RunResult r =
      test::run_voxtile({"voxelize", bunny, "-o", dir.file("b.vdb"), "-r", "64", "-t", "sdf", "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"mesh", dir.file("b.vdb"), "-o", dir.file("a.ply"), "--stats", "-d", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"triangles\""), std::string::npos);
  EXPECT_GT(load_mesh(dir.file("a.ply")).mesh.num_triangles(), 10000u);
  // Straight from the mesh: the sdf, signed off its band by the solid, so the holes in the bunny's
  // base (where the inside test's sign jumps with no triangle near, and the band of a.ply's level set
  // is missing) are closed too: a closed manifold sphere. The same bytes every time.
  r = test::run_voxtile({"mesh", bunny, "-r", "64", "-o", dir.file("b.ply"), "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"mesh", bunny, "-r", "64", "-o", dir.file("b2.ply"), "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::read_file(dir.file("b.ply")) == test::read_file(dir.file("b2.ply")));
  const MeshLoadResult back = load_mesh(dir.file("b.ply"));
  EXPECT_GT(back.mesh.num_triangles(), 10000u);
  expect_closed_manifold(back.mesh, "bunny remeshed");
  EXPECT_EQ(euler(back.mesh), 2);
  // Cubes from a solid; every output format.
  for (const char* out : {"c.obj", "c.stl", "c.glb", "c.ply", "c.off"}) {
    r = test::run_voxtile({"mesh", bunny, "-r", "32", "--style", "cubes", "-o", dir.file(out), "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << out << r.err;
    EXPECT_GT(load_mesh(dir.file(out)).mesh.num_triangles(), 1000u) << out;
  }
  // Cubes of a float field, an unknown grid, a vector grid: usage errors; a missing file: input.
  EXPECT_EQ(test::run_voxtile({"mesh", dir.file("b.vdb"), "--style", "cubes", "-o", dir.file("x.ply")}).exit_code, 2);
  EXPECT_EQ(test::run_voxtile({"mesh", dir.file("b.vdb"), "--grid", "nope", "-o", dir.file("x.ply")}).exit_code, 2);
  EXPECT_EQ(test::run_voxtile({"mesh", dir.file("none.vdb"), "-o", dir.file("x.ply")}).exit_code, 3);
  EXPECT_EQ(test::run_voxtile({"mesh", dir.file("b.vdb"), "-o", dir.file("x.xyz")}).exit_code, 2);
  EXPECT_FALSE(test::file_exists(dir.file("x.ply")));
}

double area(const Mesh& m) {
  double a = 0;
  for (size_t t = 0; t < m.num_triangles(); ++t) {
    const Vec3f p = m.vertex(t, 0), q = m.vertex(t, 1), r = m.vertex(t, 2);
    const double u[3] = {double(q.x) - p.x, double(q.y) - p.y, double(q.z) - p.z},
                 v[3] = {double(r.x) - p.x, double(r.y) - p.y, double(r.z) - p.z};
    const double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    a += 0.5 * std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
  }
  return a;
}

// Solids of CSG scripts through the command line (`csg --solid`, then `mesh`): closed manifolds of
// the right topology (smooth), volume within a band of half a voxel around the surface (area x
// voxel / 2), area within 12% (smooth; cubes' area is the staircase's, larger).
TEST(MeshCli, CsgSolidsHaveTheirVolumeAndArea) {
  test::TempDir dir;
  struct Case {
    const char* name;
    const char* script;
    double volume, area;
    int euler;
  };
  const double pi = M_PI;
  const Case cases[] = {
      {"sphere", "add sphere center 0.1 -0.2 0.05 radius 1\n", 4.0 / 3.0 * pi, 4 * pi, 2},
      {"box", "add box center 0 0 0 size 1.7 1.1 0.9 rotate 20 35 10\n", 1.7 * 1.1 * 0.9,
       2 * (1.7 * 1.1 + 1.7 * 0.9 + 1.1 * 0.9), 2},
      {"torus", "add torus center 0 0 0 major 1 minor 0.35 rotate 30 0 0\n", 2 * pi * pi * 1 * 0.35 * 0.35,
       4 * pi * pi * 1 * 0.35, 0},
  };
  for (const Case& c : cases) {
    const std::string csg = dir.file(std::string(c.name) + ".csg"), vdb = dir.file(std::string(c.name) + ".vdb");
    std::ofstream(csg) << c.script;
    test::RunResult r =
        test::run_voxtile({"csg", csg, "--solid", "-r", "80", "--pad", "2", "-o", vdb, "-d", "cpu", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const SparseGrid g = read_grid_file(vdb).grids[0];
    const double voxel = g.spec.voxel_size.x;
    for (const char* style : {"smooth", "cubes"}) {
      const std::string out = dir.file(std::string(c.name) + "_" + style + ".ply");
      r = test::run_voxtile({"mesh", vdb, "--style", style, "-o", out, "-d", "cpu", "-q"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const Mesh m = load_mesh(out).mesh;
      const std::string what = std::string(c.name) + " " + style;
      EXPECT_NEAR(signed_volume(m), c.volume, c.area * voxel * 0.5 + 1e-9) << what;
      if (std::string(style) == "smooth") {
        expect_closed_manifold(m, what);
        EXPECT_EQ(euler(m), c.euler) << what;
        // Marching cubes of occupancy (vertices at edge midpoints) terraces: a few per cent more area.
        EXPECT_NEAR(area(m), c.area * 1.06, 0.06 * c.area) << what;
      } else {
        // Cubes: watertight and oriented (voxels meeting along an edge share it four times).
        const auto e = directed_edges(m);
        for (const auto& [edge, n] : e)
          ASSERT_EQ(e.count({edge.second, edge.first}) ? e.at({edge.second, edge.first}) : 0, n) << what;
        EXPECT_NEAR(signed_volume(m), double(g.active_voxels()) * voxel * voxel * voxel, 1e-6 * c.volume) << what;
      }
    }
  }
}

// A copy of a grid's voxels (and values) shifted by `shift` voxels into a grid of `dims`, with its
// origin moved back by as much, so that every voxel keeps its world place.
SparseGrid shifted_copy(const SparseGrid& g, const Int3& dims, const Int3& shift) {
  GridSpec spec = g.spec;
  spec.dims = dims;
  spec.origin = {g.spec.origin.x - shift.x * g.spec.voxel_size.x, g.spec.origin.y - shift.y * g.spec.voxel_size.y,
                 g.spec.origin.z - shift.z * g.spec.voxel_size.z};
  SparseGridBuilder b(spec, g.value_type, g.name, "test");
  g.for_each_active([&](int32_t i, int32_t j, int32_t k, size_t, int, uint64_t at) {
    uint32_t bits = 0;
    if (g.value_type == ValueType::kFloat32) std::memcpy(&bits, &g.fvalues[at], 4);
    b.add(i + shift.x, j + shift.y, k + shift.z, g.value_type == ValueType::kFloat32 ? &bits : nullptr);
  });
  SparseGrid out = b.build();
  out.background = g.background;
  return out;
}

// The same mesh (indices and normals bit for bit, positions to a float's step at their magnitude,
// since the shifted grid computes them from other grid coordinates).
void expect_same_mesh_moved(const Mesh& a, const Mesh& b, const std::string& what) {
  ASSERT_EQ(a.positions.size(), b.positions.size()) << what;
  ASSERT_GT(a.num_triangles(), 0u) << what;
  EXPECT_TRUE(a.indices == b.indices) << what;
  ASSERT_EQ(a.normals.size(), b.normals.size()) << what;
  EXPECT_TRUE(std::equal(a.normals.begin(), a.normals.end(), b.normals.begin(), [](const Vec3f& x, const Vec3f& y) {
    return std::memcmp(&x, &y, sizeof x) == 0;
  })) << what;
  double worst = 0;
  for (size_t v = 0; v < a.positions.size(); ++v)
    worst = std::max({worst, std::abs(double(a.positions[v].x) - b.positions[v].x),
                      std::abs(double(a.positions[v].y) - b.positions[v].y),
                      std::abs(double(a.positions[v].z) - b.positions[v].z)});
  EXPECT_LE(worst, 1e-3) << what;
}

// Grids far larger than their active voxels (points binned finely): over 2^24 brick positions and 64
// per brick, the brick lookups and the vertices' bitmaps search the bricks instead of tabling them
// (the CPU's and the kernels'). A small grid's voxels moved by whole bricks into a 3100 x 2100 x 4100
// grid mesh to the small grid's mesh: occupancy (smooth and cubes) and a level set with its inside.
std::vector<std::pair<SparseGrid, SparseGrid>> huge_sparse_pairs() {
  GridSpec spec = unit_spec(40);
  spec.origin = {3000, 2000, 4000};  // (world places of the size the big grid's are)
  auto sphere = [](double x, double y, double z) {
    return std::sqrt((x - 3019.3) * (x - 3019.3) + (y - 2021.1) * (y - 2021.1) + (z - 4018.7) * (z - 4018.7)) - 11.2;
  };
  std::mt19937 rng(5);
  const SparseGrid occ = occupancy(spec, [&](int i, int j, int k) {
    return sphere(3000 + i + 0.5, 2000 + j + 0.5, 4000 + k + 0.5) < 0 || rng() % 400 == 0;
  });
  const SparseGrid band = level_set(spec, sphere, 2.5);
  const SparseGrid ball =
      occupancy(spec, [&](int i, int j, int k) { return sphere(3000 + i + 0.5, 2000 + j + 0.5, 4000 + k + 0.5) < 0; });
  const Int3 dims = {3100, 2100, 4100}, shift = {3000, 2000, 4000};
  return {{occ, shifted_copy(occ, dims, shift)},
          {band, shifted_copy(band, dims, shift)},
          {ball, shifted_copy(ball, dims, shift)}};
}

TEST(IsosurfaceGpu, EqualsTheCpuBitForBit) {
  const GpuInfo info = query_gpu();
  if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  for (unsigned seed = 1; seed <= 4; ++seed) {
    std::mt19937 rng(seed);
    const GridSpec spec = unit_spec(37);
    const SparseGrid g = occupancy(spec, [&](int, int, int) { return rng() % 100 < 20 + 15 * seed; });
    expect_same_mesh(gpu_grid_to_mesh(g, {0.0f, true}, nullptr, 0), grid_to_mesh(g, {0.0f, true}),
                     "occupancy " + std::to_string(seed));
    expect_same_mesh(gpu_grid_to_mesh(g, {0.0f, false}, nullptr, 0), grid_to_mesh(g, {0.0f, false}), "cubes");
  }
  const GridSpec spec = unit_spec(64);
  const SparseGrid sphere = level_set(
      spec,
      [](double x, double y, double z) {
        return std::sqrt((x - 30) * (x - 30) + (y - 33.3) * (y - 33.3) + (z - 31.7) * (z - 31.7)) - 21.1;
      },
      3.0);
  for (float iso : {0.0f, -0.7f, 1.2f})
    expect_same_mesh(gpu_grid_to_mesh(sphere, {iso, true}, nullptr, 0), grid_to_mesh(sphere, {iso, true}), "sphere");
  // A level set signed off its band by a solid (holes closed): the bunny.
  MeshLoadResult bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply"));
  CpuVoxelizer cpu;
  cpu.set_mesh(bunny.mesh);
  GridOptions go;
  go.resolution = 96;
  const GridSpec bs = make_grid_spec(bunny.mesh.bounds(), go);
  VoxelizeOptions vo;
  vo.band = 3;
  const std::vector<SparseGrid> grids = cpu.voxelize(bs, vo, parse_target_list("sdf,solid"));
  ASSERT_FALSE(grids[1].runs.empty());  // the solid's full bricks as runs, as the voxelizers give them
  SparseGrid expanded = grids[1];
  expanded.expand_runs();
  const Mesh gm = gpu_grid_to_mesh(grids[0], {0.0f, true}, &grids[1], 0);
  expect_same_mesh(gm, grid_to_mesh(grids[0], {0.0f, true}, &expanded), "bunny");
  expect_closed_manifold(gm, "bunny on the GPU");
  // The kernels walk the CPU's bricks with its functions; checked against every cell's pattern too:
  // balls with full interior bricks (skipped, so the bricks' sort ends with "none"), grids of sizes
  // off a multiple of 8, and a few voxels scattered over a large grid (wide keys).
  for (int n : {41, 50, 64}) {
    const SparseGrid ball = occupancy(unit_spec(n), [&](int i, int j, int k) {
      return (i - 20) * (i - 20) + (j - 22) * (j - 22) + (k - 19) * (k - 19) < 18 * 18;
    });
    const std::string at = "ball " + std::to_string(n);
    expect_same_mesh(gpu_grid_to_mesh(ball, {0.0f, true}, nullptr, 0), every_cell_mesh(ball, 0.0f, nullptr), at);
    const SparseGrid shell = level_set(
        unit_spec(n), [](double x, double y, double z) { return std::sqrt(x * x + y * y + z * z) - 30.3; }, 2.0);
    const SparseGrid solid = occupancy(unit_spec(n), [](int i, int j, int k) {
      return std::sqrt((i + 0.5) * (i + 0.5) + (j + 0.5) * (j + 0.5) + (k + 0.5) * (k + 0.5)) < 30.3;
    });
    expect_same_mesh(gpu_grid_to_mesh(shell, {0.25f, true}, &solid, 0), every_cell_mesh(shell, 0.25f, &solid),
                     "shell with its inside " + at);
  }
  const SparseGrid scattered = occupancy(unit_spec(300), [](int i, int j, int k) {
    return (uint32_t(i) * 73856093u ^ uint32_t(j) * 19349663u ^ uint32_t(k) * 83492791u) % 50021u == 0;
  });
  ASSERT_GT(scattered.keys.size(), 100u);
  expect_same_mesh(gpu_grid_to_mesh(scattered, {0.0f, true}, nullptr, 0), grid_to_mesh(scattered, {0.0f, true}),
                   "scattered");
  // Huge sparse grids (bricks searched, not tabled: HugeSparseGridsMeshAsTheirSmallCopies).
  const auto pairs = huge_sparse_pairs();
  expect_same_mesh(gpu_grid_to_mesh(pairs[0].second, {0.0f, true}, nullptr, 0),
                   grid_to_mesh(pairs[0].second, {0.0f, true}), "huge sparse occupancy");
  expect_same_mesh(gpu_grid_to_mesh(pairs[1].second, {0.3f, true}, &pairs[2].second, 0),
                   grid_to_mesh(pairs[1].second, {0.3f, true}, &pairs[2].second), "huge sparse level set");
  // Empty grids.
  const SparseGrid none = occupancy(unit_spec(9), [](int, int, int) { return false; });
  EXPECT_EQ(gpu_grid_to_mesh(none, {0.0f, true}, nullptr, 0).num_triangles(), 0u);
}

TEST(Isosurface, HugeSparseGridsMeshAsTheirSmallCopies) {
  const auto pairs = huge_sparse_pairs();
  const SparseGrid &occ = pairs[0].first, &big_occ = pairs[0].second;
  const SparseGrid &band = pairs[1].first, &big_band = pairs[1].second;
  const SparseGrid &ball = pairs[2].first, &big_ball = pairs[2].second;
  ASSERT_GT(IsoKeys::make(big_occ.spec.dims.x, big_occ.spec.dims.y, big_occ.spec.dims.z).bricks(), uint64_t(1) << 24);
  expect_same_mesh_moved(grid_to_mesh(big_occ, {0.0f, true}), grid_to_mesh(occ, {0.0f, true}), "occupancy");
  expect_same_mesh_moved(grid_to_mesh(big_occ, {0.0f, false}), grid_to_mesh(occ, {0.0f, false}), "cubes");
  expect_same_mesh_moved(grid_to_mesh(big_band, {0.3f, true}, &big_ball), grid_to_mesh(band, {0.3f, true}, &ball),
                         "level set");
}

// The GPU's marching cubes keeps to its memory budget: refused before the grid goes up when the
// grid and its bricks do not fit, after counting when the triangles do not, the CPU's mesh when they
// fit; the command line refuses with -d gpu (exit 5, no output).
TEST(IsosurfaceGpu, KeepsToItsMemoryBudget) {
  const GpuInfo info = query_gpu();
  if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  const SparseGrid sphere = level_set(
      unit_spec(64),
      [](double x, double y, double z) {
        return std::sqrt((x - 30) * (x - 30) + (y - 33.3) * (y - 33.3) + (z - 31.7) * (z - 31.7)) - 21.1;
      },
      3.0);
  auto refused = [&](uint64_t budget) {
    try {
      gpu_grid_to_mesh(sphere, {0.0f, true}, nullptr, 0, nullptr, budget);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kResource);
      EXPECT_NE(std::string(e.what()).find("--gpu-memory"), std::string::npos) << e.what();
      return true;
    }
    return false;
  };
  const uint64_t nb = sphere.keys.size();
  const uint64_t grid_and_bricks = nb * 80 + 4 * sphere.active_voxels() + sizeof(McTable) + (1 << 20) + 256 * nb;
  EXPECT_TRUE(refused(4096));
  EXPECT_TRUE(refused(grid_and_bricks - 1));
  const Mesh cpu = grid_to_mesh(sphere, {0.0f, true});
  ASSERT_GT(cpu.num_triangles(), 5000u);
  EXPECT_TRUE(refused(grid_and_bricks));  // the grid and its bricks fit, the triangles do not
  expect_same_mesh(
      gpu_grid_to_mesh(sphere, {0.0f, true}, nullptr, 0, nullptr, grid_and_bricks + 1000 * cpu.num_triangles()), cpu,
      "within the budget");

  test::TempDir dir;
  const std::string bunny = test::data_path("meshes/stanford_bunny.ply");
  test::RunResult r =
      test::run_voxtile({"voxelize", bunny, "-o", dir.file("b.vdb"), "-r", "64", "-t", "sdf", "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"mesh", dir.file("b.vdb"), "-o", dir.file("x.ply"), "-d", "gpu", "--gpu-memory", "64K"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find(dir.file("b.vdb")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gpu-memory"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("x.ply")));
  // Under auto, a grid that one thread would take long to mesh waits for the GPU; marching cubes over
  // the budget then runs on the CPU, with a warning: the same bytes.
  r = test::run_voxtile({"voxelize", bunny, "-o", dir.file("occ.vdb"), "-r", "768", "-t", "binary", "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_voxtile({"mesh", dir.file("occ.vdb"), "-o", dir.file("auto.ply"), "-d", "auto", "--threads", "1",
                         "--gpu-memory", "2M", "-v"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("waiting for the GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gpu-memory); meshing on the CPU"), std::string::npos) << r.err;
  r = test::run_voxtile({"mesh", dir.file("occ.vdb"), "-o", dir.file("cpu.ply"), "-d", "cpu", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::read_file(dir.file("auto.ply")) == test::read_file(dir.file("cpu.ply")));
}

}  // namespace
}  // namespace voxtile
