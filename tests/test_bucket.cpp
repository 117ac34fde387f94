// A-buffer bucketing: the CPU reference against a direct enumeration, its attributes, the .npz
// file, the fragment-count grid, the CLI; the GPU against the CPU (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

#include "core/bucket.h"
#include "core/meshgen.h"
#include "io/mesh_reader.h"
#include "io/npz.h"
#include "kernels/api.h"
#include "tests/helpers.h"

namespace voxtile {
namespace {

using Key = std::tuple<int, int, int>;

// Reference lists: every fragment of the direct enumeration, triangles ascending per voxel.
std::map<Key, std::vector<int32_t>> direct_lists(const Mesh& mesh, const GridSpec& spec, VoxelMode mode) {
  std::map<Key, std::vector<int32_t>> m;
  test::for_each_direct_fragment(mesh, spec, mode, [&](size_t t, const Vec3f*, int i, int j, int k) {
    m[{i, j, k}].push_back(int32_t(t));
  });
  return m;
}

void expect_matches_direct(const Mesh& mesh, const GridSpec& spec, const std::string& what) {
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    const std::string w = what + " " + mode_name(mode) + " " + spec.describe();
    BucketOptions o;
    o.mode = mode;
    o.attrs = kAttrBary | kAttrNormal | kAttrMaterial;
    const Buckets b = bucket_cpu(mesh, spec, o);
    const auto want = direct_lists(mesh, spec, mode);
    ASSERT_EQ(b.num_voxels(), want.size()) << w;
    ASSERT_EQ(b.offsets.size(), b.num_voxels() + 1) << w;
    ASSERT_EQ(b.offsets.front(), 0) << w;
    ASSERT_EQ(size_t(b.offsets.back()), b.num_fragments()) << w;
    ASSERT_EQ(b.bary.size(), 3 * b.num_fragments());
    size_t v = 0;
    uint64_t last = 0;
    for (const auto& [key, tris] : want) {  // std::map order is (i, j, k): the documented voxel order
      const auto [i, j, k] = key;
      ASSERT_EQ(b.ijk[3 * v], i) << w;
      ASSERT_EQ(b.ijk[3 * v + 1], j) << w;
      ASSERT_EQ(b.ijk[3 * v + 2], k) << w;
      const uint64_t lin = voxel_linear_index(i, j, k, spec.dims);
      ASSERT_TRUE(v == 0 || lin > last);
      last = lin;
      const std::vector<int32_t> got(b.triangle.begin() + b.offsets[v], b.triangle.begin() + b.offsets[v + 1]);
      ASSERT_EQ(got, tris) << w << " voxel " << i << "," << j << "," << k;
      for (int64_t f = b.offsets[v]; f < b.offsets[v + 1]; ++f) {
        const float* bc = &b.bary[3 * f];
        ASSERT_NEAR(double(bc[0]) + bc[1] + bc[2], 1.0, 1e-4) << w;
        const float* n = &b.normal[3 * f];
        ASSERT_NEAR(double(n[0]) * n[0] + double(n[1]) * n[1] + double(n[2]) * n[2], 1.0, 1e-5) << w;
        ASSERT_EQ(b.material[f], int32_t(mesh.material_ids.empty() ? 0 : mesh.material_ids[b.triangle[f]])) << w;
        // The barycentric point lies on the triangle's plane, within a voxel diagonal of the centre.
        Vec3f p{0, 0, 0};
        for (int q = 0; q < 3; ++q) {
          const Vec3f c = mesh.vertex(size_t(b.triangle[f]), q);
          p = {p.x + bc[q] * c.x, p.y + bc[q] * c.y, p.z + bc[q] * c.z};
        }
        const Vec3d centre = spec.voxel_center(i, j, k);
        const double dx = (p.x - centre.x) / spec.voxel_size.x, dy = (p.y - centre.y) / spec.voxel_size.y,
                     dz = (p.z - centre.z) / spec.voxel_size.z;
        ASSERT_LT(std::sqrt(dx * dx + dy * dy + dz * dz), 1.8) << w;
      }
      ++v;
    }
    // Fragments per voxel are the count target, voxel for voxel.
    VoxelizeOptions vo;
    vo.mode = mode;
    vo.target = Target::kCount;
    EXPECT_EQ(b.count_grid().checksum(), voxelize_cpu(mesh, spec, vo).checksum()) << w;
  }
}

TEST(Bucket, CpuListsMatchADirectEnumeration) {
  Mesh soup = test::random_soup(400, 10.0f, 1.5f, 31);
  test::append_mesh(soup, test::random_soup(6, 10.0f, 12.0f, 32));  // large triangles
  for (int res : {1, 7, 40}) {
    GridOptions go;
    go.resolution = res;
    expect_matches_direct(soup, make_grid_spec(soup.bounds(), go), "soup");
  }
  GridOptions go;
  go.dims = Int3{37, 50, 23};
  expect_matches_direct(soup, make_grid_spec(soup.bounds(), go), "soup non-cubic");
  const Mesh duck = load_mesh(test::data_path("formats/gltf/Duck.glb")).mesh;
  ASSERT_FALSE(duck.normals.empty());
  go = GridOptions{};
  go.resolution = 48;
  expect_matches_direct(duck, make_grid_spec(duck.bounds(), go), "duck");
}

TEST(Bucket, EdgeCases) {
  // Empty: the mesh misses the grid.
  const Mesh box = make_box_mesh(0, 0, 0, 1, 1, 1);
  const Buckets empty = bucket_cpu(box, make_grid_spec(box.bounds(), test::grid_beside_unit_box()), BucketOptions{});
  EXPECT_EQ(empty.num_voxels(), 0u);
  ASSERT_EQ(empty.offsets.size(), 1u);
  EXPECT_EQ(empty.offsets[0], 0);
  // A mesh without triangles.
  const Buckets none = bucket_cpu(Mesh{}, make_grid_spec(box.bounds(), GridOptions{}), BucketOptions{});
  EXPECT_EQ(none.num_fragments(), 0u);
  EXPECT_EQ(none.offsets.size(), 1u);
  // One triangle covering the whole grid (a 16x16x4 grid of a 1x1x1 box): each column once or twice.
  const Mesh big = test::single_triangle({-1, -1, 0.37f}, {3, -1, 0.41f}, {-1, 3, 0.63f});
  GridOptions go;
  go.dims = Int3{16, 16, 4};
  go.bbox = test::make_bounds(0, 0, 0, 1, 1, 1);
  const GridSpec spec = make_grid_spec(big.bounds(), go);
  const Buckets b = bucket_cpu(big, spec, BucketOptions{});
  EXPECT_GE(b.num_voxels(), 256u);
  EXPECT_EQ(b.num_fragments(), b.num_voxels());
  expect_matches_direct(big, spec, "big triangle");
  // A degenerate (collinear) triangle is a segment: its voxels, barycentrics of points on it.
  Mesh seg = test::single_triangle({0.1f, 0.1f, 0.1f}, {0.5f, 0.5f, 0.5f}, {0.9f, 0.9f, 0.9f});
  go = GridOptions{};
  go.dims = Int3{10, 10, 10};
  go.bbox = test::make_bounds(0, 0, 0, 1, 1, 1);
  const Buckets s = bucket_cpu(seg, make_grid_spec(seg.bounds(), go), BucketOptions{});
  EXPECT_GE(s.num_voxels(), 8u);
  for (size_t f = 0; f < s.num_fragments(); ++f) {
    EXPECT_NEAR(double(s.bary[3 * f]) + s.bary[3 * f + 1] + s.bary[3 * f + 2], 1.0, 1e-6);
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(s.bary[3 * f + c] >= 0.0f && s.bary[3 * f + c] <= 1.0f);
  }
  // uv without texture coordinates is an input error.
  BucketOptions uv;
  uv.attrs = kAttrUv;
  EXPECT_THROW(bucket_cpu(box, make_grid_spec(box.bounds(), GridOptions{}), uv), Error);
  EXPECT_THROW(parse_bucket_attrs("bary,colour"), Error);
  EXPECT_EQ(parse_bucket_attrs(""), 0u);
  EXPECT_EQ(parse_bucket_attrs("uv,material"), uint32_t(kAttrUv | kAttrMaterial));
}

TEST(Bucket, UvsAreInterpolated) {
  const Mesh duck = load_mesh(test::data_path("formats/gltf/Duck.glb")).mesh;
  ASSERT_EQ(duck.uvs.size(), duck.positions.size());
  GridOptions go;
  go.resolution = 32;
  BucketOptions o;
  o.attrs = kAttrUv | kAttrBary;
  const Buckets b = bucket_cpu(duck, make_grid_spec(duck.bounds(), go), o);
  ASSERT_EQ(b.uv.size(), 2 * b.num_fragments());
  for (size_t f = 0; f < b.num_fragments(); f += 97) {
    const uint32_t t = uint32_t(b.triangle[f]);
    double u = 0, v = 0;
    for (int q = 0; q < 3; ++q) {
      u += double(b.bary[3 * f + q]) * duck.uvs[duck.indices[3 * t + q]].x;
      v += double(b.bary[3 * f + q]) * duck.uvs[duck.indices[3 * t + q]].y;
    }
    EXPECT_NEAR(b.uv[2 * f], u, 1e-5);
    EXPECT_NEAR(b.uv[2 * f + 1], v, 1e-5);
  }
}

// Minimal reader of our stored .npz: entry name -> .npy bytes.
std::map<std::string, std::string> read_npz(const std::string& bytes) {
  std::map<std::string, std::string> out;
  size_t p = 0;
  auto u16 = [&](size_t o) { return uint32_t(uint8_t(bytes[o])) | uint32_t(uint8_t(bytes[o + 1])) << 8; };
  auto u32 = [&](size_t o) { return u16(o) | u16(o + 2) << 16; };
  while (p + 30 <= bytes.size() && u32(p) == 0x04034b50) {
    const uint32_t size = u32(p + 18), name_len = u16(p + 26), extra = u16(p + 28);
    const std::string name = bytes.substr(p + 30, name_len);
    out[name] = bytes.substr(p + 30 + name_len + extra, size);
    p += 30 + name_len + extra + size;
  }
  return out;
}

TEST(Bucket, NpzHoldsTheArrays) {
  test::TempDir dir;
  const Mesh bunny = load_mesh(test::data_path("meshes/stanford_bunny.ply")).mesh;
  GridOptions go;
  go.resolution = 40;
  BucketOptions o;
  o.attrs = kAttrBary | kAttrMaterial;
  const Buckets b = bucket_cpu(bunny, make_grid_spec(bunny.bounds(), go), o);
  write_buckets_npz(b, dir.file("b.npz"));
  const auto arrays = read_npz(test::read_file(dir.file("b.npz")));
  for (const char* name : {"ijk.npy", "offsets.npy", "triangle.npy", "bary.npy", "material.npy", "dims.npy",
                           "voxel_size.npy", "origin.npy"})
    ASSERT_TRUE(arrays.count(name)) << name;
  EXPECT_FALSE(arrays.count("normal.npy"));
  auto payload = [&](const std::string& npy, const char* descr, const std::string& shape) {
    const size_t header = 10 + (uint8_t(npy[8]) | uint8_t(npy[9]) << 8);
    EXPECT_NE(npy.find(std::string("'descr': '") + descr + "'"), std::string::npos) << npy.substr(0, header);
    EXPECT_NE(npy.find("'shape': (" + shape + ")"), std::string::npos) << npy.substr(0, header);
    EXPECT_EQ(header % 64, 0u);
    return npy.substr(header);
  };
  const std::string n = std::to_string(b.num_voxels()), m = std::to_string(b.num_fragments());
  const std::string tri = payload(arrays.at("triangle.npy"), "<i4", m + ",");
  ASSERT_EQ(tri.size(), b.triangle.size() * 4);
  EXPECT_EQ(std::memcmp(tri.data(), b.triangle.data(), tri.size()), 0);
  const std::string offs = payload(arrays.at("offsets.npy"), "<i8", std::to_string(b.num_voxels() + 1) + ",");
  EXPECT_EQ(std::memcmp(offs.data(), b.offsets.data(), offs.size()), 0);
  payload(arrays.at("ijk.npy"), "<i4", n + ", 3");
  payload(arrays.at("bary.npy"), "<f4", m + ", 3");
  if (std::system("python3 -c 'import zipfile' 2>/dev/null") == 0) {
    const std::string cmd = "python3 -c \"import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
                            "sys.exit(z.testzip() is not None)\" " + dir.file("b.npz");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "python's zipfile rejects the .npz";
  }
}

TEST(Bucket, CliWritesNpzAndCountGridsAndFailsCleanly) {
  test::TempDir dir;
  const std::string duck = test::data_path("formats/gltf/Duck.glb");
  auto r = test::run_voxtile({"bucket", duck, "-o", dir.file("d.npz"), "-o", dir.file("d.vdb"), "-r", "48", "--attrs",
                              "bary,normal,uv,material", "-d", "cpu", "--stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"fragments\":"), std::string::npos);
  EXPECT_TRUE(test::file_exists(dir.file("d.npz")));
  auto info = test::run_voxtile({"info", dir.file("d.vdb")});
  EXPECT_NE(info.out.find("grid \"fragments\" type=int32"), std::string::npos) << info.out;
  const std::string box = test::data_path("formats/3mf/box.3mf");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"bucket", duck, "-o", dir.file("x.npz"), "--attrs", "bary,colour"},
           {"bucket", duck, "-o", dir.file("x.npz"), "-o", dir.file("x.abc")},
           {"bucket", box, "-o", dir.file("x.npz"), "--attrs", "uv", "-d", "cpu"},
           {"bucket", dir.file("missing.obj"), "-o", dir.file("x.npz"), "-d", "cpu"}}) {
    auto bad = test::run_voxtile(args);
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
    EXPECT_FALSE(test::file_exists(dir.file("x.npz")));
  }
  EXPECT_EQ(test::run_voxtile({"bucket", duck, "-o", dir.file("x.npz"), "--attrs", "bary,colour"}).exit_code, 2);
  EXPECT_EQ(test::run_voxtile({"bucket", box, "-o", dir.file("x.npz"), "--attrs", "uv", "-d", "cpu"}).exit_code, 3);
}

class GpuBucket : public ::testing::Test {
 protected:
  void SetUp() override {
    const GpuInfo info = query_gpu();
    if (!info.available) GTEST_SKIP() << "no GPU: " << info.reason;
  }
};

void expect_gpu_equals_cpu(const Mesh& mesh, const GridSpec& spec, const std::string& what, const GpuOptions& gopt = {}) {
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer(gopt);
  Voxelizer& gpu = *gpu_owner;
  for (VoxelMode mode : {VoxelMode::kThin, VoxelMode::kConservative}) {
    BucketOptions o;
    o.mode = mode;
    o.attrs = kAttrBary | kAttrNormal | kAttrMaterial | (mesh.uvs.empty() ? 0u : uint32_t(kAttrUv));
    const Buckets c = bucket_cpu(mesh, spec, o);
    gpu.set_mesh(mesh);
    const Buckets g = gpu.bucket(spec, o);
    const std::string w = what + " " + mode_name(mode) + " " + spec.describe();
    ASSERT_EQ(g.ijk, c.ijk) << w;
    ASSERT_EQ(g.offsets, c.offsets) << w;
    ASSERT_EQ(g.triangle, c.triangle) << w;
    ASSERT_EQ(g.bary, c.bary) << w;
    ASSERT_EQ(g.normal, c.normal) << w;
    ASSERT_EQ(g.uv, c.uv) << w;
    ASSERT_EQ(g.material, c.material) << w;
    ASSERT_EQ(g.checksum(), c.checksum()) << w;
  }
}

TEST_F(GpuBucket, EqualsTheCpuOnMeshesAndGrids) {
  for (const char* path : {"meshes/stanford_bunny.ply", "formats/gltf/Duck.glb", "formats/obj/spider.obj"}) {
    const Mesh m = load_mesh(test::data_path(path)).mesh;
    for (int res : {1, 7, 64, 100, 300}) {
      GridOptions go;
      go.resolution = res;
      expect_gpu_equals_cpu(m, make_grid_spec(m.bounds(), go), path);
    }
    GridOptions go;
    go.dims = Int3{37, 50, 23};
    expect_gpu_equals_cpu(m, make_grid_spec(m.bounds(), go), path);
  }
}

TEST_F(GpuBucket, EqualsTheCpuOnSoupsSlabsAndTheTwoPassSort) {
  Mesh soup = test::random_soup(20000, 100.0f, 2.0f, 41);
  test::append_mesh(soup, test::random_soup(40, 100.0f, 150.0f, 42));
  GridOptions go;
  go.resolution = 200;
  go.bbox = test::make_bounds(0, 0, 0, 100, 100, 100);
  const GridSpec spec = make_grid_spec(soup.bounds(), go);
  expect_gpu_equals_cpu(soup, spec, "soup");
  GpuOptions slabs;
  slabs.max_batch_pairs = 20000;  // many x-slabs, some split again
  expect_gpu_equals_cpu(soup, spec, "soup in slabs", slabs);
  GpuOptions two_pass;
  two_pass.two_pass_fragment_sort = true;
  expect_gpu_equals_cpu(soup, spec, "soup two-pass sort", two_pass);
}

TEST_F(GpuBucket, EdgeCases) {
  const Mesh big = test::single_triangle({-1, -1, 0.37f}, {3, -1, 0.41f}, {-1, 3, 0.63f});
  GridOptions go;
  go.dims = Int3{512, 512, 16};
  go.bbox = test::make_bounds(0, 0, 0, 1, 1, 1);
  expect_gpu_equals_cpu(big, make_grid_spec(big.bounds(), go), "one big triangle");
  const Mesh box = make_box_mesh(0, 0, 0, 1, 1, 1);
  const std::unique_ptr<Voxelizer> gpu_owner = make_gpu_voxelizer();
  Voxelizer& gpu = *gpu_owner;
  gpu.set_mesh(box);
  const Buckets e = gpu.bucket(make_grid_spec(box.bounds(), test::grid_beside_unit_box()), BucketOptions{});
  EXPECT_EQ(e.num_voxels(), 0u);
  ASSERT_EQ(e.offsets.size(), 1u);
  EXPECT_EQ(e.offsets[0], 0);
  const Mesh empty_mesh;
  gpu.set_mesh(empty_mesh);
  const Buckets none = gpu.bucket(make_grid_spec(box.bounds(), GridOptions{}), BucketOptions{});
  EXPECT_EQ(none.num_fragments(), 0u);
  EXPECT_EQ(none.offsets.size(), 1u);
  const Mesh seg = test::single_triangle({0.1f, 0.1f, 0.1f}, {0.5f, 0.5f, 0.5f}, {0.9f, 0.9f, 0.9f});
  go.dims = Int3{10, 10, 10};
  expect_gpu_equals_cpu(seg, make_grid_spec(seg.bounds(), go), "degenerate");
}


// Slivers: long triangles 0.4 to 4e-6 voxels wide at random orientations. The point the barycentrics
// give must be the projection of the voxel centre onto the triangle's plane (computed here in long
// double, independently) to 0.01 voxel, plus what storing them as float32 allows; float normal
// equations missed it by up to 0.5 voxel diagonals and the old cut-off (sin^2 <= 1e-6) by several.
TEST(Bucket, BarycentricsAreAccurateOnSlivers) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Mesh slivers;
  for (int n = 0; n < 60; ++n) {
    const Vec3f a{u(rng), u(rng), u(rng)};
    Vec3f d{u(rng), u(rng), u(rng)};
    const float len = std::sqrt(vt_dot(d, d));
    d = {d.x / len, d.y / len, d.z / len};
    Vec3f side = cross(d, Vec3f{u(rng), u(rng), u(rng)});
    const float sl = std::sqrt(vt_dot(side, side));
    const float width = 0.03f * std::pow(10.0f, -float(n % 6));  // 1e-1 .. 1e-6 voxels at 64^3
    side = {side.x / sl * width, side.y / sl * width, side.z / sl * width};
    const Vec3f b{a.x + 1.5f * d.x, a.y + 1.5f * d.y, a.z + 1.5f * d.z};
    const Vec3f c{a.x + 0.7f * d.x + side.x, a.y + 0.7f * d.y + side.y, a.z + 0.7f * d.z + side.z};
    test::append_mesh(slivers, test::single_triangle(a, b, c));
  }
  slivers.sanitize();
  GridOptions go;
  go.dims = Int3{64, 64, 64};
  go.bbox = test::make_bounds(-2.6, -2.6, -2.6, 2.6, 2.6, 2.6);
  const GridSpec spec = make_grid_spec(slivers.bounds(), go);
  BucketOptions bo;
  bo.attrs = kAttrBary;
  const Buckets b = bucket_cpu(slivers, spec, bo);
  ASSERT_GT(b.num_fragments(), 1000u);
  const double vs = spec.voxel_size.x;
  double worst = 0;
  for (size_t v = 0; v < b.num_voxels(); ++v) {
    // In grid units (the triangle as the pipeline holds it: its corners rounded once to float grid
    // coordinates), scaled by the voxel size.
    const Vec3d c{(b.ijk[3 * v] + 0.5) * vs, (b.ijk[3 * v + 1] + 0.5) * vs, (b.ijk[3 * v + 2] + 0.5) * vs};
    for (int64_t f = b.offsets[v]; f < b.offsets[v + 1]; ++f) {
      const size_t t = size_t(b.triangle[size_t(f)]);
      long double p[3][3];
      for (int q = 0; q < 3; ++q) {
        const Vec3f& x = slivers.vertex(t, q);
        const Vec3f g = spec.world_to_grid({x.x, x.y, x.z});
        p[q][0] = (long double)g.x * vs;
        p[q][1] = (long double)g.y * vs;
        p[q][2] = (long double)g.z * vs;
      }
      const long double e0[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
      const long double e1[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
      const long double n[3] = {e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0]};
      const long double nn = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
      const long double cc[3] = {c.x, c.y, c.z};
      const long double h = ((cc[0] - p[0][0]) * n[0] + (cc[1] - p[0][1]) * n[1] + (cc[2] - p[0][2]) * n[2]) / nn;
      long double err2 = 0;
      for (int a = 0; a < 3; ++a) {
        const long double proj = cc[a] - h * n[a];
        const long double got = b.bary[3 * size_t(f)] * p[0][a] + b.bary[3 * size_t(f) + 1] * p[1][a] +
                                b.bary[3 * size_t(f) + 2] * p[2][a];
        err2 += (got - proj) * (got - proj);
      }
      // Storing them as float32 alone moves the point by up to an ulp of the largest coordinate
      // times the corners' distances: the allowance beyond 0.01 voxel.
      double bmax = 0, reach = 0;
      for (int q = 0; q < 3; ++q) {
        bmax = std::max(bmax, double(std::abs(b.bary[3 * size_t(f) + size_t(q)])));
        reach += double(std::sqrt((p[q][0] - cc[0]) * (p[q][0] - cc[0]) + (p[q][1] - cc[1]) * (p[q][1] - cc[1]) +
                                  (p[q][2] - cc[2]) * (p[q][2] - cc[2])));
      }
      const double allowed = 0.01 + 2.0 * std::ldexp(bmax, -23) * reach / vs;
      const double err = double(std::sqrt(err2)) / vs;
      EXPECT_LT(err, allowed) << "triangle " << t << ", largest coordinate " << bmax;
      worst = std::max(worst, err / allowed);
      EXPECT_NEAR(double(b.bary[3 * size_t(f)]) + b.bary[3 * size_t(f) + 1] + b.bary[3 * size_t(f) + 2], 1.0,
                  1e-3 * std::max(1.0, double(std::abs(b.bary[3 * size_t(f)]))));
    }
  }
  std::printf("worst distance from the projection: %.3g of the allowance over %zu fragments\n", worst, b.num_fragments());
}

}  // namespace
}  // namespace voxtile
