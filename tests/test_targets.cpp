// Targets and blend modes: parsing, the shaders' encodings, every blend against an independent
// per-voxel reference, several targets from one binning, and their outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "core/meshgen.h"
#include "core/voxelize.h"
#include "io/mesh_reader.h"
#include "io/vdb.h"
#include "io/writers.h"
#include "tests/golden_cases.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using Key = std::tuple<int, int, int>;

TEST(Targets, ParsesListsAndRejectsBadOnes) {
  const std::vector<TargetSpec> t = parse_target_list("binary,count,distance:max,normal:add,id");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].blend, Blend::kOr);
  EXPECT_EQ(t[1].blend, Blend::kAdd);
  EXPECT_EQ(t[2].target, Target::kDistance);
  EXPECT_EQ(t[2].blend, Blend::kMax);
  EXPECT_EQ(t[3].blend, Blend::kAdd);
  EXPECT_EQ(t[4].blend, Blend::kMin);
  EXPECT_EQ(parse_target_spec("normal").blend, Blend::kMax);
  EXPECT_EQ(target_spec_name(t[2]), "distance_max");
  EXPECT_EQ(target_spec_name(t[4]), "id");
  for (const char* bad : {"", "colour", "count:max", "id:add", "binary:add", "normal:min", "count,count", "count,",
                          ",count", "distance:", "distance:sum"}) {
    try {
      parse_target_list(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
    }
  }
}

// Angle between two unit vectors (accurate for small angles).
double angle(const Vec3f& a, const Vec3f& b) {
  const double c[3] = {double(a.y) * b.z - double(a.z) * b.y, double(a.z) * b.x - double(a.x) * b.z,
                       double(a.x) * b.y - double(a.y) * b.x};
  const double s = std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
  const double d = double(a.x) * b.x + double(a.y) * b.y + double(a.z) * b.z;
  return std::atan2(s, d);
}

TEST(Targets, PackedNormalsRoundTripWithinTheQuantization) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  std::set<uint32_t> codes;
  for (int n = 0; n < 20000; ++n) {
    Vec3f v{g(rng), g(rng), g(rng)};
    if (n < 6) v = {n == 0 ? 1.0f : (n == 1 ? -1.0f : 0.0f), n == 2 ? 1.0f : (n == 3 ? -1.0f : 0.0f),
                    n == 4 ? 1.0f : (n == 5 ? -1.0f : 0.0f)};
    const float len = std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
    v = {v.x / len, v.y / len, v.z / len};
    const uint32_t code = pack_normal(v);
    ASSERT_GE(code, 2u);
    codes.insert(code);
    const Vec3f u = unpack_normal(code);
    EXPECT_LT(angle(u, v), 2e-4) << v.x << " " << v.y << " " << v.z;
    EXPECT_NEAR(double(u.x) * u.x + double(u.y) * u.y + double(u.z) * u.z, 1.0, 1e-6);
    if (n < 6) {
      EXPECT_EQ(pack_normal(u), code);  // axes are exact
    }
  }
  EXPECT_GT(codes.size(), 19900u);
  EXPECT_EQ(pack_normal({0, 0, 0}), 1u);
  const Vec3f z = unpack_normal(1);
  EXPECT_EQ(z.x, 0.0f);
  EXPECT_EQ(z.y, 0.0f);
  EXPECT_EQ(z.z, 0.0f);
}

// Per voxel: the triangles whose voxelization contains it (direct enumeration, no tiles).
std::map<Key, std::vector<uint32_t>> fragments(const Mesh& mesh, const GridSpec& spec, VoxelMode mode) {
  std::map<Key, std::vector<uint32_t>> m;
  test::for_each_direct_fragment(mesh, spec, mode, [&](size_t t, const Vec3f*, int i, int j, int k) {
    m[{i, j, k}].push_back(uint32_t(t));
  });
  return m;
}

// Unit normal of a world-space triangle in double precision (zero when degenerate).
std::array<double, 3> normal_double(const Mesh& mesh, size_t t) {
  const Vec3f a = mesh.vertex(t, 0), b = mesh.vertex(t, 1), c = mesh.vertex(t, 2);
  const double e0[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
  const double e1[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
  const double n[3] = {e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0]};
  const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (len == 0) return {0, 0, 0};
  return {n[0] / len, n[1] / len, n[2] / len};
}

void expect_blends_match_reference(const Mesh& mesh, const GridSpec& spec, const std::string& what) {
  const Vec3f vs{float(spec.voxel_size.x), float(spec.voxel_size.y), float(spec.voxel_size.z)};
  const std::vector<Vec3f> g = to_grid_space(mesh, spec);
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    const std::string w = what + " " + mode_name(mode) + " " + spec.describe();
    const auto frags = fragments(mesh, spec, mode);
    VoxelizeOptions o;
    o.mode = mode;
    const std::vector<TargetSpec> specs = test::all_target_specs();
    const std::vector<SparseGrid> grids = voxelize_cpu_targets(mesh, spec, o, specs);
    for (size_t s = 0; s < specs.size(); ++s) {
      const SparseGrid& grid = grids[s];
      grid.validate();
      ASSERT_EQ(grid.active_voxels(), frags.size()) << w << " " << target_spec_name(specs[s]);
      grid.for_each_active([&](int i, int j, int k, size_t, int, uint64_t at) {
        const std::vector<uint32_t>& tris = frags.at({i, j, k});
        auto tri_verts = [&](uint32_t t, Vec3f v[3]) {
          for (int q = 0; q < 3; ++q) v[q] = g[mesh.indices[3 * t + q]];
        };
        const TargetSpec& ts = specs[s];
        if (ts.target == Target::kId) {
          const uint32_t want = ts.blend == Blend::kMin ? *std::min_element(tris.begin(), tris.end())
                                                        : *std::max_element(tris.begin(), tris.end());
          ASSERT_EQ(grid.ivalues[at], int32_t(want)) << w;
        } else if (ts.target == Target::kDistance) {
          double sum = 0;
          float lo = INFINITY, hi = 0;
          for (uint32_t t : tris) {
            Vec3f v[3];
            tri_verts(t, v);
            const float d = voxel_distance(v, i, j, k, vs);
            lo = std::min(lo, d);
            hi = std::max(hi, d);
            sum += d;
          }
          const float got = grid.fvalues[at];
          const float want = ts.blend == Blend::kMin ? lo : (ts.blend == Blend::kMax ? hi : float(sum));
          if (ts.blend == Blend::kAdd) {
            ASSERT_NEAR(got, sum, 1e-6 * sum + 1e-9 * tris.size()) << w;
          } else {
            ASSERT_EQ(got, want) << w;
          }
        } else if (ts.target == Target::kNormal) {
          const float* got = &grid.fvalues[at * 3];
          if (ts.blend == Blend::kAdd) {
            double sum[3] = {0, 0, 0};
            for (uint32_t t : tris) {
              const auto n = normal_double(mesh, t);
              for (int c = 0; c < 3; ++c) sum[c] += n[c];
            }
            for (int c = 0; c < 3; ++c) ASSERT_NEAR(got[c], sum[c], 2e-5 * tris.size()) << w;
          } else {
            // One of the voxel's triangles' normals, to the packing's precision.
            bool found = false;
            for (uint32_t t : tris) {
              const auto n = normal_double(mesh, t);
              found = found || angle(Vec3f{float(n[0]), float(n[1]), float(n[2])}, Vec3f{got[0], got[1], got[2]}) < 3e-4;
              found = found || (n[0] == 0 && n[1] == 0 && n[2] == 0 && got[0] == 0 && got[1] == 0 && got[2] == 0);
            }
            ASSERT_TRUE(found) << w << " voxel " << i << "," << j << "," << k;
          }
        } else if (ts.target == Target::kCount) {
          ASSERT_EQ(grid.ivalues[at], int32_t(tris.size())) << w;
        }
      });
    }
  }
}

TEST(Targets, EveryBlendMatchesAnIndependentReference) {
  Mesh soup = test::random_soup(500, 10.0f, 1.5f, 17);
  test::append_mesh(soup, test::single_triangle({1, 1, 1}, {1, 1, 1}, {4, 4, 4}));  // degenerate: zero normal
  for (int res : {7, 40}) {
    GridOptions go;
    go.resolution = res;
    expect_blends_match_reference(soup, make_grid_spec(soup.bounds(), go), "soup");
  }
  GridOptions go;
  go.dims = Int3{37, 50, 23};
  expect_blends_match_reference(soup, make_grid_spec(soup.bounds(), go), "soup anisotropic");
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  go = GridOptions{};
  go.resolution = 64;
  expect_blends_match_reference(bunny, make_grid_spec(bunny.bounds(), go), "bunny");
}

TEST(Targets, BoxCornersSumAndPickNormals) {
  const Mesh box = make_box_mesh(0, 0, 0, 4, 4, 4);
  GridOptions go;
  go.voxel_size = Vec3d{1, 1, 1};
  const GridSpec spec = make_grid_spec(box.bounds(), go);
  VoxelizeOptions o;
  const std::vector<SparseGrid> g =
      voxelize_cpu_targets(box, spec, o, parse_target_list("distance:add,normal:add,normal,distance:max"));
  auto at = [](const SparseGrid& s, int i, int j, int k, int c) {
    const int off = brick_offset(i & 7, j & 7, k & 7);
    return s.value(0, off, c);
  };
  ASSERT_EQ(g[0].num_bricks(), 1u);
  EXPECT_NEAR(at(g[0], 0, 0, 0, 0), 3.0, 1e-6);  // 6 triangles at distance 0.5
  for (int c = 0; c < 3; ++c) EXPECT_EQ(std::fabs(at(g[1], 0, 0, 0, c)), 2.0);  // 2 triangles per face
  EXPECT_EQ(std::fabs(at(g[2], 1, 1, 0, 2)), 1.0);  // face z = 0 only: its normal, exactly
  EXPECT_EQ(at(g[2], 1, 1, 0, 0), 0.0);
  EXPECT_EQ(at(g[3], 0, 0, 0, 0), 0.5);
  EXPECT_EQ(g[1].value_type, ValueType::kVec3f);
  EXPECT_EQ(g[1].name, "normal_add");
  EXPECT_EQ(g[2].name, "normal");
}

TEST(Targets, SeveralTargetsEqualSeparateRuns) {
  const Mesh soup = test::random_soup(2000, 10.0f, 1.25f, 23);
  GridOptions go;
  go.resolution = 90;
  const GridSpec spec = make_grid_spec(soup.bounds(), go);
  VoxelizeOptions o;
  o.mode = VoxelMode::kThin;
  const std::vector<TargetSpec> specs = test::all_target_specs();
  VoxelizeStats st;
  const std::vector<SparseGrid> all = voxelize_cpu_targets(soup, spec, o, specs, &st);
  ASSERT_EQ(all.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    VoxelizeOptions one = o;
    one.target = specs[i].target;
    one.blend = specs[i].blend;
    EXPECT_EQ(all[i].checksum(), voxelize_cpu(soup, spec, one).checksum()) << target_spec_name(specs[i]);
    EXPECT_EQ(all[i].name, target_spec_name(specs[i]));
  }
  int bins = 0;
  for (const auto& [name, ms] : st.stage_ms) bins += name == "bin";
  EXPECT_EQ(bins, 1);
}

SparseGrid normal_grid() {
  const Mesh sphere = make_uv_sphere(0, 0, 0, 1.0f, 12, 24);
  GridOptions go;
  go.resolution = 20;
  VoxelizeOptions o;
  o.target = Target::kNormal;
  return voxelize_cpu(sphere, make_grid_spec(sphere.bounds(), go), o);
}

TEST(Targets, VectorGridsRoundTripThroughVdbAndFillNpyAndPly) {
  test::TempDir dir;
  const SparseGrid g = normal_grid();
  ASSERT_EQ(g.value_type, ValueType::kVec3f);
  write_vdb(g, dir.file("n.vdb"), {});
  const SparseGrid back = read_vdb(dir.file("n.vdb"));
  EXPECT_EQ(back.value_type, ValueType::kVec3f);
  EXPECT_EQ(back.checksum(), g.checksum());
  WriteOptions wo;
  write_grid(g, dir.file("n.npy"), OutputFormat::kNpy, wo);
  const std::string npy = test::read_file(dir.file("n.npy"));
  EXPECT_NE(npy.find("'shape': (20, 20, 20, 3)"), std::string::npos);
  const size_t header = size_t(uint8_t(npy[8])) + 256 * size_t(uint8_t(npy[9])) + 10;
  EXPECT_EQ(npy.size(), header + 20 * 20 * 20 * 12);
  write_grid(g, dir.file("n.ply"), OutputFormat::kPly, wo);
  const std::string ply = test::read_file(dir.file("n.ply"));
  EXPECT_NE(ply.find("property float nx\nproperty float ny\nproperty float nz\nend_header"), std::string::npos);
  EXPECT_EQ(ply.size() - (ply.find("end_header\n") + 11), g.active_voxels() * 24);
}

TEST(Targets, SeveralGridsGoToOneVdbOrPlyAndNotToDenseFiles) {
  test::TempDir dir;
  const Mesh sphere = make_uv_sphere(0, 0, 0, 1.0f, 12, 24);
  GridOptions go;
  go.resolution = 20;
  const std::vector<SparseGrid> grids = voxelize_cpu_targets(
      sphere, make_grid_spec(sphere.bounds(), go), VoxelizeOptions{}, parse_target_list("binary,count,normal,distance:add"));
  WriteOptions wo;
  write_grids(grids, dir.file("m.vdb"), OutputFormat::kVdb, wo);
  const std::vector<std::string> lines = describe_vdb(dir.file("m.vdb"));
  ASSERT_EQ(lines.size(), 4u);
  // OpenVDB lists the grids of a file by name.
  EXPECT_NE(lines[0].find("\"binary\" type=mask"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"count\" type=int32"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("\"distance_add\" type=float"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("\"normal\" type=vec3s"), std::string::npos) << lines[3];
  for (size_t i = 0; i < grids.size(); ++i) EXPECT_EQ(read_vdb(dir.file("m.vdb"), grids[i].name).checksum(), grids[i].checksum());
  write_grids(grids, dir.file("m.ply"), OutputFormat::kPly, wo);
  const std::string ply = test::read_file(dir.file("m.ply"));
  EXPECT_NE(ply.find("property uchar binary\nproperty int count\nproperty float nx\nproperty float ny\nproperty float "
                     "nz\nproperty float distance_add\nend_header"),
            std::string::npos);
  EXPECT_EQ(ply.size() - (ply.find("end_header\n") + 11), grids[0].active_voxels() * (12 + 1 + 4 + 12 + 4));
  EXPECT_THROW(write_grids(grids, dir.file("m.npy"), OutputFormat::kNpy, wo), Error);
  EXPECT_FALSE(test::file_exists(dir.file("m.npy")));
}

TEST(Targets, CliWritesSeveralTargetsAndRejectsBadLists) {
  test::TempDir dir;
  const std::string duck = test::data_path("formats/gltf/Duck.glb");
  auto r = test::run_voxtile({"voxelize", duck, "-o", dir.file("d.vdb"), "-r", "40", "-t", "binary,count,normal:add",
                              "-d", "cpu", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\":\"normal_add\",\"type\":\"vec3f\""), std::string::npos) << r.out;
  auto info = test::run_voxtile({"info", dir.file("d.vdb")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("grid \"binary\" type=mask"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("grid \"count\" type=int32"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("grid \"normal_add\" type=vec3s"), std::string::npos) << info.out;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"voxelize", duck, "-o", dir.file("x.npy"), "-r", "40", "-t", "count,id"},
           {"voxelize", duck, "-o", dir.file("x.vdb"), "-r", "40", "-t", "count:max"},
           {"voxelize", duck, "-o", dir.file("x.vdb"), "-r", "40", "-t", "count,,id"}}) {
    auto bad = test::run_voxtile(args);
    EXPECT_EQ(bad.exit_code, 2) << args[7];
    EXPECT_NE(bad.err.find("error:"), std::string::npos) << bad.err;
    EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
    EXPECT_FALSE(test::file_exists(dir.file("x.npy")) || test::file_exists(dir.file("x.vdb")));
  }
}

}  // namespace
}  // namespace voxtile
